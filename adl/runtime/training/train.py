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
import warnings
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
from adl.runtime.training import distributed, policy
from adl.runtime.training import precision as precision_mod
from adl.runtime.training.loss import forward, token_loss
from adl.runtime.training.prepare import prepare
from adl.runtime.training.state import Clock, Place
from adl.runtime.training.validate import validate

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


@dataclass(frozen=True)
class Update:
    """What one update did."""

    ok: bool  # the update was made (its loss and gradient were finite)
    stop: bool  # a stop signal came (Ctrl-C, SIGTERM): the loop ends after this update
    loss: float  # the label-smoothed loss, summed over the update's target tokens
    nll: float  # the negative log-likelihood, summed likewise
    tokens: int  # the update's target tokens
    lr: float  # the learning rate of the update
    norm: float  # the gradient's global norm before clipping

    def __getitem__(self, name: str) -> Any:
        """``update["loss"]``: the previous release's dict access, kept one release."""
        warnings.warn(
            f"Trainer._update returns an Update: read update.{name}, not update[{name!r}] "
            "(the dict access goes in the next release)",
            DeprecationWarning,
            stacklevel=2,
        )
        return getattr(self, name)


class Trainer:
    """One run's training: where it runs (:attr:`place`), what it starts from
    (:attr:`state`, made by :func:`adl.runtime.training.prepare.prepare`: the data,
    tokenizers, model, rate and optimizer, and the bookkeeping), the loop here
    (:meth:`run`), what is kept decided by :mod:`adl.runtime.training.policy`."""

    def __init__(self, config: Config, out: str | Path, resume: bool = False):
        cfg = config.validate()
        run_dir = RunDir(Path(out))
        t = cfg.train
        dist, device = distributed.setup(t.device)
        chosen = precision_mod.select(t.precision, device)
        # the run's config.yaml and checkpoints record the precision chosen, not "auto"
        cfg = dataclasses.replace(cfg, train=dataclasses.replace(t, precision=chosen.name))
        # one process trains a run (rank 0 holds the lock)
        self.place = Place(cfg, run_dir, dist, device, chosen, RunLock(run_dir))
        self.cfg, self.run_dir = cfg, run_dir  # the place's, at hand
        self._threads = torch.get_num_threads()  # given back by close()
        self._stop_signal: int | None = None  # the signal that asked to stop (Ctrl-C)
        self.clock = Clock(time.monotonic(), 0)  # run() starts it again
        try:
            with user_errors(run_dir.root):
                self.state = prepare(self.place, resume)
        except BaseException:
            self._release()
            raise

    @property
    def step(self) -> int:
        """Updates done."""
        return self.state.book.step

    # --- validation ------------------------------------------------------------------------
    def validate(self) -> dict[str, float]:
        """The validation, every process taking part (rank 0 measures, all get it)."""
        st = self.state
        metrics = self.measure() if self.place.main and st.valid_data is not None else {}
        return distributed.broadcast(self.place.dist, metrics)

    def measure(self) -> dict[str, float]:
        """The validation of the model as it is now (this process only)."""
        t, st = self.cfg.train, self.state
        assert st.valid_data is not None
        return validate(
            st.model,
            st.valid_data,
            st.tokenizers,
            self.place.device,
            max_tokens=t.max_tokens,
            smoothing=self.cfg.optim.label_smoothing,
            bleu=t.bleu,
            bleu_sentences=t.valid_bleu_sentences,
            len_a=t.decode_len_a,
            len_b=t.decode_len_b,
            autocast=self.place.precision.autocast,
        )

    # --- the loop ------------------------------------------------------------------------
    def _finished(self) -> str | None:
        t, step = self.cfg.train, self.step
        if t.max_steps and step >= t.max_steps:
            return "max_steps"
        if t.max_epochs and self.state.stream.epoch_progress >= t.max_epochs:
            return "max_epochs"
        if t.max_minutes and step > self.clock.first_step:  # at least one update each run
            over = time.monotonic() - self.clock.started >= 60 * t.max_minutes
            dist = self.place.dist
            if distributed.agree(dist, True, over, self.place.device)[1]:  # ranks stop together
                return "max_minutes"
        return None

    def run(self, on_step: STEP_CALLBACK | None = None) -> Summary:
        with user_errors(self.run_dir.root):  # a full disk, a directory made read-only
            return self._run(on_step)

    def _run(self, on_step: STEP_CALLBACK | None) -> Summary:
        t, st = self.cfg.train, self.state
        progress = Progress(t.max_steps, start=self.step) if self.place.main else None
        st.console.progress = progress
        previous = self._install_signals()
        self.clock = Clock(time.monotonic(), self.step)
        started = self.clock.started
        reason = self._finished()
        window = Window(time.monotonic())
        try:
            while reason is None:
                batches = [next(st.stream) for _ in range(t.accumulate)]
                done = self._update(batches)
                if done.ok:
                    if on_step is not None:
                        on_step(self.step, batches)
                    window.add(done)
                    if progress is not None:
                        rate = window.tokens * self.place.dist.world / window.seconds()
                        progress.update(
                            self.step, rate, window.loss / max(window.tokens, 1), done.lr
                        )
                    if self.step % t.log_every == 0:
                        self._log_train(window, done)
                        window = Window(time.monotonic())
                    reason = self._finished()
                    if self.step % t.valid_every == 0 or reason is not None:
                        if policy.checkpoint(self, validate=True):
                            reason = "early_stop"
                if done.stop:
                    reason = "interrupted"
            if st.book.saved_step != self.step:
                policy.checkpoint(self, validate=reason != "interrupted")
            if reason != "interrupted":
                policy.average(self)
        finally:
            self._restore_signals(previous)
            if progress is not None:
                progress.close()
            st.console.progress = None
        took = duration(time.monotonic() - started)
        if reason == "interrupted":
            st.log.warning(
                f"interrupted at step {self.step:,}: saved {self.run_dir.last}; "
                f"continue with: adl train --resume --out {self.run_dir.root}"
            )
        else:
            share = 100 * self.clock.valid_seconds / max(time.monotonic() - started, 1e-9)
            st.log.info(
                f"done ({reason.replace('_', ' ')}) at step {self.step:,} in {took} "
                f"(validation {share:.0f} % of it)"
            )
        return Summary(
            self.step,
            st.stream.epoch_progress,
            reason,
            self.run_dir.root,
            self.run_dir.last if self.run_dir.last.exists() else None,
            self.run_dir.best if self.run_dir.best.exists() else None,
            st.book.best_value,
            dict(st.book.last_metrics),
            st.book.skipped,
        )

    def _update(self, batches: list[Batch]) -> Update:
        """One update over ``batches``; skipped when the loss or gradient is not finite."""
        t, o, st, book = self.cfg.train, self.cfg.optim, self.state, self.state.book
        device = self.place.device
        st.train_model.train()
        tokens = sum(b.tgt_tokens for b in batches)
        loss_sum = torch.zeros((), device=device)
        nll_sum = torch.zeros((), device=device)
        for i, batch in enumerate(batches):
            batch = batch.to(device)
            sync = st.ddp is None or i == len(batches) - 1
            with nullcontext() if sync or st.ddp is None else st.ddp.no_sync():
                with self.place.precision.autocast():
                    logits = forward(st.train_model, batch, st.needs_words)
                sums = token_loss(logits, batch.tgt_out, o.label_smoothing, count_correct=False)
                st.scaler.scale(sums.loss / tokens).backward()
            loss_sum += sums.loss.detach()
            nll_sum += sums.nll.detach()
        params = [p for p in st.model.parameters() if p.grad is not None]
        st.scaler.unscale_(st.optimizer)  # true gradients before clipping (fp16)
        norm = torch.nn.utils.clip_grad_norm_(
            params, o.clip_norm if o.clip_norm > 0 else float("inf")
        )
        loss, nll = float(loss_sum), float(nll_sum)
        finite = math.isfinite(loss) and bool(torch.isfinite(norm))
        asked = self._stop_signal is not None
        ok, stop = distributed.agree(self.place.dist, finite, asked, device)
        lr = st.schedule.lr(book.step + 1)
        if ok:
            st.schedule.apply(st.optimizer, book.step + 1)
            st.scaler.step(st.optimizer)  # optimizer.step() (fp16: on unscaled gradients)
            book.step += 1
            book.bad_in_row = 0
        elif self._overflow(loss):
            book.overflows += 1
            st.log.info(
                f"step {book.step + 1:,}: float16 gradients overflowed at loss scale "
                f"{st.scaler.get_scale():g}: update skipped, the scale halves "
                f"({book.overflows} in all)"
            )
        else:
            book.skipped += 1
            book.bad_in_row += 1
            st.log.warning(
                f"step {book.step + 1:,}: non-finite loss or gradient "
                f"(loss {loss}, gradient norm {float(norm)}): update skipped "
                f"({book.bad_in_row} in a row, {book.skipped} in all)"
            )
        st.scaler.update()  # fp16: lower the scale after an overflow, raise it now and then
        st.optimizer.zero_grad(set_to_none=True)
        if not ok and book.bad_in_row >= t.max_bad_steps:
            last = (
                f"the last good checkpoint is {self.run_dir.last} (step {book.saved_step:,})"
                if book.saved_step >= 0
                else "no checkpoint was written yet"
            )
            raise TrainingStopped(
                f"stopped: {book.bad_in_row} updates in a row had a non-finite loss or "
                f"gradient (train.max_bad_steps={t.max_bad_steps}); {last}. Lower optim.lr, "
                "clip gradients (optim.clip_norm) or check the data."
            )
        return Update(ok, stop, loss, nll, tokens, lr, float(norm))

    def _overflow(self, loss: float) -> bool:
        """Whether a skipped update is the gradient scaler's business (float16 gradients out
        of range at the current loss scale) rather than a bad step: the loss is finite and the
        scale is still above MIN_LOSS_SCALE (below it, lowering the scale cannot help)."""
        return (
            self.place.precision.scaled
            and math.isfinite(loss)
            and self.state.scaler.get_scale() >= MIN_LOSS_SCALE
        )

    def _log_train(self, window: Window, done: Update) -> None:
        st = self.state
        tokens = max(window.tokens, 1)
        record = {
            "split": "train",
            "step": self.step,
            "epoch": round(st.stream.epoch_progress, 4),
            "loss": window.loss / tokens,
            "ppl": math.exp(min(window.nll / tokens, 100.0)),
            "lr": done.lr,
            "grad_norm": done.norm,
            "tokens_per_s": window.tokens * self.place.dist.world / window.seconds(),
            "skipped": st.book.skipped,
        }
        st.metrics.write(record)
        total = f"/{self.cfg.train.max_steps:,}" if self.cfg.train.max_steps else ""
        st.log.info(
            f"step {self.step:,}{total} | epoch {record['epoch']:.2f} | loss "
            f"{record['loss']:.4f} | ppl {record['ppl']:.2f} | lr {done.lr:.3e} "
            f"| {record['tokens_per_s']:,.0f} tok/s"
            + (f" | skipped {st.book.skipped}" if st.book.skipped else "")
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
            self.state.log.warning("stopping after this update (press Ctrl-C again to stop now)")

        for sig in (signal.SIGINT, signal.SIGTERM):
            previous[sig] = signal.signal(sig, handler)
        return previous

    def _restore_signals(self, previous: dict[int, Any]) -> None:
        for sig, handler in previous.items():
            signal.signal(sig, handler)

    def close(self) -> None:
        """Give back what the trainer holds (batch thread, log file, TensorBoard writer,
        threads, the run's lock)."""
        self.state.close()
        close_logger(self.state.log)
        self._release()

    def _release(self) -> None:
        torch.set_num_threads(self._threads)
        self.place.lock.release()


@dataclass
class Window:
    """The updates since the last training log line."""

    started: float  # time.monotonic()
    loss: float = 0.0
    nll: float = 0.0
    tokens: int = 0
    steps: int = 0

    def add(self, done: Update) -> None:
        self.loss += done.loss
        self.nll += done.nll
        self.tokens += done.tokens
        self.steps += 1

    def seconds(self) -> float:
        return max(time.monotonic() - self.started, 1e-9)
