"""``sweep(spec)``: check the spec, make the data, run the jobs not finished yet through an
engine, and write the table."""

from __future__ import annotations

import os
import shutil
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from adl.runtime.data.lines import read_lines
from adl.runtime.errors import UserError
from adl.runtime.logs import duration
from adl.runtime.sweep import costs
from adl.runtime.sweep import results as res
from adl.runtime.sweep.engines import ENGINES, run_local, run_submitit
from adl.runtime.sweep.job import DecodeJob, Job, commit_record
from adl.runtime.sweep.markdown import write
from adl.runtime.sweep.pictures import draw
from adl.runtime.sweep.plan import Plan, decoding_key, prepare_data
from adl.runtime.sweep.plan import decoded as complete_decoding
from adl.runtime.sweep.planning import (
    current,
    data_ready,
    describe,
    load_plan,
    prepare_regime,
)
from adl.runtime.sweep.spec import Spec
from adl.runtime.sweep.state import HYP, LOG, RESULT, STATE, SWEEP, read_json, write_json
from adl.runtime.sweep.table import Table, build


class SweepError(UserError):
    """Runs of a sweep failed (the table holds the others)."""


@dataclass
class SweepResult:
    plan: Plan
    table: Table | None
    ran: int = 0  # jobs run by this call
    failed: list[str] = field(default_factory=list)  # "SYSTEM seed N: why"
    files: list[Path] = field(default_factory=list)  # the table's files and pictures
    seconds: float = 0.0  # this call's wall time
    job_seconds: float = 0.0  # the jobs' own time, summed (measured inside each job)


