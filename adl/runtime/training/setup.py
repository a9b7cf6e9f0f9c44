"""Setting up a run's training (the first part of :class:`~adl.runtime.training.train.Trainer`):
the run folder and its lock, the training and validation text, the tokenizers (trained, given,
cached or of ``--init-from``), the tokenized data with its length limits, the model (new, of
a checkpoint, or of ``--init-from``) and the optimizer, and the log lines that describe them.
Each function takes the trainer it fills in."""

from __future__ import annotations

import random
import time
from pathlib import Path
from typing import Any

import torch

import adl.errors
import adl.models
from adl.runtime import config as config_mod
from adl.runtime.data.batching import BatchStream
from adl.runtime.data.corpus import TextPairs, read_split
from adl.runtime.data.data import Limits, ParallelData, encode_pairs, tokenize
from adl.runtime.data.prefetch import Prefetcher
from adl.runtime.data.tokencache import DEFAULT_NAME, TokenCache
from adl.runtime.data.tokenizer import Tokenizers, make_tokenizers
from adl.runtime.errors import CheckpointError, RunDirError, UserError
from adl.runtime.logs import Metrics, make_logger
from adl.runtime.model import checkpoint as ckpt
from adl.runtime.model.build import build_model, check_model, position_limits
from adl.runtime.rundir import held_for_me
from adl.runtime.training import distributed, policy
from adl.runtime.training import optimizer as optimizer_mod
from adl.runtime.training.schedule import Schedule
from adl.runtime.training.state import TrainerState
from adl.runtime.training.validate import signatures


def prepare(trainer: TrainerState, resume: bool) -> None:
    t = trainer.cfg.train
    if t.threads:
        torch.set_num_threads(t.threads)
    state = check_run_dir(trainer, resume)
    m = trainer.cfg.model
    if not state and (m.encoder or m.joint or not t.init_from):
        check_model(trainer.cfg.model)  # bad .adl files and data stop before any write
    if not state and t.init_from:
        path = ckpt.resolve(t.init_from, "best")
        trainer.init = (path, ckpt.load(path))
    text, valid_text = read_train(trainer), read_valid(trainer)
    if trainer.main:
        trainer.run_dir.root.mkdir(parents=True, exist_ok=True)
    distributed.barrier(trainer.dist)
    trainer.log, trainer.console = make_logger(
        f"runtime.train.{id(trainer)}",
        trainer.run_dir.log if trainer.main else None,
        quiet=not trainer.main,
    )
    trainer.metrics = Metrics(
        trainer.run_dir.metrics if trainer.main else None,
        trainer.run_dir.root / "tensorboard" if t.tensorboard else None,
    )
    trainer._stop_signal = None
    trainer.log.info(
        f"{'resuming' if state else 'training'} in {trainer.run_dir.root}"
        + (f" from step {state['step']:,}" if state else "")
        + (f" from the weights of {trainer.init[0]}" if trainer.init else "")
    )
    if trainer.lock.taken_over is not None:
        trainer.log.warning(
            f"{trainer.run_dir.lock}: taking over the lock of a process that is no longer "
            f"running ({trainer.lock.taken_over.describe()})"
        )
    for note in trainer.notes:
        trainer.log.warning(note)

    random.seed(t.seed)
    torch.manual_seed(t.seed)
    trainer.cache = token_cache(trainer)
    trainer.tokenizers = tokenizers(trainer, state, text)
    trainer.train_data, trainer.valid_data = data(trainer, text, valid_text, state)
    trainer.length_ratio = trainer.train_data.length_ratio
    trainer.model = model(trainer, state).to(trainer.device)
    trainer.needs_words = bool(getattr(trainer.model, "needs_src_words", False))
    trainer.optimizer = optimizer(trainer)
    trainer.scaler = trainer.precision.scaler()  # float16 loss scaling; a pass-through otherwise
    trainer.schedule = Schedule(trainer.cfg.schedule, trainer.cfg.optim.lr, t.max_steps)
    trainer.stream = Prefetcher(  # batches made ahead by a thread, pinned for a GPU
        BatchStream(
            trainer.train_data,
            t.max_tokens,
            t.max_sentences,
            t.seed,
            trainer.dist.rank,
            trainer.dist.world,
            trainer.tokenizers.word_ids if trainer.needs_words else None,
        ),
        trainer.device,
        t.prefetch,
    )
    # bookkeeping saved in checkpoints
    trainer.step = 0
    trainer.skipped = 0  # non-finite updates skipped, in all
    trainer.overflows = 0  # fp16: updates skipped while the gradient scaler lowered its scale
    trainer.bad_in_row = 0
    trainer.best_value = None
    trainer.best_loss = None  # validation loss there (breaks capped-ppl ties)
    trainer.best_step = None
    trainer.stale = 0  # validations without a better best (patience)
    trainer.history = []
    trainer.last_metrics = {}
    trainer.saved_step = -1
    trainer._started = time.monotonic()  # run() starts the clock again
    trainer.valid_seconds = 0.0  # validation time of this run (since start or resume)
    # different dropout on each rank; a resume restores the exact states below
    torch.manual_seed(t.seed * 7919 + 1 + trainer.dist.rank)
    if state:
        policy.restore(trainer, state)
    trainer.train_model = trainer.model
    if trainer.dist.enabled:
        from torch.nn.parallel import DistributedDataParallel as DDP

        trainer.ddp = DDP(
            trainer.model,
            device_ids=[trainer.device.index] if trainer.device.type == "cuda" else None,
            find_unused_parameters=t.find_unused,
        )
        trainer.train_model = trainer.ddp
    else:
        trainer.ddp = None
    if t.compile:
        trainer.log.info("torch.compile: the first updates compile the model (minutes)")
        trainer.train_model = torch.compile(trainer.train_model)
    if trainer.main:
        config_mod.write(trainer.cfg, trainer.run_dir.config)
    describe(trainer)


