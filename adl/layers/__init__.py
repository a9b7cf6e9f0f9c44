"""The layer families of the language; importing this package registers every layer.

One module per family, each layer a rule function whose signature and docstring are its
definition (see :mod:`adl.registry`). ``REGISTRY`` here is the registry with every built-in
layer in it: what the checker and the documentation look layers up in.
"""

from ..registry import REGISTRY
from . import attention, basic, conv, fixed, gaussian, hard, position, recurrent, structure  # noqa: F401

__all__ = ["REGISTRY"]