def sweep(
    spec: str | Path,
    out: str | Path | None = None,
    *,
    jobs: int = 1,
    executor: str = "local",
    slurm: dict[str, Any] | None = None,
    check: bool = False,
    stream: TextIO | None = None,
    poll: float = 10.0,
    results: str | Path | None = None,
    systems: Sequence[str] | None = None,
) -> SweepResult:
    """Run the sweep of ``spec`` (a file, a bundled spec's name, or a sweep folder) in
    ``out`` (default runs/sweeps/NAME): ``jobs`` runs at once through ``executor`` (local |
    slurm | submitit-local; ``slurm``: submitit parameters over the spec's). ``check``: check
    the spec and say what would run, train nothing. Raises :class:`SpecError` for a spec
    that cannot run (before anything trains) and :class:`SweepError` when runs failed (after
    the table of the others is written). ``results``: where the result files are kept
    (results.py; default docs/results of the source tree for a bundled spec, else
    OUT/results). ``systems``: train only these systems' runs (a decoding variant's: its
    trained system's), the seeds each gets decided as for the whole spec; the table is the
    whole spec's, with what is committed."""
    started = time.perf_counter()
    say = stream or sys.stdout
    if executor not in ENGINES:
        raise UserError(f"--executor must be one of {', '.join(ENGINES)}, not {executor!r}")
    if jobs < 1:
        raise UserError("--jobs must be at least 1")
    spec_obj, plan, kept = load_plan(spec, out, results)
    only = _only(spec_obj, systems, plan)
    if check:
        todo = _chosen(plan, plan.runs, only)
        how = None
        if spec_obj.regime is not None and not data_ready(plan):
            say.write("the regime's sizes need the training set: preparing the data\n")
            plan.data = prepare_data(spec_obj, say)
        if data_ready(plan):
            if spec_obj.regime is not None:
                prepare_regime(spec_obj, plan, kept)
            spec_obj, plan, kept, hashes = current(spec, out, results)
            todo = _to_run(plan, kept, hashes, only)
        else:  # a run's result file is matched by what it was made from, the data among it
            how = "committed results not counted before the data is prepared (adl sweep does it)"
        _say_plan(plan, todo, say, how, only)
        for line in describe(spec_obj, plan):
            say.write(line + "\n")
        return SweepResult(plan, None, seconds=time.perf_counter() - started)
    plan.out.mkdir(parents=True, exist_ok=True)
    with _lock(plan.out):
        plan.data = prepare_data(spec_obj, say)
        prepare_regime(spec_obj, plan, kept)
        spec_obj, plan, kept, hashes = current(spec, out, results)
        named = results is not None or res.remembered(plan.out) is not None
        record = {"spec": str(spec_obj.path.resolve()), **({"results": str(kept)} if named else {})}
        write_json(plan.out / SWEEP, record)
        shutil.copyfile(spec_obj.path, plan.out / "spec.yaml")
        refs = read_lines(plan.data.test[1], allow_empty=True)
        res.write_references(kept, spec_obj, refs[: spec_obj.data.test_max or None])
        options = {**spec_obj.slurm, **(slurm or {})}
        result = SweepResult(plan, None)
        tried: set[tuple[str, int]] = set()
        while True:  # the runs to do; then again, where the results asked for more
            backfill(plan, kept, hashes)
            todo = _to_run(plan, kept, hashes, only)
            fresh = [r for r in todo if (r.system, r.seed) not in tried]
            if not fresh:
                if not tried:
                    _say_plan(plan, todo, say, None, only)
                break
            made, how, gpus = _jobs(plan, fresh, jobs, executor, kept, hashes)
            _say_plan(plan, fresh, say, how, only)
            _run(made, jobs, gpus, executor, options, plan, result, say, poll)
            tried |= {(r.system, r.seed) for r in fresh}
            if result.failed:
                break
            # more seeds where verdicts need them; a regime's curve once its rates are chosen
            _, plan, kept, hashes = current(spec, out, results)
        result.plan = plan
        measure = spec_obj.regime is None  # a regime's rows are the spec's systems again
        if measure and not result.failed and not costs.up_to_date(plan, kept):
            say.write("cost columns: measuring every system (adl.runtime.cost)\n")
            costs.measure_costs(plan, kept, lambda line: say.write(f"  {line}\n"))
        table = build(plan, kept, hashes)
        result.table = table
        result.files = [*write(table), *draw(table)]
    say.write("\n" + (plan.out / "results.md").read_text(encoding="utf-8"))
    say.write(
        f"\ntable: {plan.out / 'results.md'} (.csv, .json); pictures: {plan.out / 'pictures'}\n"
    )
    result.seconds = time.perf_counter() - started
    if result.failed:
        raise SweepError(
            f"{len(result.failed)} run{'s' if len(result.failed) != 1 else ''} did not finish: "
            + "; ".join(result.failed)
            + f". The table holds the others. Run the same command again to retry (finished "
            f"runs are kept); adl sweep {plan.out} --status shows the state."
        )
    return result


def committed(run, plan: Plan, kept: Path, hashes: dict[tuple[str, int], str]) -> bool:
    """Every decoding of the run has its result file, made from what the spec says now."""
    return all(
        res.matches(res.record_path(kept, plan.spec, d.system, d.seed), hashes[d.system, d.seed])
        for d in run.decodings
    )


def backfill(plan: Plan, kept: Path, hashes: dict[tuple[str, int], str]) -> None:
    """Result files for decodings finished in their run folders before the sweep kept any."""
    for run in plan.runs:
        for d in run.decodings:
            path = res.record_path(kept, plan.spec, d.system, d.seed)
            if complete_decoding(d, plan) and not res.matches(path, hashes[d.system, d.seed]):
                found = read_json(d.folder / RESULT) or {}
                hyps = read_lines(d.folder / HYP, allow_empty=True)
                job = DecodeJob(
                    d.system, str(d.folder), d.options, {}, str(path), hashes[d.system, d.seed]
                )
                commit_record(job, found, hyps, found.get("device", "cpu"), found.get("threads", 0))