def check_run_dir(trainer: TrainerState, resume: bool) -> dict[str, Any] | None:
    run = trainer.run_dir
    if resume and not (run.last.is_file() or run.step_files()):
        raise UserError(f"{run.root}: nothing to resume (no checkpoints/last.pt)")
    lock(trainer, create=not resume)  # before anything of the run is read or written
    if resume:
        if trainer.main:  # sets damaged checkpoints aside: one process does it
            state, trainer.resumed_from, trainer.notes = ckpt.resume_state(run)
        distributed.barrier(trainer.dist)
        if not trainer.main:
            state, trainer.resumed_from = ckpt.load(run.last), run.last
        return state
    if run.holds_a_run():
        raise UserError(
            f"{run.root} already holds a run: continue it with --resume, or choose another --out"
        )
    return None


def lock(trainer: TrainerState, create: bool) -> None:
    """Rank 0 takes the run's lock, unless the ``adl train --nproc N`` that started
    it holds it; every rank stops when it cannot be had."""
    error = None
    if trainer.main and not held_for_me(trainer.run_dir):
        try:
            trainer.lock.acquire(create=create)
        except UserError as exc:
            error = exc
    if trainer.dist.enabled:
        message = distributed.broadcast(trainer.dist, str(error) if error else None)
        if message and error is None:
            raise RunDirError(message)
    if error is not None:
        raise error


def read_train(trainer: TrainerState) -> TextPairs:
    """The training text, checked before anything is trained on it."""
    d = trainer.cfg.data
    if not (d.train or (d.train_src and d.train_tgt)):
        raise UserError(
            "no training data: give --train PREFIX --langs SRC TGT, --train-src and "
            "--train-tgt, or one file of pairs: --train FILE.tsv or FILE.jsonl"
        )
    text = read_split(d, "train")
    assert text is not None  # the files are given (checked above)
    return text


def read_valid(trainer: TrainerState) -> TextPairs | None:
    d = trainer.cfg.data
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


def token_cache(trainer: TrainerState) -> TokenCache | None:
    d = trainer.cfg.data
    if not d.cache:
        return None
    where = Path(d.cache_dir) if d.cache_dir else trainer.run_dir.root.parent / DEFAULT_NAME
    return TokenCache(where, warn=trainer.log.warning)


def tokenizers(trainer: TrainerState, state: dict[str, Any] | None, text: TextPairs) -> Tokenizers:
    d = trainer.cfg.data
    if state:
        return Tokenizers.from_state(state["tokenizer"])
    if trainer.main:
        started = time.monotonic()
        given = d.spm_model or d.spm_src or d.spm_tgt
        if trainer.init and not (given or trainer.cfg.train.new_tokenizer):
            tok = Tokenizers.from_state(trainer.init[1]["tokenizer"])
            tok.save(trainer.run_dir.tokenizer)
            how = f"of {trainer.init[0]}"
        else:
            hits = trainer.cache.hits["sentencepiece"] if trainer.cache else 0
            tok = make_tokenizers(d, trainer.run_dir.tokenizer, text, trainer.cache)
            how = (
                "given"
                if given
                else f"from the cache {trainer.cache.directory}"
                if trainer.cache and trainer.cache.hits["sentencepiece"] > hits
                else f"trained in {time.monotonic() - started:.1f}s"
            )
        kind = "joint" if tok.joint else "separate"
        trainer.log.info(
            f"tokenizer: {kind} sentencepiece ({how}): vocabulary "
            f"{tok.src_vocab:,}" + ("" if tok.joint else f" / {tok.tgt_vocab:,}")
        )
    distributed.barrier(trainer.dist)
    return Tokenizers.load(trainer.run_dir.tokenizer)


def data(
    trainer: TrainerState,
    text: TextPairs,
    valid_text: TextPairs | None,
    state: dict[str, Any] | None,
) -> tuple[ParallelData, ParallelData | None]:
    """Tokenized (or from the token cache) and filtered by the length limits: data.max_len
    and the model's learned positions on both sets, data.max_ratio on training data."""
    d = trainer.cfg.data
    trainer.positions = position_limits_of(trainer, state)
    limits = Limits(d.max_len, d.max_ratio, *trainer.positions)
    train = encode(trainer, text, limits, "training data")
    valid = None
    if valid_text is not None:
        valid_limits = Limits(d.max_len, 0.0, *trainer.positions)
        valid = encode(trainer, valid_text, valid_limits, "validation data", keep_text=True)
    return train, valid


