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
import logging
import math
import random
import signal
import threading
import time
from collections.abc import Callable
from contextlib import nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

import adl.errors
import adl.models
from adl.runtime import config as config_mod
from adl.runtime.config import Config
from adl.runtime.data.batching import Batch, BatchStream
from adl.runtime.data.corpus import TextPairs, read_split
from adl.runtime.data.data import Limits, ParallelData, encode_pairs, tokenize
from adl.runtime.data.prefetch import Prefetcher
from adl.runtime.data.tokencache import DEFAULT_NAME, TokenCache
from adl.runtime.data.tokenizer import Tokenizers, make_tokenizers
from adl.runtime.errors import CheckpointError, RunDirError, TrainingStopped, UserError
from adl.runtime.logs import Metrics, Progress, close_logger, duration, make_logger
from adl.runtime.model import averaging
from adl.runtime.model import checkpoint as ckpt
from adl.runtime.model.build import build_model, check_model, position_limits
from adl.runtime.rundir import RunDir, RunLock, held_for_me, user_errors
from adl.runtime.training import distributed
from adl.runtime.training import precision as precision_mod
from adl.runtime.training.loss import token_loss
from adl.runtime.training.schedule import Schedule
from adl.runtime.training.validate import signatures, validate

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


class Trainer:
    log: logging.Logger  # set up by _setup (close() also runs after a failed one)
    metrics: Metrics

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
                self._setup(resume)
        except BaseException:
            self.close()
            raise

    def _setup(self, resume: bool) -> None:
        t = self.cfg.train
        if t.threads:
            torch.set_num_threads(t.threads)
        state = self._check_run_dir(resume)
        m = self.cfg.model
        if not state and (m.encoder or m.joint or not t.init_from):
            check_model(self.cfg.model)  # bad .adl files and data stop before any write
        if not state and t.init_from:
            path = ckpt.resolve(t.init_from, "best")
            self.init = (path, ckpt.load(path))
        text, valid_text = self._read_train(), self._read_valid()
        if self.main:
            self.run_dir.root.mkdir(parents=True, exist_ok=True)
        distributed.barrier(self.dist)
        self.log, self.console = make_logger(
            f"runtime.train.{id(self)}",
            self.run_dir.log if self.main else None,
            quiet=not self.main,
        )
        self.metrics = Metrics(
            self.run_dir.metrics if self.main else None,
            self.run_dir.root / "tensorboard" if t.tensorboard else None,
        )
        self._stop_signal: int | None = None
        self.log.info(
            f"{'resuming' if state else 'training'} in {self.run_dir.root}"
            + (f" from step {state['step']:,}" if state else "")
            + (f" from the weights of {self.init[0]}" if self.init else "")
        )
        if self.lock.taken_over is not None:
            self.log.warning(
                f"{self.run_dir.lock}: taking over the lock of a process that is no longer "
                f"running ({self.lock.taken_over.describe()})"
            )
        for note in self.notes:
            self.log.warning(note)

        random.seed(t.seed)
        torch.manual_seed(t.seed)
        self.cache = self._token_cache()
        self.tokenizers = self._tokenizers(state, text)
        self.train_data, self.valid_data = self._data(text, valid_text, state)
        self.length_ratio = self.train_data.length_ratio
        self.model = self._model(state).to(self.device)
        self.needs_words = bool(getattr(self.model, "needs_src_words", False))
        self.optimizer = self._optimizer()
        self.scaler = self.precision.scaler()  # float16 loss scaling; a pass-through otherwise
        self.schedule = Schedule(self.cfg.schedule, self.cfg.optim.lr, t.max_steps)
        self.stream = Prefetcher(  # batches made ahead by a thread, pinned for a GPU
            BatchStream(
                self.train_data,
                t.max_tokens,
                t.max_sentences,
                t.seed,
                self.dist.rank,
                self.dist.world,
                self.tokenizers.word_ids if self.needs_words else None,
            ),
            self.device,
            t.prefetch,
        )
        # bookkeeping saved in checkpoints
        self.step = 0
        self.skipped = 0  # non-finite updates skipped, in all
        self.overflows = 0  # fp16: updates skipped while the gradient scaler lowered its scale
        self.bad_in_row = 0
        self.best_value: float | None = None
        self.best_loss: float | None = None  # validation loss there (breaks capped-ppl ties)
        self.best_step: int | None = None
        self.stale = 0  # validations without a better best (patience)
        self.history: list[dict[str, Any]] = []
        self.last_metrics: dict[str, float] = {}
        self.saved_step = -1
        self._started = time.monotonic()  # run() starts the clock again
        self.valid_seconds = 0.0  # validation time of this run (since start or resume)
        # different dropout on each rank; a resume restores the exact states below
        torch.manual_seed(t.seed * 7919 + 1 + self.dist.rank)
        if state:
            self._restore(state)
        self.train_model = self.model
        if self.dist.enabled:
            from torch.nn.parallel import DistributedDataParallel as DDP

            self.ddp: DDP | None = DDP(
                self.model,
                device_ids=[self.device.index] if self.device.type == "cuda" else None,
                find_unused_parameters=t.find_unused,
            )
            self.train_model = self.ddp
        else:
            self.ddp = None
        if t.compile:
            self.log.info("torch.compile: the first updates compile the model (minutes)")
            self.train_model = torch.compile(self.train_model)
        if self.main:
            config_mod.write(self.cfg, self.run_dir.config)
        self._describe()

    # --- set-up --------------------------------------------------------------------------
    def _check_run_dir(self, resume: bool) -> dict[str, Any] | None:
        run = self.run_dir
        if resume and not (run.last.is_file() or run.step_files()):
            raise UserError(f"{run.root}: nothing to resume (no checkpoints/last.pt)")
        self._lock(create=not resume)  # before anything of the run is read or written
        if resume:
            if self.main:  # sets damaged checkpoints aside: one process does it
                state, self.resumed_from, self.notes = ckpt.resume_state(run)
            distributed.barrier(self.dist)
            if not self.main:
                state, self.resumed_from = ckpt.load(run.last), run.last
            return state
        if run.holds_a_run():
            raise UserError(
                f"{run.root} already holds a run: continue it with --resume, "
                "or choose another --out"
            )
        return None

    def _lock(self, create: bool) -> None:
        """Rank 0 takes the run's lock, unless the ``adl train --nproc N`` that started
        it holds it; every rank stops when it cannot be had."""
        error = None
        if self.main and not held_for_me(self.run_dir):
            try:
                self.lock.acquire(create=create)
            except UserError as exc:
                error = exc
        if self.dist.enabled:
            message = distributed.broadcast(self.dist, str(error) if error else None)
            if message and error is None:
                raise RunDirError(message)
        if error is not None:
            raise error

    def _read_train(self) -> TextPairs:
        """The training text, checked before anything is trained on it."""
        d = self.cfg.data
        if not (d.train or (d.train_src and d.train_tgt)):
            raise UserError(
                "no training data: give --train PREFIX --langs SRC TGT, --train-src and "
                "--train-tgt, or one file of pairs: --train FILE.tsv or FILE.jsonl"
            )
        text = read_split(d, "train")
        assert text is not None  # the files are given (checked above)
        return text

    def _read_valid(self) -> TextPairs | None:
        d = self.cfg.data
        if not (d.valid or d.valid_src or d.valid_tgt):
            return None
        if not (d.valid or (d.valid_src and d.valid_tgt)):
            raise UserError(
                "give both validation files (--valid PREFIX, or --valid-src and --valid-tgt)"
            )
        text = read_split(d, "valid")
        assert text is not None  # the files are given (checked above)
        text.first(d.valid_max)
        return text

    def _token_cache(self) -> TokenCache | None:
        d = self.cfg.data
        if not d.cache:
            return None
        where = Path(d.cache_dir) if d.cache_dir else self.run_dir.root.parent / DEFAULT_NAME
        return TokenCache(where, warn=self.log.warning)

    def _tokenizers(self, state: dict[str, Any] | None, text: TextPairs) -> Tokenizers:
        d = self.cfg.data
        if state:
            return Tokenizers.from_state(state["tokenizer"])
        if self.main:
            started = time.monotonic()
            given = d.spm_model or d.spm_src or d.spm_tgt
            if self.init and not (given or self.cfg.train.new_tokenizer):
                tok = Tokenizers.from_state(self.init[1]["tokenizer"])
                tok.save(self.run_dir.tokenizer)
                how = f"of {self.init[0]}"
            else:
                hits = self.cache.hits["sentencepiece"] if self.cache else 0
                tok = make_tokenizers(d, self.run_dir.tokenizer, text, self.cache)
                how = (
                    "given"
                    if given
                    else f"from the cache {self.cache.directory}"
                    if self.cache and self.cache.hits["sentencepiece"] > hits
                    else f"trained in {time.monotonic() - started:.1f}s"
                )
            kind = "joint" if tok.joint else "separate"
            self.log.info(
                f"tokenizer: {kind} sentencepiece ({how}): vocabulary "
                f"{tok.src_vocab:,}" + ("" if tok.joint else f" / {tok.tgt_vocab:,}")
            )
        distributed.barrier(self.dist)
        return Tokenizers.load(self.run_dir.tokenizer)

    def _data(
        self, text: TextPairs, valid_text: TextPairs | None, state: dict[str, Any] | None
    ) -> tuple[ParallelData, ParallelData | None]:
        """Tokenized (or from the token cache) and filtered by the length limits: data.max_len
        and the model's learned positions on both sets, data.max_ratio on training data."""
        d = self.cfg.data
        self.positions = self._position_limits(state)
        limits = Limits(d.max_len, d.max_ratio, *self.positions)
        train = self._encode(text, limits, "training data")
        valid = None
        if valid_text is not None:
            valid_limits = Limits(d.max_len, 0.0, *self.positions)
            valid = self._encode(valid_text, valid_limits, "validation data", keep_text=True)
        return train, valid

    def _encode(
        self, text: TextPairs, limits: Limits, what: str, keep_text: bool = False
    ) -> ParallelData:
        tok, cache = self.tokenizers, self.cache
        started = time.monotonic()
        hits = cache.hits["tokens"] if cache else 0
        make = lambda: tokenize(text, tok.encode_src, tok.encode_tgt)
        tokens = cache.tokens(text, tok, make) if cache else make()
        how = (
            "tokens from the cache"
            if cache and cache.hits["tokens"] > hits
            else f"tokenized in {time.monotonic() - started:.1f}s"
        )
        name = f"{what} ({text.name})"
        data = encode_pairs(
            text, tok.encode_src, tok.encode_tgt, limits=limits, tokens=tokens,
            keep_text=keep_text, name=name,
        )  # fmt: skip
        self.log.info(f"{data.stats.describe(name)}; {how}")
        loud = data.stats.warning(name)
        if loud:
            self.log.warning(loud)
        return data

    def _position_limits(self, state: dict[str, Any] | None) -> tuple[int, int]:
        """The longest source and target the model's learned positions take (0: any): of
        the .adl files, or of the checkpoint the model comes from (--resume, --init-from
        without files)."""
        m = self.cfg.model
        source = None
        if state:
            source = (self.resumed_from or self.run_dir.last, state)
        elif self.init and not (m.encoder or m.joint):
            source = self.init
        if source is None:
            return position_limits(m)
        where, found = source
        try:
            return position_limits(spec=found.get("spec"))
        except adl.errors.ADLError as exc:
            raise CheckpointError(
                f"{where}: its model description does not build:\n{exc}"
            ) from None

    def _model(self, state: dict[str, Any] | None):
        if state:  # the checkpoint's ADL text is input: checked (bounded) before building
            where = self.resumed_from or self.run_dir.last
            try:
                model = adl.models.build_from_spec(state.get("spec"))
            except adl.errors.ADLError as exc:
                raise ckpt.CheckpointError(
                    f"{where}: its model description does not build:\n{exc}"
                ) from None
            try:
                model.load_state_dict(state["model"])
            except RuntimeError:
                raise ckpt.CheckpointError(
                    f"{where}: its weights do not fit the model it describes"
                ) from None
            return model
        if self.init:
            return self._init_model(*self.init)
        return build_model(
            self.cfg.model, self.tokenizers.src_vocab, self.tokenizers.tgt_vocab, self.length_ratio
        )

    def _init_model(self, path: Path, source: dict[str, Any]):
        """--init-from: the model (of the .adl files given, else of the checkpoint's own
        description) with the checkpoint's weights; the architecture must match."""
        m = self.cfg.model
        if m.encoder or m.joint:
            model = build_model(
                m, self.tokenizers.src_vocab, self.tokenizers.tgt_vocab, self.length_ratio
            )
        else:
            theirs = Tokenizers.from_state(source["tokenizer"])
            sizes = (theirs.src_vocab, theirs.tgt_vocab)
            mine = (self.tokenizers.src_vocab, self.tokenizers.tgt_vocab)
            if sizes != mine:
                raise CheckpointError(
                    f"--init-from {path}: its model has vocabularies of {sizes[0]:,} / "
                    f"{sizes[1]:,} pieces, the tokenizer of this run {mine[0]:,} / "
                    f"{mine[1]:,}: reuse its tokenizer (no --new-tokenizer)"
                )
            try:
                model = adl.models.build_from_spec(source.get("spec"))
            except adl.errors.ADLError as exc:
                raise CheckpointError(
                    f"{path}: its model description does not build:\n{exc}"
                ) from None
        mismatch = ckpt.first_mismatch(model.state_dict(), source["model"])
        if mismatch:
            raise CheckpointError(
                f"--init-from {path}: another architecture than this model: {mismatch}"
            )
        model.load_state_dict(source["model"])
        return model

    def _optimizer(self) -> torch.optim.Optimizer:
        o = self.cfg.optim
        kind = torch.optim.AdamW if o.optimizer == "adamw" else torch.optim.Adam
        return kind(
            self.model.parameters(),
            lr=o.lr,
            betas=tuple(o.betas),
            eps=o.eps,
            weight_decay=o.weight_decay,
        )

    def _describe(self) -> None:
        params = sum(p.numel() for p in self.model.parameters())
        kind = "joint" if self.cfg.model.joint else "encoder-decoder"
        self.log.info(
            f"model: {kind}, {params:,} parameters, d_model {self.cfg.model.d_model}; "
            f"length ratio {self.length_ratio:.3f}"
        )
        t = self.cfg.train
        where = f"{self.device}" + (f", {self.dist.world} processes" if self.dist.enabled else "")
        self.log.info(
            f"training on {where}, {self.precision.describe()}, {t.max_tokens:,} tokens a batch x "
            f"{t.accumulate} per update; schedule {self.cfg.schedule.kind}, "
            f"lr {self.cfg.optim.lr:g}"
        )
        if self.valid_data is None and self.cfg.schedule.kind == "plateau":
            self.log.warning(
                "schedule.kind=plateau decays when the validation perplexity "
                "stalls, but there is no validation set: the rate stays "
                f"{self.cfg.optim.lr:g} (give --valid)"
            )
        if self.valid_data is not None and t.bleu:
            sig = signatures()
            n, k = len(self.valid_data), t.valid_bleu_sentences
            sample = f"a fixed sample of {k:,} of the" if 0 < k < n else "all"
            self.log.info(
                f"validation: loss on all {n:,} pairs, BLEU and chrF of greedy translations of "
                f"{sample} {n:,} sentences (train.valid_bleu_sentences); sacrebleu "
                f"signatures: BLEU {sig['bleu']}; chrF {sig['chrf']}"
            )

    def _autocast(self):
        return self.precision.autocast()

    # --- state ---------------------------------------------------------------------------
    def _rng_state(self) -> dict[str, Any]:
        state = {"torch": torch.get_rng_state(), "python": random.getstate()}
        if self.device.type == "cuda":
            state["cuda"] = torch.cuda.get_rng_state(self.device)
        return state

    def _set_rng_state(self, state: dict[str, Any]) -> None:
        torch.set_rng_state(state["torch"])
        random.setstate(state["python"])
        if self.device.type == "cuda" and "cuda" in state:
            torch.cuda.set_rng_state(state["cuda"], self.device)

    def _restore(self, state: dict[str, Any]) -> None:
        self.optimizer.load_state_dict(state["optimizer"])
        self.schedule.load_state_dict(state["schedule"])
        self.stream.load_state_dict(state["data"])
        tr = state["trainer"]
        self.step, self.skipped = int(state["step"]), int(tr["skipped"])
        self.best_value, self.best_step = tr["best_value"], tr["best_step"]
        self.best_loss = tr.get("best_loss")
        self.stale, self.history = int(tr["stale"]), list(tr["history"])
        self.last_metrics = dict(state.get("metrics") or {})
        self.overflows = int(tr.get("overflows", 0))
        if self.scaler.is_enabled() and state.get("scaler"):
            self.scaler.load_state_dict(state["scaler"])  # the loss scale goes on where it was
        self.saved_step = self.step
        rngs = state["rng"]
        if len(rngs) == self.dist.world:
            self._set_rng_state(rngs[self.dist.rank])
        else:
            self.log.warning(
                f"the run was saved by {len(rngs)} processes and resumes in "
                f"{self.dist.world}: random states and the epoch's batches "
                "start afresh"
            )
        if self.main:
            self.metrics.truncate_after(self.step)

    def _state(self, rngs: list[dict[str, Any]]) -> dict[str, Any]:
        return {
            "format": ckpt.FORMAT,
            "step": self.step,
            "epoch": self.stream.epoch_progress,
            "spec": self.model.spec.to_dict(),
            "model": self.model.state_dict(),
            "optimizer": self.optimizer.state_dict(),
            "schedule": self.schedule.state_dict(),
            "data": self.stream.state_dict(),
            "rng": rngs,
            "scaler": self.scaler.state_dict(),  # {} unless precision fp16
            "trainer": {
                "skipped": self.skipped,
                "overflows": self.overflows,
                "best_value": self.best_value,
                "best_loss": self.best_loss,
                "best_step": self.best_step,
                "stale": self.stale,
                "history": self.history,
                "metric": self.cfg.train.best_metric,
            },
            "metrics": self.last_metrics,
            "config": self.cfg.to_dict(),
            "tokenizer": self.tokenizers.to_state(),
            "length_ratio": self.length_ratio,
        }

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
                        if self._checkpoint(validate=True):
                            reason = "early_stop"
                if stop:
                    reason = "interrupted"
            if self.saved_step != self.step:
                self._checkpoint(validate=reason != "interrupted")
            if reason != "interrupted":
                self._average()
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
                sums = token_loss(logits, batch.tgt_out, o.label_smoothing)
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

    # --- validation and checkpoints --------------------------------------------------------
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
            max_out=self.positions[1],
            autocast=self._autocast,
        )

    def _checkpoint(self, validate: bool) -> bool:
        """Validate (all ranks take part), update the schedule and the best, write the
        checkpoint (rank 0). True when early stopping says stop."""
        t = self.cfg.train
        started = time.monotonic()
        metrics = self._validate() if validate else {}
        seconds = time.monotonic() - started
        stop = False
        improved = False
        if metrics:
            self.last_metrics = metrics
            if self.schedule.on_validation(metrics["ppl"], metrics.get("loss")):
                self.log.info(
                    f"validation perplexity has not improved for "
                    f"{self.cfg.schedule.patience} validations: learning rate "
                    f"x{self.cfg.schedule.factor} -> "
                    f"{self.schedule.lr(self.step + 1):.3e}"
                )
            value = metrics.get(t.best_metric)
            if value is None:
                raise UserError(
                    f"train.best_metric={t.best_metric} is not measured "
                    "(bleu and chrf need train.bleu=true)"
                )
            loss = metrics.get("loss")
            improved = ckpt.better(t.best_metric, value, loss, self.best_value, self.best_loss)
            if improved:
                self.best_value, self.best_loss = value, loss
                self.best_step, self.stale = self.step, 0
            else:
                self.stale += 1
                stop = bool(t.patience) and self.stale >= t.patience
            self.history.append({"step": self.step, "value": value, "loss": loss})
            self.valid_seconds += seconds
            record = {"split": "valid", "step": self.step, **metrics, "seconds": round(seconds, 3)}
            self.metrics.write(record)
            shown = _shown(metrics)
            share = self.valid_seconds / max(time.monotonic() - self._started, 1e-9)
            self.log.info(
                f"validation at step {self.step:,}: {shown}"
                + (
                    " (best)"
                    if improved
                    else f" (best {self.best_value:.4g} at step {self.best_step:,})"
                )
                + f" | {seconds:.1f}s, validation {100 * min(share, 1):.0f} % of the run so far"
            )
        rngs = distributed.gather(self.dist, self._rng_state())
        if self.main:
            path = self.run_dir.step_file(self.step)
            ckpt.save(self._state(rngs), path)
            ckpt.publish(path, self.run_dir.last)
            if improved:
                ckpt.publish(path, self.run_dir.best)
            ckpt.prune(self.run_dir, t.keep_last, self._best_steps())
        self.saved_step = self.step
        if stop:
            self.log.info(
                f"early stop: {t.best_metric} has not improved for {t.patience} validations"
            )
        return stop

    def _best_steps(self) -> list[int]:
        t = self.cfg.train
        if not t.keep_best or not self.history:
            return []
        ranked = sorted(
            self.history,
            key=lambda h: ckpt.rank(t.best_metric, h["value"], h.get("loss"), h["step"]),
        )
        return [h["step"] for h in ranked[: t.keep_best]]

    def _average(self) -> None:
        """train.average_last: validate the averages of the last 2..N checkpoints; the best
        becomes best.pt when it beats every checkpoint (adl/runtime/model/averaging.py)."""
        t = self.cfg.train
        if t.average_last < 2 or not self.main or self.valid_data is None:
            return
        files = self.run_dir.step_files()
        if len(files) < 2:
            return
        started = time.monotonic()
        trained = {k: v.detach().clone() for k, v in self.model.state_dict().items()}

        def measure(weights: dict[str, Any]) -> dict[str, float]:
            self.model.load_state_dict(weights)
            return self._measure()

        def seen(found: averaging.Average) -> None:
            self.metrics.write(
                {"split": "average", "step": self.step, "steps": found.steps, **found.metrics}
            )
            self.log.info(
                f"average of the last {len(found.steps)} checkpoints "
                f"(steps {_steps(found.steps)}): {_shown(found.metrics)}"
            )

        try:
            found = averaging.best_average(files, t.average_last, measure, t.best_metric, seen)
        finally:
            self.model.load_state_dict(trained)
        took = time.monotonic() - started
        if found is not None and ckpt.better(
            t.best_metric,
            found.metrics[t.best_metric],
            found.metrics.get("loss"),
            self.best_value,
            self.best_loss,
        ):
            ckpt.save(found.state, self.run_dir.average)
            ckpt.publish(self.run_dir.average, self.run_dir.best)
            self.best_value = found.metrics[t.best_metric]
            self.best_loss = found.metrics.get("loss")
            self.log.info(
                f"best.pt is now the average of steps {_steps(found.steps)} ({t.best_metric} "
                f"{self.best_value:.4g}; {took:.1f}s of averaging)"
            )
        else:
            self.log.info(
                f"no average beats the best checkpoint (step {self.best_step:,}): best.pt "
                f"stays ({took:.1f}s of averaging)"
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


def _shown(metrics: dict[str, float]) -> str:
    """Validation metrics as the log shows them."""
    return " | ".join(
        f"{k} {v:.4g}"
        if k in ("ppl", "loss")
        else f"{k} {v:.2f}"
        if k in ("bleu", "chrf")
        else f"{k} {v:.4f}"
        for k, v in metrics.items()
    )


def _steps(steps: list[int]) -> str:
    """Steps as the log shows them: 1,000, 1,200."""
    return ", ".join(f"{s:,}" for s in steps)
