"""Running the benchmark's jobs: one system, one seed, one recipe, in its own folder.

A job trains (on the clock), chooses its model on the validation sample
(``selection.py``, after the clock), translates the test set with it (unless it is a
recipe search's job), and, when the job says so, with each peer's own choice of model too
(``System.own_practice``: Sockeye's and fairseq's averages, fairseq's best checkpoint), and
writes ``result.json`` last. A job whose folder holds a
``result.json`` is finished and never run again, so a stopped benchmark restarts where it
stopped; an unfinished job's folder is emptied and the job run again from its start.

Jobs run in rounds: the jobs of a round start together (one process each, ``threads``
threads), and the next round starts when all of them are done.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import signal
import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

from .base import Own, Step, System, TrainStats
from .selection import Selection, choose
from .table import Score, score

RESULT = "result.json"


@dataclass
class Job:
    system: System
    seed: int
    group: str  # the round's name: the systems that trained at the same time
    minutes: float
    beams: list[int] = field(default_factory=list)  # test searches ([]: validation only)
    settings: dict[str, float] = field(default_factory=dict)  # a recipe search's cell
    keep_checkpoints: bool = False  # else only the chosen model's file stays (peers)
    own: bool = False  # also test each peer's own practice (System.own_practice)
    about: dict = field(default_factory=dict)  # recorded in the result (a protocol's hash)

    @property
    def out(self) -> Path:
        return self.system.out

    def finished(self) -> bool:
        return (self.out / RESULT).is_file()

    def result(self) -> dict:
        return json.loads((self.out / RESULT).read_text(encoding="utf-8"))


TICK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def session_cpu_seconds(session: int) -> float | None:
    """CPU seconds (user + system, with reaped children) of the live processes of a session:
    a step's command and its workers (Linux /proc; None elsewhere)."""
    proc = Path("/proc")
    if not (proc / "self" / "stat").is_file():
        return None
    ticks = 0
    for stat in proc.glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rpartition(")")[2].split()
        except OSError:  # ended while read
            continue
        if int(fields[3]) == session:  # fields after the name: state, ppid, pgrp, session, ...
            ticks += sum(int(f) for f in fields[11:15])  # utime stime cutime cstime
    return ticks / TICK


def run_step(step: Step, log: Path, threads: int, cpu: dict | None = None) -> tuple[float, str]:
    """Run one command (logged); returns (seconds, error or ''). ``cpu``, when given, gets
    ``cpu[step.name]``: the CPU seconds its processes used (last read a second before the
    end), to tell a run that had its core from one that shared it."""
    env = {**os.environ, **step.env}
    env.update({k: str(threads) for k in ("OMP_NUM_THREADS", "MKL_NUM_THREADS")})
    env["PYTHONUNBUFFERED"] = "1"
    log.parent.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    with open(log, "w", encoding="utf-8") as out:
        out.write("$ " + shlex.join(step.argv) + "\n")
        out.flush()
        proc = subprocess.Popen(
            step.argv, stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True
        )
        deadline = started + step.timeout if step.timeout else None
        while True:
            try:
                code = proc.wait(timeout=1.0)
                break
            except subprocess.TimeoutExpired:
                # a scan of /proc a second, only when the caller keeps the figure
                if cpu is not None and (used := session_cpu_seconds(proc.pid)) is not None:
                    cpu[step.name] = round(used, 1)
            if deadline is not None and time.monotonic() > deadline:
                os.killpg(proc.pid, signal.SIGTERM)
                try:
                    proc.wait(timeout=60)
                except subprocess.TimeoutExpired:
                    os.killpg(proc.pid, signal.SIGKILL)
                    proc.wait()
                return time.monotonic() - started, f"stopped after {step.timeout:.0f} s"
    took = time.monotonic() - started
    return took, "" if code == 0 else f"exit {code} (see {log})"


def execute(job: Job, threads: int, beside: list[str]) -> dict:
    """Run ``job`` from its start; returns its result (also written to ``result.json``)."""
    s = job.system
    if job.out.exists():
        shutil.rmtree(job.out)
    job.out.mkdir(parents=True)
    record: dict = {
        "system": s.name,
        "label": s.label,
        "seed": job.seed,
        "group": job.group,
        "beside": beside,
        "settings": job.settings,
        "recipe": s.recipe.to_dict(),
        **job.about,
        "seconds": {},
        "cpu_seconds": {},
    }

    def run(step: Step) -> str:
        log = job.out / "logs" / f"{step.name}.log"
        seconds, error = run_step(step, log, threads, record["cpu_seconds"])
        record["seconds"][step.name] = round(seconds, 1)
        return error

    for step in s.prepare():
        error = run(step)
        if error:
            raise RuntimeError(f"{step.name}: {error}")
    train = s.train(job.minutes)
    train.timeout = 60 * job.minutes + max(900.0, 30 * job.minutes)  # the final validation
    error = run(train)
    if error:  # a run stopped by the timeout still leaves its checkpoints
        record["train_error"] = error
    stats = s.stats()
    record.update(updates=stats.updates, tokens=stats.tokens, train_seconds=stats.seconds)
    selection = choose(s, stats, run)  # selection.py: one rule for every system
    record["selection"] = selection.to_dict()
    record["scores"] = {}
    for beam in job.beams:
        record["scores"][str(beam)] = asdict(test(s, selection.model, beam, run))
    own = s.own_practice(stats) if job.own and job.beams else []
    if own:
        record["own"] = {o.name: own_practice(s, o, job.beams, run) for o in own}
    if not job.keep_checkpoints:
        prune(s, stats, selection, own)
    tmp = job.out / (RESULT + ".tmp")
    tmp.write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
    tmp.replace(job.out / RESULT)
    return record


