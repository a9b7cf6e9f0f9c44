"""The training loop: ``runtime.train(config, out)`` (``adl train`` is a thin layer over it).

One update: ``train.accumulate`` batches (token-count batches, bucketed by length), the
label-smoothed loss normalised by the update's target tokens, forward in ``train.precision``
(autocast, and a gradient scaler for float16: adl/runtime/training/precision.py), backward, gradient
clipping, Adam/AdamW at the schedule's rate. A non-finite loss or gradient
skips the update (counted); ``train.max_bad_steps`` of them in a row stop the run and leave
the last checkpoint as it was. Every ``train.valid_every`` updates: validation (perplexity,
accuracy, BLEU and chrF of greedy translations), the plateau schedule and early stopping,
then a checkpoint. Ctrl-C (or SIGTERM) finishes the update under way, writes a checkpoint
and returns.
"""

from __future__ import annotations

import dataclasses
import math
import signal
import threading
import time
from collections.abc import Callable
from contextlib import nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from adl.runtime.config import Config
from adl.runtime.data.batching import Batch
from adl.runtime.errors import TrainingStopped
from adl.runtime.logs import Progress, close_logger, duration
from adl.runtime.rundir import RunDir, RunLock, user_errors
from adl.runtime.training import distributed, policy, setup
from adl.runtime.training import precision as precision_mod
from adl.runtime.training.loss import token_loss
from adl.runtime.training.state import TrainerState

STEP_CALLBACK = Callable[[int, list[Batch]], None]
MIN_LOSS_SCALE = 2.0**-14  # fp16: overflows below this loss scale count as bad steps


@dataclass
class Summary:
    """How a run ended."""

    step: int  # updates done
    epoch: float  # epochs done (fractional)
    reason: str  # max_steps | max_epochs | max_minutes | early_stop | interrupted
    run_dir: Path
    last: Path | None = None  # checkpoints/last.pt
    best: Path | None = None  # checkpoints/best.pt (with validation)
    best_value: float | None = None  # the best train.best_metric seen
    metrics: dict[str, float] = field(default_factory=dict)  # the last validation
    skipped: int = 0  # updates skipped for a non-finite loss

    @property
    def interrupted(self) -> bool:
        return self.reason == "interrupted"

    def describe(self, metric: str) -> str:
        """The one line ``adl train`` prints at the end."""
        best = f", best {metric} {self.best_value:.4g}" if self.best_value is not None else ""
        return f"{self.run_dir}: {self.step:,} steps ({self.reason.replace('_', ' ')}){best}"


def train(
    config: Config, out: str | Path, resume: bool = False, on_step: STEP_CALLBACK | None = None
) -> Summary:
    """Train (or with ``resume``, continue) a run in directory ``out``."""
    trainer = Trainer(config, out, resume=resume)
    try:
        return trainer.run(on_step)
    finally:
        trainer.close()


