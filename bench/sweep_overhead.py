"""The overhead of ``adl sweep`` beyond its runs, as a share of the runs' own time.

    python bench/sweep_overhead.py [--steps 400] [--d-model 128] [--jobs 1] [--keep DIR]

A sweep of 2 systems x 2 seeds on a synthetic task (letter sentences and their reversal,
4,000 pairs, made here) through ``adl.runtime.sweep.sweep`` with the local engine, one CPU
thread a run (so that a busy machine slows every part alike). Each job
measures its own time inside its process (training and decoding the test set, from the
moment the job starts to its end); the sweep's wall time includes everything around them:
checking the spec and planning, hashing the data, starting a fresh process per job (spawn,
importing torch and adl), and the table (scores, the paired significance test, pictures).
Printed: the runs' own time, the sweep's wall time, the overhead as a ratio of the runs'
time, and where it goes (the spec check and the table are timed again on their own; the rest
is starting the jobs' processes). With --jobs N the runs' time is divided by N.
"""

from __future__ import annotations

import argparse
import io
import tempfile
import time
from pathlib import Path

from toy_task import write_reverse_sweep

from adl.runtime import sweep
from adl.runtime.sweep.markdown import write
from adl.runtime.sweep.results import root
from adl.runtime.sweep.table import build


def task(folder: Path, steps: int, d_model: int) -> Path:
    settings = (
        f"  model.d_model: {d_model}\n"
        f"  train: {{max_tokens: 1024, valid_every: {max(steps // 4, 1)}, log_every: 50, "
        "threads: 1}\n"
    )
    sizes = {"train": 4000, "valid": 100, "test": 200}
    return write_reverse_sweep(folder, "overhead", sizes, (4, 12), 2, steps, settings, 4)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--steps", type=int, default=400, help="updates per run (400)")
    p.add_argument("--d-model", type=int, default=128, help="model size (128)")
    p.add_argument("--jobs", type=int, default=1, help="runs at once (1)")
    p.add_argument("--keep", metavar="DIR", help="make the sweep in DIR (default: a temp dir)")
    args = p.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(args.keep) if args.keep else Path(tmp)
        folder.mkdir(parents=True, exist_ok=True)
        spec = task(folder, args.steps, args.d_model)
        result = sweep.sweep(spec, folder / "sweep", jobs=args.jobs, stream=io.StringIO())
        runs = result.job_seconds / args.jobs
        overhead = result.seconds - runs
        # the parts that run in this process, timed again on their own
        t0 = time.perf_counter()
        loaded, plan = sweep.load(spec, folder / "sweep")
        t1 = time.perf_counter()
        write(build(plan, root(loaded, plan.out)))
        t2 = time.perf_counter()
    check, table = t1 - t0, t2 - t1
    print(
        f"sweep of 2 systems x 2 seeds, {args.steps} updates each at d_model {args.d_model}, "
        f"{args.jobs} at once ({result.ran} jobs)"
    )
    print(f"  the runs' own time (training + decoding, inside their processes): {runs:8.1f} s")
    print(
        f"  the sweep's wall time:                                             {result.seconds:8.1f} s"
    )
    print(f"  overhead: {overhead:.1f} s = {overhead / runs:.3f} x the runs' time")
    print(
        f"    spec check and plan {check:.2f} s; table, significance test and pictures "
        f"{table:.2f} s; starting {result.ran} job processes and the rest "
        f"{overhead - check - table:.2f} s ({(overhead - check - table) / max(result.ran, 1):.2f} s a job)"
    )


if __name__ == "__main__":
    main()
