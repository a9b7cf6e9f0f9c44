"""What each process started by ``adl train --nproc N`` runs.

``adl train`` checks the command line and the configuration once, writes the effective
configuration to a file, and starts N copies of ``python -m adl.runtime.training.worker CONFIG OUT
[--resume]`` through torchrun. Each joins the process group and trains; rank 0 prints the
summary line. (``torchrun --nproc_per_node N --no-python adl train ARGS`` does the same by
hand, through the CLI.)
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from pathlib import Path

from adl.errors import report
from adl.runtime import config as cfgmod
from adl.runtime.errors import UserError
from adl.runtime.training.distributed import teardown
from adl.runtime.training.train import train


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    resume = "--resume" in args
    rest = [a for a in args if a != "--resume"]
    if len(rest) != 2:
        print(
            "usage: python -m adl.runtime.training.worker CONFIG.yaml OUT [--resume]",
            file=sys.stderr,
        )
        return 2
    path, out = Path(rest[0]), rest[1]
    try:
        config = cfgmod.from_dict(cfgmod.read_yaml(path) or {}, str(path))
        summary = train(config, out, resume=resume)
    except UserError as exc:
        print(report(exc, "train"), file=sys.stderr)
        return 1
    finally:
        teardown()
    if os.environ.get("RANK", "0") == "0":
        print(summary.describe(config.train.best_metric))
    return 130 if summary.interrupted else 0


if __name__ == "__main__":
    sys.exit(main())
