"""``python -m adl``: the same as the ``adl`` command."""

import sys

from .cli import main

sys.exit(main())
