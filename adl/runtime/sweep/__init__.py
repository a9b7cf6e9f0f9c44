"""Sweeps: the papers' comparisons as one command (``adl sweep SPEC.yaml``).

    from adl.runtime import sweep
    result = sweep.sweep("you2020", jobs=2)        # a bundled spec, or a path to a YAML file
    print(result.table.rows[1].values["p_bleu"])
    print(sweep.status("runs/sweeps/you2020").render())

A spec names the data, a base preset and budget, seeds, a baseline and the systems; every
(system, seed) becomes an ordinary run folder under the sweep folder, trained through an
engine (a local process pool, or submitit on Slurm), and the table compares the systems with
scores, a paired significance test and cost columns (docs/experiments.md).
"""

from adl.runtime.sweep.driver import SweepError, SweepResult, sweep
from adl.runtime.sweep.plan import load
from adl.runtime.sweep.reader import read_spec
from adl.runtime.sweep.spec import SpecError, bundled
from adl.runtime.sweep.status import Status, status

__all__ = [
    "SpecError",
    "Status",
    "SweepError",
    "SweepResult",
    "bundled",
    "load",
    "read_spec",
    "status",
    "sweep",
]
