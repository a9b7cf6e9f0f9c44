"""ADL: an architecture definition language for neural machine translation.

    >>> import adl
    >>> program = adl.check("pos -> repeat(6, res_nd(mh_dot_self_att) -> res_nd(ffl)) -> norm",
    ...                     role="encoder")
    >>> f"{program.network.params:,}"       # at d_model=512
    '18,915,328'

The public API is what ``__all__`` lists below, and nothing else:

- Reading and checking: ``parse`` (text -> syntax tree), ``check`` (-> :class:`Program`,
  sizes and parameter counts, or :class:`ADLError` with every error), ``check_model``
  (an encoder and a decoder together), ``read_source``, ``parse_value``, ``hyper``.
- Building: ``build`` (files or text -> a PyTorch model carrying its :class:`ModelSpec`),
  ``build_from_spec`` (rebuild from a stored spec), :class:`ModelSpec`.
- Using a trained model: ``load_model`` (a run, a checkpoint or an ``adl export`` folder,
  or a list of them: an ensemble -> a :class:`~adl.runtime.decode.translator.Translator`
  with ``translate``, ``score`` and ``attention``; the runtime is imported on first use).
- Printing: ``to_text`` (canonical text of a tree), ``signature``.
- Variables: ``unused_variables`` (the given ``$variables`` that no checked file reads, as
  warnings with the nearest name that exists).
- The layer registry: ``REGISTRY``, :class:`Hyper`.
- Errors: :class:`ADLError` (problems with an ADL text, as :class:`Diagnostic` s),
  :class:`InputError` (an input a built model cannot take, e.g. longer than its
  ``learn_pos``), :class:`UserError` (their root, and the root of the runtime's errors).
- Limits: :mod:`adl.limits` states what the checker refuses (sizes, layers, memory...).

The runtime (training, decoding, scoring) is :mod:`adl.runtime`; it is imported only when
used, so ``import adl`` does not load torch.
"""

from .analysis.program import CheckedChain, Network, Node, Program
from .analysis.variables import unused_variables
from .api import check, hyper, parse, parse_value, read_source
from .errors import ADLError, Diagnostic, InputError, UserError
from .models import ModelSpec, build, build_from_spec, check_model
from .registry import REGISTRY, Hyper
from .syntax.printer import signature, to_text

__all__ = [
    "ADLError",
    "CheckedChain",
    "Diagnostic",
    "Hyper",
    "InputError",
    "ModelSpec",
    "Network",
    "Node",
    "Program",
    "REGISTRY",
    "UserError",
    "build",
    "build_from_spec",
    "check",
    "check_model",
    "hyper",
    "load_model",
    "parse",
    "parse_value",
    "read_source",
    "signature",
    "to_text",
    "unused_variables",
]


def __getattr__(name: str):
    """``adl.load_model``: the one door from the language to the runtime, opened on first
    use so that ``import adl`` loads neither torch nor the runtime. Nothing below this
    package imports it (the runtime imports the core's modules, not ``adl`` itself), so the
    import graph has no circle through it."""
    if name == "load_model":
        from .runtime.decode.translator import load_model

        return load_model
    raise AttributeError(f"module 'adl' has no attribute {name!r}")