class Trainer(TrainerState):
    """One run's training: set up by :func:`adl.runtime.training.setup.prepare` (the run
    folder, data, tokenizers, model, optimizer), the loop here (:meth:`run`), what is kept
    decided by :mod:`adl.runtime.training.policy`."""

    def __init__(self, config: Config, out: str | Path, resume: bool = False):
        self.cfg = config.validate()
        self.run_dir = RunDir(Path(out))
        t = self.cfg.train
        self.dist, self.device = distributed.setup(t.device)
        self.precision = precision_mod.select(t.precision, self.device)
        # the run's config.yaml and checkpoints record the precision chosen, not "auto"
        self.cfg = dataclasses.replace(
            self.cfg, train=dataclasses.replace(t, precision=self.precision.name)
        )
        self.main = self.dist.main
        self._threads = torch.get_num_threads()  # given back by close()
        self.lock = RunLock(self.run_dir)  # one process trains a run (rank 0 holds it)
        self.notes: list[str] = []  # warnings met before the log existed
        self.resumed_from: Path | None = None
        self.init: tuple[Path, dict[str, Any]] | None = None  # --init-from: (file, state)
        try:
            with user_errors(self.run_dir.root):
                setup.prepare(self, resume)
        except BaseException:
            self.close()
            raise

    # --- the loop ------------------------------------------------------------------------
    def _finished(self) -> str | None:
        t = self.cfg.train
        if t.max_steps and self.step >= t.max_steps:
            return "max_steps"
        if t.max_epochs and self.stream.epoch_progress >= t.max_epochs:
            return "max_epochs"
        if t.max_minutes and self.step > self._first_step:  # at least one update each run
            over = time.monotonic() - self._started >= 60 * t.max_minutes
            if distributed.agree(self.dist, True, over, self.device)[1]:  # ranks stop together
                return "max_minutes"
        return None

    def run(self, on_step: STEP_CALLBACK | None = None) -> Summary:
        with user_errors(self.run_dir.root):  # a full disk, a directory made read-only
            return self._run(on_step)

    def _run(self, on_step: STEP_CALLBACK | None) -> Summary:
        t = self.cfg.train
        progress = Progress(t.max_steps, start=self.step) if self.main else None
        self.console.progress = progress
        previous = self._install_signals()
        self._started = started = time.monotonic()
        self.valid_seconds = 0.0  # validation time of this run (since start or resume)
        self._first_step = self.step
        reason = self._finished()
        window = {"loss": 0.0, "nll": 0.0, "tokens": 0, "time": time.monotonic(), "steps": 0}
        try:
            while reason is None:
                batches = [next(self.stream) for _ in range(t.accumulate)]
                result = self._update(batches)
                stop = result["stop"]
                if result["ok"]:
                    if on_step is not None:
                        on_step(self.step, batches)
                    window["loss"] += result["loss"]
                    window["nll"] += result["nll"]
                    window["tokens"] += result["tokens"]
                    window["steps"] += 1
                    if progress is not None:
                        elapsed = max(time.monotonic() - window["time"], 1e-9)
                        progress.update(
                            self.step,
                            window["tokens"] * self.dist.world / elapsed,
                            window["loss"] / max(window["tokens"], 1),
                            result["lr"],
                        )
                    if self.step % t.log_every == 0:
                        self._log_train(window, result)
                        window = {
                            "loss": 0.0,
                            "nll": 0.0,
                            "tokens": 0,
                            "time": time.monotonic(),
                            "steps": 0,
                        }
                    reason = self._finished()
                    if self.step % t.valid_every == 0 or reason is not None:
                        if policy.checkpoint(self, validate=True):
                            reason = "early_stop"
                if stop:
                    reason = "interrupted"
            if self.saved_step != self.step:
                policy.checkpoint(self, validate=reason != "interrupted")
            if reason != "interrupted":
                policy.average(self)
        finally:
            self._restore_signals(previous)
            if progress is not None:
                progress.close()
            self.console.progress = None
        took = duration(time.monotonic() - started)
        if reason == "interrupted":
            self.log.warning(
                f"interrupted at step {self.step:,}: saved {self.run_dir.last}; "
                f"continue with: adl train --resume --out {self.run_dir.root}"
            )
        else:
            share = 100 * self.valid_seconds / max(time.monotonic() - started, 1e-9)
            self.log.info(
                f"done ({reason.replace('_', ' ')}) at step {self.step:,} in {took} "
                f"(validation {share:.0f} % of it)"
            )
        return Summary(
            self.step,
            self.stream.epoch_progress,
            reason,
            self.run_dir.root,
            self.run_dir.last if self.run_dir.last.exists() else None,
            self.run_dir.best if self.run_dir.best.exists() else None,
            self.best_value,
            dict(self.last_metrics),
            self.skipped,
        )

    def _update(self, batches: list[Batch]) -> dict[str, Any]:
        """One update over ``batches``; skipped when the loss or gradient is not finite."""
        t, o = self.cfg.train, self.cfg.optim
        self.train_model.train()
        tokens = sum(b.tgt_tokens for b in batches)
        loss_sum = torch.zeros((), device=self.device)
        nll_sum = torch.zeros((), device=self.device)
        for i, batch in enumerate(batches):
            batch = batch.to(self.device)
            sync = self.ddp is None or i == len(batches) - 1
            with nullcontext() if sync or self.ddp is None else self.ddp.no_sync():
                with self._autocast():
                    if self.needs_words:
                        logits = self.train_model(batch.src, batch.tgt_in, batch.src_words)
                    else:
                        logits = self.train_model(batch.src, batch.tgt_in)
                sums = token_loss(logits, batch.tgt_out, o.label_smoothing, count_correct=False)
                self.scaler.scale(sums.loss / tokens).backward()
            loss_sum += sums.loss.detach()
            nll_sum += sums.nll.detach()
        params = [p for p in self.model.parameters() if p.grad is not None]
        self.scaler.unscale_(self.optimizer)  # true gradients before clipping (fp16)
        norm = torch.nn.utils.clip_grad_norm_(
            params, o.clip_norm if o.clip_norm > 0 else float("inf")
        )
        loss, nll = float(loss_sum), float(nll_sum)
        finite = math.isfinite(loss) and bool(torch.isfinite(norm))
        ok, stop = distributed.agree(self.dist, finite, self._stop_signal is not None, self.device)
        lr = self.schedule.lr(self.step + 1)
        if ok:
            for group in self.optimizer.param_groups:
                group["lr"] = lr
            self.scaler.step(self.optimizer)  # optimizer.step() (fp16: on unscaled gradients)
            self.step += 1
            self.bad_in_row = 0
        elif self._overflow(loss):
            self.overflows += 1
            self.log.info(
                f"step {self.step + 1:,}: float16 gradients overflowed at loss scale "
                f"{self.scaler.get_scale():g}: update skipped, the scale halves "
                f"({self.overflows} in all)"
            )
        else:
            self.skipped += 1
            self.bad_in_row += 1
            self.log.warning(
                f"step {self.step + 1:,}: non-finite loss or gradient "
                f"(loss {loss}, gradient norm {float(norm)}): update skipped "
                f"({self.bad_in_row} in a row, {self.skipped} in all)"
            )
        self.scaler.update()  # fp16: lower the scale after an overflow, raise it now and then
        self.optimizer.zero_grad(set_to_none=True)
        if not ok and self.bad_in_row >= t.max_bad_steps:
            last = (
                f"the last good checkpoint is {self.run_dir.last} (step {self.saved_step:,})"
                if self.saved_step >= 0
                else "no checkpoint was written yet"
            )
            raise TrainingStopped(
                f"stopped: {self.bad_in_row} updates in a row had a non-finite loss or "
                f"gradient (train.max_bad_steps={t.max_bad_steps}); {last}. Lower optim.lr, "
                "clip gradients (optim.clip_norm) or check the data."
            )
        return {
            "ok": ok,
            "stop": stop,
            "loss": loss,
            "nll": nll,
            "tokens": tokens,
            "lr": lr,
            "norm": float(norm),
        }

    def _overflow(self, loss: float) -> bool:
        """Whether a skipped update is the gradient scaler's business (float16 gradients out
        of range at the current loss scale) rather than a bad step: the loss is finite and the
        scale is still above MIN_LOSS_SCALE (below it, lowering the scale cannot help)."""
        return (
            self.precision.scaled
            and math.isfinite(loss)
            and self.scaler.get_scale() >= MIN_LOSS_SCALE
        )

    def _log_train(self, window: dict[str, Any], result: dict[str, Any]) -> None:
        elapsed = max(time.monotonic() - window["time"], 1e-9)
        tokens = max(window["tokens"], 1)
        record = {
            "split": "train",
            "step": self.step,
            "epoch": round(self.stream.epoch_progress, 4),
            "loss": window["loss"] / tokens,
            "ppl": math.exp(min(window["nll"] / tokens, 100.0)),
            "lr": result["lr"],
            "grad_norm": result["norm"],
            "tokens_per_s": window["tokens"] * self.dist.world / elapsed,
            "skipped": self.skipped,
        }
        self.metrics.write(record)
        total = f"/{self.cfg.train.max_steps:,}" if self.cfg.train.max_steps else ""
        self.log.info(
            f"step {self.step:,}{total} | epoch {record['epoch']:.2f} | loss "
            f"{record['loss']:.4f} | ppl {record['ppl']:.2f} | lr {result['lr']:.3e} "
            f"| {record['tokens_per_s']:,.0f} tok/s"
            + (f" | skipped {self.skipped}" if self.skipped else "")
        )

    # --- signals -------------------------------------------------------------------------
    def _install_signals(self) -> dict[int, Any]:
        if threading.current_thread() is not threading.main_thread():
            return {}
        previous: dict[int, Any] = {}

        def handler(signum, frame):
            if self._stop_signal is not None:  # a second Ctrl-C: stop at once
                raise KeyboardInterrupt
            self._stop_signal = signum
            self.log.warning("stopping after this update (press Ctrl-C again to stop now)")

        for sig in (signal.SIGINT, signal.SIGTERM):
            previous[sig] = signal.signal(sig, handler)
        return previous

    def _restore_signals(self, previous: dict[int, Any]) -> None:
        for sig, handler in previous.items():
            signal.signal(sig, handler)

    def close(self) -> None:
        """Give back what the trainer holds (log file, TensorBoard writer, threads)."""
        torch.set_num_threads(self._threads)
        if getattr(self, "stream", None) is not None:
            self.stream.close()
        if hasattr(self, "metrics"):
            self.metrics.close()
        if hasattr(self, "log"):
            close_logger(self.log)
        self.lock.release()
