"""``adl sweep --status``: which runs are done, running, stopped, failed or pending, and why."""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

from adl.runtime.logs import duration
from adl.runtime.sweep import results as res
from adl.runtime.sweep.plan import Plan, decoded
from adl.runtime.sweep.state import LOG, RESULT, STATE, alive, last_step, read_json

STATES = ("done", "running", "stopped", "failed", "pending")


@dataclass
class RunStatus:
    system: str
    seed: int
    state: str  # done | running | stopped | failed | pending
    step: int | None  # the training step reached
    steps: int  # the budget's steps (0: none)
    detail: str  # the score, what it is doing, or why it stopped


@dataclass
class Status:
    plan: Plan
    runs: list[RunStatus]
    sweep_pid: int | None  # the adl sweep working in the folder now

    def count(self, state: str) -> int:
        return sum(r.state == state for r in self.runs)

    def render(self) -> str:
        spec, plan = self.plan.spec, self.plan
        counts = ", ".join(f"{self.count(s)} {s}" for s in STATES if self.count(s))
        head = f"sweep {spec.name} in {plan.out}: {len(self.runs)} runs: {counts or 'none'}"
        if self.sweep_pid:
            head += f" (adl sweep is at work: process {self.sweep_pid})"
        rows = [("system", "seed", "state", "step", "detail")]
        for r in self.runs:
            step = "" if r.step is None else f"{r.step:,}" + (f"/{r.steps:,}" if r.steps else "")
            rows.append((r.system, str(r.seed), r.state, step, r.detail))
        widths = [max(len(row[i]) for row in rows) for i in range(4)]
        lines = [head] + [
            "  ".join(cell.ljust(w) for cell, w in zip(row[:4], widths)) + "  " + row[4]
            for row in rows
        ]
        return "\n".join(line.rstrip() for line in lines) + "\n"


def status(
    target: str | Path, out: str | Path | None = None, results: str | Path | None = None
) -> Status:
    """The state of every (system, seed) of a sweep (``target``: a spec, a bundled spec's
    name, or a sweep folder); a (system, seed) with its result file (results.py) is done,
    made from what the spec says now where the data is there to tell."""
    from adl.runtime.sweep.driver import sweep_running
    from adl.runtime.sweep.planning import data_ready, load_plan, seeded

    spec, plan, kept = load_plan(target, out, results)
    hashes = None
    if data_ready(plan):
        plan, hashes = seeded(plan, kept)
    spec = plan.spec  # a regime's rows
    test_here = all(Path(p).is_file() for p in plan.data.test)
    runs = []
    for run in plan.runs:
        state = read_json(run.folder / STATE) or {}
        for d in run.decodings:
            path = res.record_path(kept, spec, d.system, d.seed)
            record = read_json(path)
            if record and (hashes is None or record.get("hash") == hashes[d.system, d.seed]):
                detail = f"BLEU {record.get('bleu', 0):.2f}, chrF {record.get('chrf', 0):.2f}"
                runs.append(
                    RunStatus(
                        d.system,
                        d.seed,
                        "done",
                        record.get("steps"),
                        run.config.train.max_steps,
                        f"{detail} ({path})",
                    )
                )
                continue
            runs.append(_one(plan, run, d, state, test_here))
    order = {s.name: i for i, s in enumerate(plan.spec.systems)}
    runs.sort(key=lambda r: (order[r.system], r.seed))
    return Status(plan, runs, sweep_running(plan.out))


def _one(plan: Plan, run, decoding, state: dict, test_here: bool) -> RunStatus:
    """``test_here``: the test data is at hand, so a result can be checked against the
    spec's test set (without it, another folder's data/, a result is shown as done and said
    to be unchecked)."""
    steps = run.config.train.max_steps
    folder = run.folder
    train = state.get("train") or {}
    step = train.get("steps") if train.get("done") else last_step(folder)
    own = decoding.system == run.system
    of = "" if own else f" ({run.system} seed {run.seed}'s run)"
    if decoded(decoding, plan) or (not test_here and (decoding.folder / RESULT).is_file()):
        result = read_json(decoding.folder / RESULT) or {}
        took = train.get("elapsed")
        detail = f"BLEU {result.get('bleu', 0):.2f}, chrF {result.get('chrf', 0):.2f}"
        if own and took:
            detail += f"; trained {duration(took)} ({train.get('reason', '?').replace('_', ' ')})"
        if not test_here:
            detail += f" (not checked: no test data at {Path(plan.data.test[0]).parent})"
        return RunStatus(decoding.system, decoding.seed, "done", step, steps, detail + of)
    kind = state.get("state")
    log = folder / LOG
    if kind in ("running", "trained"):
        living = alive(state)
        if living is False:
            if train.get("done"):
                why = "its process ended while decoding (killed?); a re-run decodes it"
            else:
                at = f"at step {step:,}" if step is not None else "before its first step"
                why = (
                    f"its process ended {at} without finishing (killed?); a re-run resumes "
                    "it from its last checkpoint"
                )
            return RunStatus(decoding.system, decoding.seed, "stopped", step, steps, why + of)
        since = duration(time.time() - float(state.get("started") or time.time()))
        doing = "decoding the test set" if train.get("done") else "training"
        where = f"process {state.get('pid')} on {state.get('host')}"
        detail = f"{doing} for {since}, {where}"
        if living is None:
            detail += (
                " (another machine: last news "
                + duration(time.time() - float(state.get("updated") or time.time()))
                + " ago)"
            )
        return RunStatus(decoding.system, decoding.seed, "running", step, steps, detail + of)
    if kind == "failed":
        return RunStatus(
            decoding.system,
            decoding.seed,
            "failed",
            step,
            steps,
            f"{state.get('error')} (log: {log}){of}",
        )
    if kind == "stopped":
        return RunStatus(
            decoding.system, decoding.seed, "stopped", step, steps, f"{state.get('error')}{of}"
        )
    if kind == "done":  # the run is done but this decoding is not (added or changed since)
        return RunStatus(decoding.system, decoding.seed, "pending", step, steps, f"to decode{of}")
    return RunStatus(decoding.system, decoding.seed, "pending", None, steps, of.strip())
