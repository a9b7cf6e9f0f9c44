"""ADL: an architecture definition language for neural machine translation.

    >>> import adl
    >>> program = adl.check("pos -> repeat(6, res_nd(mh_dot_self_att) -> res_nd(ffl)) -> norm",
    ...                     role="encoder")
    >>> f"{program.network.params:,}"       # at d_model=512
    '18,915,328'

The public API is what ``__all__`` lists below, and nothing else:

- Reading and checking: ``parse`` (text -> syntax tree), ``check`` (-> :class:`Program`,
  sizes and parameter counts, or :class:`ADLError` with every error), ``check_model``
  (an encoder and a decoder together), ``read_source``, ``parse_value``, ``check_hyper``.
- Building: ``build`` (files or text -> a PyTorch model carrying its :class:`ModelSpec`),
  ``build_from_spec`` (rebuild from a stored spec), :class:`ModelSpec`.
- Using a trained model: ``load_model`` (a run, a checkpoint or an ``adl export`` folder,
  or a list of them: an ensemble -> a :class:`~adl.runtime.decode.translator.Translator`
  with ``translate``, ``score`` and ``attention``; the runtime is imported on first use).
- Printing: ``to_text`` (canonical text of a tree), ``text_hash``.
- Renamed, kept one release with a DeprecationWarning: ``Network`` (now ``CheckedNetwork``),
  ``hyper`` (``check_hyper``), ``signature`` (``text_hash``).
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

import warnings

from .analysis.program import CheckedChain, CheckedNetwork, Node, Program
from .analysis.spacecheck import CheckedSpace
from .analysis.variables import unused_variables
from .api import check, check_hyper, check_space, parse, parse_value, read_source
from .errors import ADLError, Diagnostic, InputError, UserError
from .models import ModelSpec, build, build_from_spec, check_model
from .registry import REGISTRY, Hyper
from .syntax.printer import text_hash, to_text

__all__ = [
    "ADLError",
    "CheckedChain",
    "CheckedSpace",
    "CheckedNetwork",
    "Diagnostic",
    "Hyper",
    "InputError",
    "ModelSpec",
    "Node",
    "Program",
    "REGISTRY",
    "UserError",
    "build",
    "build_from_spec",
    "check",
    "check_model",
    "check_space",
    "check_hyper",
    "load_model",
    "parse",
    "parse_value",
    "read_source",
    "text_hash",
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
    if name in DEPRECATED:
        new = DEPRECATED[name]
        warnings.warn(
            f"adl.{name} is deprecated and goes in the next release: use adl.{new}",
            DeprecationWarning,
            stacklevel=2,
        )
        return globals()[new]
    raise AttributeError(f"module 'adl' has no attribute {name!r}")


# Names renamed for clarity, kept one release (docs/architecture.md, "Renamed names, kept one
# release", lists these and the runtime's): the old name warns.
DEPRECATED = {
    "Network": "CheckedNetwork",  # a checked network; adl.nn.Network is the PyTorch module
    "hyper": "check_hyper",  # it validates and returns a Hyper
    "signature": "text_hash",  # a hash of the canonical text, not a function signature
}