def encode(
    trainer: TrainerState, text: TextPairs, limits: Limits, what: str, keep_text: bool = False
) -> ParallelData:
    tok, cache = trainer.tokenizers, trainer.cache
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
    trainer.log.info(f"{data.stats.describe(name)}; {how}")
    loud = data.stats.warning(name)
    if loud:
        trainer.log.warning(loud)
    return data


def position_limits_of(trainer: TrainerState, state: dict[str, Any] | None) -> tuple[int, int]:
    """The longest source and target the model's learned positions take (0: any): of
    the .adl files, or of the checkpoint the model comes from (--resume, --init-from
    without files)."""
    m = trainer.cfg.model
    source = None
    if state:
        source = (trainer.resumed_from or trainer.run_dir.last, state)
    elif trainer.init and not (m.encoder or m.joint):
        source = trainer.init
    if source is None:
        return position_limits(m)
    where, found = source
    try:
        return position_limits(spec=found.get("spec"))
    except adl.errors.ADLError as exc:
        raise CheckpointError(f"{where}: its model description does not build:\n{exc}") from None


def model(trainer: TrainerState, state: dict[str, Any] | None):
    if state:  # the checkpoint's ADL text is input: checked (bounded) before building
        where = trainer.resumed_from or trainer.run_dir.last
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
    if trainer.init:
        return init_model(trainer, *trainer.init)
    return build_model(
        trainer.cfg.model,
        trainer.tokenizers.src_vocab,
        trainer.tokenizers.tgt_vocab,
        trainer.length_ratio,
    )


def init_model(trainer: TrainerState, path: Path, source: dict[str, Any]):
    """--init-from: the model (of the .adl files given, else of the checkpoint's own
    description) with the checkpoint's weights; the architecture must match."""
    m = trainer.cfg.model
    if m.encoder or m.joint:
        model = build_model(
            m, trainer.tokenizers.src_vocab, trainer.tokenizers.tgt_vocab, trainer.length_ratio
        )
    else:
        theirs = Tokenizers.from_state(source["tokenizer"])
        sizes = (theirs.src_vocab, theirs.tgt_vocab)
        mine = (trainer.tokenizers.src_vocab, trainer.tokenizers.tgt_vocab)
        if sizes != mine:
            raise CheckpointError(
                f"--init-from {path}: its model has vocabularies of {sizes[0]:,} / "
                f"{sizes[1]:,} pieces, the tokenizer of this run {mine[0]:,} / "
                f"{mine[1]:,}: reuse its tokenizer (no --new-tokenizer)"
            )
        try:
            model = adl.models.build_from_spec(source.get("spec"))
        except adl.errors.ADLError as exc:
            raise CheckpointError(f"{path}: its model description does not build:\n{exc}") from None
    mismatch = ckpt.first_mismatch(model.state_dict(), source["model"])
    if mismatch:
        raise CheckpointError(
            f"--init-from {path}: another architecture than this model: {mismatch}"
        )
    model.load_state_dict(source["model"])
    return model


def optimizer(trainer: TrainerState) -> torch.optim.Optimizer:
    return optimizer_mod.make(trainer.model.parameters(), trainer.cfg.optim)


def describe(trainer: TrainerState) -> None:
    params = sum(p.numel() for p in trainer.model.parameters())
    kind = "joint" if trainer.cfg.model.joint else "encoder-decoder"
    trainer.log.info(
        f"model: {kind}, {params:,} parameters, d_model {trainer.cfg.model.d_model}; "
        f"length ratio {trainer.length_ratio:.3f}"
    )
    t = trainer.cfg.train
    where = f"{trainer.device}" + (
        f", {trainer.dist.world} processes" if trainer.dist.enabled else ""
    )
    trainer.log.info(
        f"training on {where}, {trainer.precision.describe()}, {t.max_tokens:,} tokens a batch x "
        f"{t.accumulate} per update; schedule {trainer.cfg.schedule.kind}, "
        f"lr {trainer.cfg.optim.lr:g}"
    )
    if trainer.valid_data is None and trainer.cfg.schedule.kind == "plateau":
        trainer.log.warning(
            "schedule.kind=plateau decays when the validation perplexity "
            "stalls, but there is no validation set: the rate stays "
            f"{trainer.cfg.optim.lr:g} (give --valid)"
        )
    if trainer.valid_data is not None and t.bleu:
        sig = signatures()
        n, k = len(trainer.valid_data), t.valid_bleu_sentences
        sample = f"a fixed sample of {k:,} of the" if 0 < k < n else "all"
        trainer.log.info(
            f"validation: loss on all {n:,} pairs, BLEU and chrF of greedy translations of "
            f"{sample} {n:,} sentences (train.valid_bleu_sentences); sacrebleu "
            f"signatures: BLEU {sig['bleu']}; chrF {sig['chrf']}"
        )
