"""What a run's trainer holds: the fields that set-up (:mod:`.setup`) fills, the loop
(:mod:`.train`) advances and the checkpoint policy (:mod:`.policy`) saves and restores, and
the validation of the model as it stands. Set-up and policy work on this state, so that they
import it and not the loop that uses them."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import torch

from adl.runtime.config import Config
from adl.runtime.data.data import ParallelData
from adl.runtime.data.prefetch import Prefetcher
from adl.runtime.data.tokencache import TokenCache
from adl.runtime.data.tokenizer import Tokenizers
from adl.runtime.logs import Metrics
from adl.runtime.rundir import RunDir, RunLock
from adl.runtime.training import distributed
from adl.runtime.training.schedule import Schedule
from adl.runtime.training.validate import validate


class TrainerState:
    """The state of one run's training (:class:`~adl.runtime.training.train.Trainer` adds
    the loop)."""

    # set by Trainer.__init__
    cfg: Config
    run_dir: RunDir
    dist: distributed.Dist
    device: torch.device
    precision: Any
    main: bool
    lock: RunLock
    notes: list[str]  # warnings met before the log existed
    resumed_from: Path | None
    init: tuple[Path, dict[str, Any]] | None  # --init-from: (file, state)
    # set up by setup.prepare (close() also runs after a failed one)
    log: logging.Logger
    console: Any
    metrics: Metrics
    cache: TokenCache | None
    tokenizers: Tokenizers
    train_data: ParallelData
    valid_data: ParallelData | None
    positions: tuple[int, int]  # the longest source and target the model takes (0: any)
    length_ratio: float
    model: Any  # the compiled Seq2Seq or JointModel
    train_model: Any  # the model as trained: itself, under DDP, or compiled
    ddp: Any
    needs_words: bool
    optimizer: torch.optim.Optimizer
    scaler: Any
    schedule: Schedule
    stream: Prefetcher
    # the bookkeeping that checkpoints keep (adl.runtime.training.policy)
    step: int
    skipped: int  # non-finite updates skipped, in all
    overflows: int  # fp16: updates skipped while the gradient scaler lowered its scale
    bad_in_row: int
    best_value: float | None
    best_loss: float | None  # validation loss there (breaks capped-ppl ties)
    best_step: int | None
    stale: int  # validations without a better best (patience)
    history: list[dict[str, Any]]
    last_metrics: dict[str, float]
    saved_step: int
    valid_seconds: float  # validation time of this run (since start or resume)
    _started: float
    _first_step: int
    _stop_signal: int | None

    def _autocast(self):
        return self.precision.autocast()

    def _validate(self) -> dict[str, float]:
        metrics = self._measure() if self.main and self.valid_data is not None else {}
        return distributed.broadcast(self.dist, metrics)

    def _measure(self) -> dict[str, float]:
        """The validation of the model as it is now (this process only)."""
        t = self.cfg.train
        assert self.valid_data is not None
        return validate(
            self.model,
            self.valid_data,
            self.tokenizers,
            self.device,
            max_tokens=t.max_tokens,
            smoothing=self.cfg.optim.label_smoothing,
            bleu=t.bleu,
            bleu_sentences=t.valid_bleu_sentences,
            len_a=t.decode_len_a,
            len_b=t.decode_len_b,
            autocast=self._autocast,
        )
