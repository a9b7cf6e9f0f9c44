"""The layer families of the language; importing this package registers every layer.

One module per family, each layer a rule function whose signature and docstring are its
definition (see :mod:`adl.registry`).
"""

from . import attention, basic, conv, fixed, gaussian, hard, position, recurrent, structure  # noqa: F401