def hyp_file(folder: Path, beam: int, own: str = "") -> Path:
    """The detokenised test translations of a job's folder (one line each; left out: empty):
    of the common rule's model, or of the peer's own practice ``own``."""
    return Path(folder) / (f"test.{own}.beam{beam}.txt" if own else f"test.beam{beam}.txt")


def own_practice(system: System, own: Own, beams: list[int], run) -> dict:
    """Make a peer's own choice of model (after the clock) and test it with every beam."""
    for step in own.steps:
        error = run(step)
        if error:
            raise RuntimeError(f"{own.name}: {step.name}: {error}")
    scores = {str(b): asdict(test(system, own.model, b, run, own.name)) for b in beams}
    return {"label": own.label, "model": own.model, "scores": scores}


def test(system: System, model: str, beam: int, run, own: str = "") -> Score:
    """Translate the test set with ``model``; score it."""
    stem = f"test.{own}.beam{beam}" if own else f"test.beam{beam}"
    out = system.out / f"{stem}.out"
    step = system.translate(model, beam, "test", out)
    search = "greedy" if beam == 1 else f"beam{beam}"
    step.name = f"{own}-{search}" if own else search
    started = time.monotonic()
    error = run(step)
    if error:
        raise RuntimeError(f"{step.name}: {error}")
    seconds = time.monotonic() - started
    refs = system.data.raw["test"][1].read_text(encoding="utf-8").splitlines()
    hyps = system.hypotheses(out, "test")
    hyps = hyps + [None] * (len(refs) - len(hyps))
    text = "".join((h or "") + "\n" for h in hyps)
    hyp_file(system.out, beam, own).write_text(text, encoding="utf-8")
    return score(hyps, refs, round(seconds, 1))


def prune(system: System, stats: TrainStats, selection: Selection, own: list[Own]) -> None:
    """Delete a run's checkpoint and average files except the chosen model's."""
    names = [c.name for c in stats.checkpoints]
    names += [f"average-{len(a.updates)}.pt" for a in selection.averages]
    names += [o.model for o in own if o.steps]  # the averages the own practices made
    for name in names:
        path = system.checkpoint_path(name)
        if name != selection.model and path.is_file():
            path.unlink()


def run_rounds(
    rounds: list[list[Job]],
    threads: int,
    say=print,
    on_finish: Callable[[Job], None] | None = None,
) -> list[dict]:
    """Run the unfinished jobs of each round at the same time; the results of all jobs
    (finished ones read back; a failed job gives ``{"failed": why, ...}``). ``on_finish``
    is called with each job that finishes here (``kept.py`` keeps its files)."""
    results: list[dict] = []
    for i, jobs in enumerate(rounds, 1):
        todo = [j for j in jobs if not j.finished()]
        names = ", ".join(f"{j.system.label} (seed {j.seed})" for j in jobs)
        if not todo:
            say(f"round {i}/{len(rounds)}: {names}: finished earlier")
        else:
            say(
                f"round {i}/{len(rounds)}: {names}"
                + (" (resumed)" if len(todo) < len(jobs) else "")
            )
        found: dict[int, dict] = {}
        workers = []
        for k, job in enumerate(jobs):
            if job in todo:
                beside = [j.system.name for j in todo if j is not job]
                args = (job, threads, beside, found, k, on_finish)
                t = threading.Thread(target=_work, args=args)
                t.start()
                workers.append(t)
        for t in workers:
            t.join()
        for k, job in enumerate(jobs):
            result = found.get(k) or job.result()
            result["folder"] = str(job.out)  # where its translations are (not stored)
            if result.get("failed"):
                say(f"  {job.system.label}, seed {job.seed}: failed: {result['failed']}")
            results.append(result)
    return results


def _work(
    job: Job,
    threads: int,
    beside: list[str],
    found: dict[int, dict],
    k: int,
    on_finish: Callable[[Job], None] | None,
) -> None:
    """One job in its thread: ``found[k]`` is its result, or its failure."""
    try:
        found[k] = execute(job, threads, beside)
    except Exception as exc:  # one job's failure is reported, the others go on
        found[k] = failed(job, str(exc))
        return
    if on_finish is not None:
        on_finish(job)


def failed(job: Job, why: str) -> dict:
    s = job.system
    return {
        "system": s.name,
        "label": s.label,
        "seed": job.seed,
        "group": job.group,
        "settings": job.settings,
        "failed": why,
    }
