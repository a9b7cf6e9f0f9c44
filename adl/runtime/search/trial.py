"""One trial: train a program of the search in its run folder, telling the study each
validation, and stop when the pruner says so; then measure the costs it is searched on.

A program's run folder is ``programs/KEY/`` (KEY: :attr:`Program.key`), an ordinary run
folder (``adl translate --run`` reads it) with the program's ``enc.adl`` and ``dec.adl``.
One worker trains a program at a time (``programs/KEY.lock``, held for the whole trial); a
trial that finds its program's run folder with a checkpoint (a worker killed while training
it) resumes from it, so nothing is trained twice. ``starts.jsonl`` in the run folder has a
line for every trial that trained there.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from adl.runtime.config import Config
from adl.runtime.run.configure import configure
from adl.runtime.rundir import RunDir
from adl.runtime.search.programs import Program
from adl.runtime.search.spec import SearchError, Spec

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows: no lock between workers
    fcntl = None  # type: ignore[assignment]

# What a run folder holds before its first checkpoint (cleared when a trial starts it again).
PARTIAL = ("config.yaml", "tokenizer", "train.log", "metrics.jsonl", "tensorboard", "checkpoints")
Report = Callable[[int, float], bool]  # (step, validation BLEU) -> prune now?


class Busy(SearchError):
    """Another worker is training this program now."""


class Pruned(Exception):
    """The pruner stopped the trial at a validation."""


@dataclass
class Outcome:
    """What a trial measured."""

    bleu: float | None  # the best validation BLEU
    curve: list[tuple[int, float]] = field(default_factory=list)  # (step, BLEU) validations
    costs: dict[str, float] = field(default_factory=dict)
    steps: int = 0
    pruned: bool = False


def trial_config(spec: Spec, folder: Path, files: tuple[Path, Path], threads: int) -> Config:
    """The configuration of every trial: the spec's preset, data and settings, validated
    on BLEU (best.pt is the best BLEU), the search's shared tokenizer cache."""
    train = spec.train[0] if len(spec.train) == 1 else (spec.train[0], spec.train[1])
    valid = spec.valid[0] if len(spec.valid) == 1 else (spec.valid[0], spec.valid[1])
    config = configure(
        [str(f) for f in files], preset=spec.preset, sets=spec.sets, train=train, valid=valid
    )
    t = config.train
    t.bleu, t.best_metric, t.seed, t.patience = True, "bleu", spec.seed, 0
    if spec.steps:
        t.max_steps = spec.steps
    if spec.valid_every:
        t.valid_every = spec.valid_every
    t.max_minutes = 0.0
    t.threads = threads or t.threads
    config.data.cache_dir = str((folder / "cache").resolve())
    config.model.vars = _read(spec, config, files)
    return config.validate()


def _read(spec: Spec, config: Config, files: tuple[Path, Path]) -> dict[str, Any]:
    """The model variables of a trial: the preset's that its program reads (the preset's
    ``$layers`` means nothing to a space that decides its depth as ``$depth``), and every
    one the search sets (``--set model.vars.NAME=...``: one no program reads is an error)."""
    from adl.errors import ADLError
    from adl.models import check_model

    given = dict(config.model.vars or {})
    mine = {s.split("=", 1)[0].strip().removeprefix("model.vars.") for s in spec.sets}
    m = config.model
    try:  # by position, as the trainer reads them: a trial's files are enc.adl and dec.adl,
        # whose names say no role
        found = check_model(
            files[0], files[1], d_model=m.d_model, heads=m.heads, dropout=m.dropout, vars=given
        )
    except ADLError:
        return given  # the check of the program says what is wrong
    read = set().union(*(r.variables_read for r in found))
    return {k: v for k, v in given.items() if k in read or k in mine}


@contextmanager
def held(folder: Path, key: str) -> Iterator[None]:
    """The program's lock for the block (its trainer's, see :func:`train_program`), or
    raise :class:`Busy`."""
    fd = claim(folder, key)
    try:
        yield
    finally:
        if fd is not None:
            os.close(fd)


def ended(folder: Path, key: str) -> dict[str, Any] | None:
    """The record of the last trial that trained ``key`` to its end or was pruned (the run
    folder's ``trials.jsonl``, written while that trial held the lock), or None."""
    path = folder / "programs" / key / "trials.jsonl"
    lines = path.read_text(encoding="utf-8").splitlines() if path.is_file() else []
    return json.loads(lines[-1]) if lines else None