def _jobs(
    plan: Plan,
    todo: list,
    jobs: int,
    executor: str,
    kept: Path,
    hashes: dict[tuple[str, int], str],
) -> tuple[list[Job], str, int]:
    """The jobs of the runs ``todo``, each with its share of the machine; that share in
    words; and the GPUs the local engine hands out (one a job; 0: none)."""
    import torch

    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    cores = cores or 1
    gpus, at_once = 0, jobs
    if executor == "local":
        devices = {r.config.train.device for r in todo}
        if torch.cuda.is_available() and devices & {"auto", "cuda"}:
            gpus = torch.cuda.device_count()
            at_once = min(jobs, gpus)
        share = max(1, cores // at_once)
    elif executor == "submitit-local":
        at_once = len(todo)
        share = max(1, cores // at_once)
    else:
        share = 0  # each job uses the CPUs Slurm gives it
    spec = plan.spec
    made = []
    for run in todo:
        config = run.config
        system = spec.system(run.system)
        assert system is not None  # every run is of a system of the spec
        named = {k for k, _, _ in spec.settings} | {k for k, _, _ in system.settings}
        threads = config.train.threads if "train.threads" in named else share
        decodings = [
            DecodeJob(
                d.system,
                str(d.folder),
                d.options,
                decoding_key(d, plan),
                str(res.record_path(kept, spec, d.system, d.seed)),
                hashes[d.system, d.seed],
            )
            for d in run.decodings
        ]
        made.append(
            Job(
                run.system,
                run.seed,
                str(run.folder),
                config.to_dict(),
                run.fingerprint,
                decodings,
                plan.data.test,
                spec.data.test_max,
                spec.checkpoint,
                spec.minutes,
                threads,
            )
        )
    threads = sorted({job.threads for job in made})
    each = (
        "one GPU each"
        if gpus
        else "the CPUs Slurm gives each"
        if threads == [0]
        else f"{'/'.join(map(str, threads))} CPU thread{'s' if threads != [1] else ''} each"
    )
    engine = {
        "local": "local processes",
        "submitit-local": "submitit's local executor",
        "slurm": "Slurm (submitit)",
    }[executor]
    return made, f"{at_once} at once through {engine}, {each}", gpus


def _run(
    made: list[Job],
    jobs: int,
    gpus: int,
    executor: str,
    options: dict[str, Any],
    plan: Plan,
    result: SweepResult,
    say: TextIO,
    poll: float,
) -> None:
    count = len(made)

    def done(job: Job, outcome: dict[str, Any]) -> None:
        result.ran += 1
        result.job_seconds += float(outcome.get("seconds") or 0.0)
        took = duration(float(outcome.get("seconds") or 0.0))
        if outcome.get("ok"):
            scores = [read_json(Path(d.folder) / "result.json") or {} for d in job.decodings]
            shown = ", ".join(
                f"{s.get('system')} BLEU {s['bleu']:.2f}" for s in scores if "bleu" in s
            )
            say.write(f"[{result.ran}/{count}] {job.name}: done in {took} ({shown})\n")
        else:
            why = outcome.get("error") or outcome.get("state")
            result.failed.append(f"{job.name}: {why}")
            say.write(
                f"[{result.ran}/{count}] {job.name}: {outcome.get('state')}: {why} "
                f"(log: {Path(job.folder) / LOG})\n"
            )
        say.flush()

    try:
        if executor == "local":
            run_local(made, min(jobs, gpus) if gpus else jobs, gpus, done)
        else:
            cluster = "slurm" if executor == "slurm" else "local"
            run_submitit(made, plan.out / "jobs", cluster, jobs, options, done, poll)
    except KeyboardInterrupt:
        say.write(
            "\ninterrupted: runs under way saved a checkpoint. Run the same command again to "
            "finish: finished runs are kept, stopped ones resume.\n"
        )
        say.flush()
        raise


def _only(spec: Spec, systems: Sequence[str] | None, plan: Plan) -> set[str] | None:
    """The spec's systems whose runs ``systems`` asks for (a decoding variant: its trained
    system; a regime's row, such as ``BASE@1405``: that row alone), or None for all; a name
    the spec does not have is an error naming those it has."""
    if systems is None:
        return None
    named = {s.name: s for s in spec.systems}
    rows = [s.name for s in plan.spec.systems if s.of is not None]  # planned so far
    unknown = [n for n in systems if n not in named and n not in rows]
    if unknown or not systems:
        which = f"no system {', '.join(map(repr, unknown))}" if unknown else "no --systems named"
        also = f"; its regime's rows so far: {', '.join(rows)}" if rows else ""
        raise UserError(f"{spec.name} has {which}: its systems are {', '.join(named)}{also}")
    return {named[n].decode_of or n if n in named else n for n in systems}


def _to_run(
    plan: Plan, kept: Path, hashes: dict[tuple[str, int], str], only: set[str] | None
) -> list:
    """The runs of the plan with no committed result, of the systems ``only`` names."""
    return _chosen(plan, [r for r in plan.runs if not committed(r, plan, kept, hashes)], only)


def _chosen(plan: Plan, runs: list, only: set[str] | None) -> list:
    """The runs of ``runs`` that belong to the systems ``only`` names (a regime's rows to
    the system they are rows of)."""
    if only is None:
        return list(runs)
    rows = {s.name: s.of for s in plan.spec.systems}
    return [r for r in runs if r.system in only or rows.get(r.system) in only]


def _say_plan(
    plan: Plan, todo: list, say: TextIO, how: str | None, only: set[str] | None = None
) -> None:
    spec = plan.spec
    trained = [s for s in spec.systems if s.trained]
    variants = [s for s in spec.systems if not s.trained]
    runs = len(_chosen(plan, plan.runs, only))
    what = f"{len(trained)} trained system{'s' if len(trained) != 1 else ''}"
    if variants:
        what += f" (+{len(variants)} decoding {'variants' if len(variants) != 1 else 'variant'})"
    seeds = lambda n: f"{n} seed{'s' if n != 1 else ''}"
    more = {name: [s for s in plan.seeds_of(name) if s not in spec.seeds] for name in plan.seeds}
    added = sorted({tuple(v) for v in more.values() if v})
    extra = "".join(
        f"; seeds {', '.join(map(str, group))} for "
        + ", ".join(n for n, v in more.items() if tuple(v) == group)
        for group in added
    )
    own = any(s.seeds for s in spec.systems)  # a regime's rate search: one seed a row
    say.write(
        f"sweep {spec.name}: {what}"
        + ("" if own else f" x {seeds(len(spec.seeds))}{extra}")
        + (f"; only {', '.join(sorted(only))}" if only is not None else "")
        + f" = {runs} runs; {runs - len(todo)} done, {len(todo)} to run"
        + (f", {how}" if how else "")
        + f" -> {plan.out}\n"
    )
    say.flush()


@contextmanager
def _lock(folder: Path) -> Iterator[None]:
    """One ``adl sweep`` at a time in a sweep folder (an advisory lock on SWEEP/.lock)."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - not POSIX: no lock
        yield
        return
    path = folder / ".lock"
    with open(path, "a+") as f:
        try:
            fcntl.flock(f.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            f.seek(0)
            holder = f.read().strip() or "?"
            raise UserError(
                f"another adl sweep is running in {folder} (process {holder}); wait for it, "
                f"or see what it does: adl sweep {folder} --status"
            ) from None
        f.seek(0)
        f.truncate()
        f.write(f"{os.getpid()}\n")
        f.flush()
        try:
            yield
        finally:
            f.seek(0)
            f.truncate()
            fcntl.flock(f.fileno(), fcntl.LOCK_UN)


def sweep_running(folder: Path) -> int | None:
    """The process of an ``adl sweep`` holding ``folder``'s lock, or None."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover
        return None
    path = folder / ".lock"
    if not path.is_file():
        return None
    with open(path) as f:
        try:
            fcntl.flock(f.fileno(), fcntl.LOCK_SH | fcntl.LOCK_NB)
        except OSError:
            text = f.read().strip()
            return int(text) if text.isdigit() else -1
        fcntl.flock(f.fileno(), fcntl.LOCK_UN)
    return None


__all__ = ["STATE", "SweepError", "SweepResult", "sweep", "sweep_running"]
