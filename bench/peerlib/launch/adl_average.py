"""Average ADL step checkpoints into one file, as ``adl average`` does for a run's last or
best N (``adl.runtime.model.checkpoint.average``: the mean of the weights, the rest from the
newest), for the benchmark's choice of which checkpoints (``selection.py``: the last k the
run's record names).

    python adl_average.py --inputs FILE... --output FILE
"""

import argparse
from pathlib import Path

from adl.runtime.model import checkpoint


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--inputs", nargs="+", required=True)
    p.add_argument("--output", required=True)
    args = p.parse_args()
    checkpoint.save(checkpoint.average([Path(f) for f in args.inputs]), Path(args.output))


if __name__ == "__main__":
    main()