def claim(folder: Path, key: str) -> int | None:
    """The lock of a program (an open file descriptor), or raise :class:`Busy`."""
    if fcntl is None:
        return None
    (folder / "programs").mkdir(parents=True, exist_ok=True)
    fd = os.open(folder / "programs" / f"{key}.lock", os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        raise Busy(f"program {key} is being trained by another worker") from None
    return fd


def train_program(
    spec: Spec,
    folder: Path,
    program: Program,
    number: int,
    report: Report,
    threads: int = 0,
) -> Outcome:
    """Train (or resume) ``program`` in its run folder for trial ``number``, reporting each
    validation; the costs are measured after it trains to the end (not when pruned). The
    caller holds the program's lock (:func:`held`)."""
    from adl.runtime.training.train import Trainer

    run = folder / "programs" / program.key
    files = program.write(run)
    rundir = RunDir(run)
    resume = rundir.last.is_file()
    if not resume:
        for name in PARTIAL:  # a start killed before its first checkpoint: afresh
            path = run / name
            shutil.rmtree(path) if path.is_dir() else path.unlink(missing_ok=True)
    config = trial_config(spec, folder, files, threads)
    _note(run / "starts.jsonl", {"trial": number, "resume": resume, **_me()})
    outcome = Outcome(None)
    summary = None
    trainer = Trainer(config, run, resume=resume)
    try:

        def told() -> None:
            for entry in trainer.state.book.history[len(outcome.curve) :]:
                point = (int(entry["step"]), float(entry["value"]))
                outcome.curve.append(point)
                if report(*point) and point[0] < config.train.max_steps:
                    raise Pruned  # (at the last update the trial has finished)

        try:
            summary = trainer.run(lambda step, batches: told())
            told()
        except Pruned:
            outcome.pruned = True
        outcome.steps = trainer.step
        if not outcome.pruned:
            model = trainer.state.model
            outcome.costs["params"] = float(sum(p.numel() for p in model.parameters()))
    finally:
        trainer.close()
    if summary is not None and summary.interrupted:
        raise KeyboardInterrupt
    outcome.bleu = max((v for _, v in outcome.curve), default=None)
    if not outcome.pruned:
        outcome.costs.update(measure_costs(spec, folder, config, files))
    _note(run / "trials.jsonl", {"trial": number, **_summary(outcome)})
    return outcome


def first_files(folder: Path) -> tuple[Path, Path]:
    """The space's first program, the baseline of the costs: its encoder, then its decoder,
    as every model's files are read (sorted names would put .dec before .enc)."""
    return folder / "baseline" / "first.enc.adl", folder / "baseline" / "first.dec.adl"


def write_first(folder: Path, first: Program) -> tuple[Path, Path]:
    """Write the space's first program as the search's baseline (:func:`first_files`)."""
    paths = first_files(folder)
    for path, text in zip(paths, (first.encoder, first.decoder)):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return paths


def measure_costs(spec: Spec, folder: Path, config: Config, files: tuple[Path, Path]) -> dict:
    """The cost objectives the spec asks for (speed, memory), measured by adl.runtime.cost
    beside the space's first program (the same workload, taking turns)."""
    wanted = [o for o in spec.objectives if o in ("speed", "memory")]
    if not wanted:
        return {}
    import torch

    from adl.runtime import cost

    first = list(first_files(folder))
    device = "cuda" if config.train.device != "cpu" and torch.cuda.is_available() else "cpu"
    workload = cost.Workload(
        lengths=(spec.cost_length,),
        batch_tokens=1000,
        train_steps=2,
        sentences=8,
        rounds=1,
        threads=1,
        device=device,
    )
    candidates = [
        cost.Candidate.of("program", list(files), config),
        cost.Candidate.of("first", first, config),
    ]
    table = cost.measure(candidates, "first", workload)
    figures = table.figures["program"][spec.cost_length].values
    return {
        "speed": table.ratio("program", spec.cost_length, "greedy_sentences_per_s"),
        "memory": figures["train_peak_mib"],
        "greedy_sentences_per_s": figures["greedy_sentences_per_s"],
    }


def _summary(outcome: Outcome) -> dict[str, Any]:
    return {
        "bleu": outcome.bleu,
        "pruned": outcome.pruned,
        "steps": outcome.steps,
        "curve": outcome.curve,
        "costs": outcome.costs,
    }


def _me() -> dict[str, Any]:
    return {"pid": os.getpid(), "host": socket.gethostname(), "time": time.time()}


def _note(path: Path, record: dict[str, Any]) -> None:
    with open(path, "a", encoding="utf-8") as f:
        f.write(json.dumps(record) + "\n")
