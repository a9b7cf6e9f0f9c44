"""What a run's training holds, as typed objects: where it runs (:class:`Place`, made by the
:class:`~adl.runtime.training.train.Trainer` before anything else), what set-up made
(:class:`TrainingState`, which :func:`adl.runtime.training.prepare.prepare` returns), the
bookkeeping that checkpoints keep (:class:`Bookkeeping`), and the clock of this process's
run (:class:`Clock`). The checkpoint policy (:mod:`.policy`) reads and writes them through
:class:`Training`, so that it imports this module and not the loop that uses it."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import torch

from adl.runtime.config import Config
from adl.runtime.data.parallel import ParallelData
from adl.runtime.data.prefetch import Prefetcher
from adl.runtime.data.tokencache import TokenCache
from adl.runtime.data.tokenizer import Tokenizers
from adl.runtime.logs import Metrics
from adl.runtime.rundir import RunDir, RunLock
from adl.runtime.training import distributed
from adl.runtime.training.schedule import Schedule


@dataclass
class Place:
    """Where a run trains: its settings, folder and lock, its processes, device and
    precision."""

    cfg: Config
    run_dir: RunDir
    dist: distributed.Dist
    device: torch.device
    precision: Any  # training/precision.py: autocast and the gradient scaler
    lock: RunLock

    @property
    def main(self) -> bool:
        """The process that writes (rank 0)."""
        return self.dist.main


@dataclass
class Bookkeeping:
    """What a checkpoint keeps of the training besides the weights, the optimizer, the rate
    and the batches: the updates, the skipped ones, and the best validation so far."""

    step: int = 0  # updates done
    skipped: int = 0  # non-finite updates skipped, in all
    overflows: int = 0  # fp16: updates skipped while the gradient scaler lowered its scale
    bad_in_row: int = 0  # non-finite updates in a row (train.max_bad_steps stops at it)
    best_value: float | None = None  # the best train.best_metric
    best_loss: float | None = None  # validation loss there (breaks capped-ppl ties)
    best_step: int | None = None
    since_best: int = 0  # validations without a better best (train.patience stops at it)
    history: list[dict[str, Any]] = field(default_factory=list)  # each validation's value
    last_metrics: dict[str, float] = field(default_factory=dict)  # the last validation
    saved_step: int = -1  # the step of the last checkpoint written (-1: none)

    def to_state(self, metric: str) -> dict[str, Any]:
        """The checkpoint's ``trainer`` part (its keys are those of earlier checkpoints)."""
        return {
            "skipped": self.skipped,
            "overflows": self.overflows,
            "best_value": self.best_value,
            "best_loss": self.best_loss,
            "best_step": self.best_step,
            "stale": self.since_best,
            "history": self.history,
            "metric": metric,
        }

    @classmethod
    def from_state(cls, state: dict[str, Any]) -> Bookkeeping:
        """The bookkeeping of a checkpoint (:func:`adl.runtime.training.policy.contents`)."""
        tr = state["trainer"]
        return cls(
            step=int(state["step"]),
            skipped=int(tr["skipped"]),
            overflows=int(tr.get("overflows", 0)),
            best_value=tr["best_value"],
            best_loss=tr.get("best_loss"),
            best_step=tr["best_step"],
            since_best=int(tr["stale"]),
            history=list(tr["history"]),
            last_metrics=dict(state.get("metrics") or {}),
            saved_step=int(state["step"]),
        )


@dataclass
class TrainingState:
    """What set-up made for the loop: the log, the data and tokenizers, the model as built
    and as trained, the optimizer with its rate (``schedule``) and gradient scaler, the
    batches, and the bookkeeping."""

    log: logging.Logger
    console: Any  # the log's console handler (it draws the progress bar)
    metrics: Metrics
    cache: TokenCache | None
    tokenizers: Tokenizers
    train_data: ParallelData
    valid_data: ParallelData | None
    positions: tuple[int, int]  # the longest source and target the model takes (0: any)
    length_ratio: float
    model: Any  # the compiled Seq2Seq or JointModel
    train_model: Any  # the model as trained: itself, under DDP, or compiled
    ddp: Any  # DistributedDataParallel, or None
    needs_words: bool  # the model reads the source's word ids
    optimizer: torch.optim.Optimizer
    scaler: Any  # float16's gradient scaler (a pass-through otherwise)
    schedule: Schedule  # the learning rate: it alone sets the optimizer's
    stream: Prefetcher  # the training batches
    book: Bookkeeping
    resumed_from: Path | None = None  # the checkpoint a resume continues
    init: tuple[Path, dict[str, Any]] | None = None  # --init-from: (file, state)

    def close(self) -> None:
        """Give back what it holds open (the batch thread, the metrics files)."""
        self.stream.close()
        self.metrics.close()


@dataclass
class Clock:
    """This process's run of the loop (a resume starts it again)."""

    started: float  # time.monotonic() at the start of the run
    first_step: int  # the step it started from
    valid_seconds: float = 0.0  # time spent validating since


class Training(Protocol):
    """What the checkpoint policy works on (:class:`~adl.runtime.training.train.Trainer`)."""

    place: Place
    state: TrainingState
    clock: Clock

    def measure(self) -> dict[str, float]:
        """The validation of the model as it is now (this process only)."""
        ...

    def validate(self) -> dict[str, float]:
        """The validation, every process taking part (rank 0 measures, all get it)."""
        ...
