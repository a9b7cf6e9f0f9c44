"""``adl average RUN --last N | --best N | --steps S,S,... [--out FILE]``: average
checkpoints' weights.

Average the last or the best N step checkpoints of a run (best by the run's
train.best_metric), or those of the given steps, into one checkpoint.
"""

from __future__ import annotations

import argparse

HELP = "average the weights of a run's checkpoints"


def arguments(p: argparse.ArgumentParser) -> None:
    """The arguments of ``adl average``."""
    p.add_argument("run_dir", metavar="RUN", help="a run directory written by adl train")
    which = p.add_mutually_exclusive_group(required=True)
    which.add_argument("--last", type=int, metavar="N", help="the N newest checkpoints")
    which.add_argument("--best", type=int, metavar="N", help="the N best checkpoints")
    which.add_argument(
        "--steps", type=_steps, metavar="S,S,...", help="the checkpoints of these steps"
    )
    p.add_argument(
        "--out", metavar="FILE", help="where to write it (default: RUN/checkpoints/average.pt)"
    )


def _steps(text: str) -> list[int]:
    try:
        return [int(s.replace("_", "")) for s in text.split(",") if s.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected step numbers, e.g. 1800,2000: {text}") from None


def run(args: argparse.Namespace) -> int:
    from adl import runtime

    path, steps = runtime.average_run(
        args.run_dir, last=args.last, best=args.best, out=args.out, steps=args.steps
    )
    print(f"averaged steps {', '.join(f'{s:,}' for s in steps)} -> {path}")
    return 0
