"""The previous release's name of :mod:`adl.runtime.data.parallel` (``data/data.py`` said
nothing of what it holds), kept one release: importing it warns."""

import warnings

from adl.runtime.data.parallel import *  # noqa: F403
from adl.runtime.data.parallel import __all__  # noqa: F401

warnings.warn(
    "adl.runtime.data.data is renamed adl.runtime.data.parallel; the old name goes in the next "
    "release",
    DeprecationWarning,
    stacklevel=2,
)
