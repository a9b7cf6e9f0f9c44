"""What a run's training starts from (:func:`prepare`, the first part of
:class:`~adl.runtime.training.train.Trainer`): the run folder and its lock, the training and
validation text, the tokenizers (trained, given, cached or of ``--init-from``), the
tokenized data with its length limits, the model (new, of a checkpoint, or of
``--init-from``), the rate and the optimizer, and the log lines that describe them. It
returns them as one :class:`~adl.runtime.training.state.TrainingState`."""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

import adl.errors
import adl.models
from adl.runtime import config as config_mod
from adl.runtime.data.batching import BatchStream
from adl.runtime.data.corpus import TextPairs, read_split
from adl.runtime.data.parallel import Limits, ParallelData, encode_pairs, tokenize
from adl.runtime.data.prefetch import Prefetcher
from adl.runtime.data.tokencache import DEFAULT_NAME, TokenCache
from adl.runtime.data.tokenizer import Tokenizers, make_tokenizers
from adl.runtime.decode.bleu import signatures
from adl.runtime.errors import CheckpointError, RunDirError, UserError
from adl.runtime.logs import Metrics, close_logger, make_logger
from adl.runtime.model import checkpoint as ckpt
from adl.runtime.model.build import build_model, check_model_files, position_limits
from adl.runtime.rundir import held_for_me
from adl.runtime.training import distributed, policy
from adl.runtime.training import optimizer as optimizer_mod
from adl.runtime.training.schedule import Schedule
from adl.runtime.training.state import Bookkeeping, Place, TrainingState


def prepare(place: Place, resume: bool) -> TrainingState:
    """Everything a run's loop starts from, in the order it is made (a resume restores the
    bookkeeping, optimizer, rate, batches and random states of its checkpoint). What it
    opened is closed again when it fails."""
    t = place.cfg.train
    if t.threads:
        torch.set_num_threads(t.threads)
    state, resumed_from, notes = check_run_dir(place, resume)
    m = place.cfg.model
    if not state and (m.encoder or m.joint or not t.init_from):
        check_model_files(m)  # bad .adl files and data stop before any write
    init = None
    if not state and t.init_from:
        path = ckpt.resolve(t.init_from, "best")
        init = (path, ckpt.load(path))
    text, valid_text = read_train(place), read_valid(place)
    if place.main:
        place.run_dir.root.mkdir(parents=True, exist_ok=True)
    distributed.barrier(place.dist)
    log, console = make_logger(
        f"runtime.train.{id(place)}",
        place.run_dir.log if place.main else None,
        quiet=not place.main,
    )
    opened: list[Callable[[], None]] = [lambda: close_logger(log)]
    try:
        metrics = Metrics(
            place.run_dir.metrics if place.main else None,
            place.run_dir.root / "tensorboard" if t.tensorboard else None,
        )
        opened.append(metrics.close)
        log.info(
            f"{'resuming' if state else 'training'} in {place.run_dir.root}"
            + (f" from step {state['step']:,}" if state else "")
            + (f" from the weights of {init[0]}" if init else "")
        )
        if place.lock.taken_over is not None:
            log.warning(
                f"{place.run_dir.lock}: taking over the lock of a process that is no longer "
                f"running ({place.lock.taken_over.describe()})"
            )
        for note in notes:
            log.warning(note)
        made = _make(place, log, console, metrics, state, resumed_from, init, text, valid_text)
        opened.append(made.stream.close)
        if state:
            policy.restore(place, made, state)
        _distribute(place, made)
        if place.main:
            config_mod.write(place.cfg, place.run_dir.config)
        describe(place, made)
        return made
    except BaseException:
        for close in reversed(opened):
            close()
        raise


def _make(
    place: Place,
    log: logging.Logger,
    console: Any,
    metrics: Metrics,
    state: dict[str, Any] | None,
    resumed_from: Path | None,
    init: tuple[Path, dict[str, Any]] | None,
    text: TextPairs,
    valid_text: TextPairs | None,
) -> TrainingState:
    """The tokenizers, data, model, rate, optimizer and batches of a run, at a new start."""
    t = place.cfg.train
    random.seed(t.seed)
    torch.manual_seed(t.seed)
    cache = token_cache(place, log)
    tok = tokenizers(place, log, cache, init, state, text)
    positions = position_limits_of(place, resumed_from, init, state)
    train_data, valid_data = data(place, log, tok, cache, positions, text, valid_text)
    length_ratio = train_data.length_ratio
    net = model(place, tok, length_ratio, resumed_from, init, state).to(place.device)
    needs_words = bool(getattr(net, "needs_src_words", False))
    schedule = Schedule(place.cfg.schedule, place.cfg.optim.lr, t.max_steps)
    # the optimizer starts at the rate of the first update; the schedule sets it before each
    optimizer = optimizer_mod.make(net.parameters(), place.cfg.optim, lr=schedule.lr(1))
    stream = Prefetcher(  # batches made ahead by a thread, pinned for a GPU
        BatchStream(
            train_data,
            t.max_tokens,
            t.max_sentences,
            t.seed,
            place.dist.rank,
            place.dist.world,
            tok.word_ids if needs_words else None,
        ),
        place.device,
        t.prefetch,
    )
    # different dropout on each rank; a resume restores the exact states
    torch.manual_seed(t.seed * 7919 + 1 + place.dist.rank)
    return TrainingState(
        log=log,
        console=console,
        metrics=metrics,
        cache=cache,
        tokenizers=tok,
        train_data=train_data,
        valid_data=valid_data,
        positions=positions,
        length_ratio=length_ratio,
        model=net,
        train_model=net,
        ddp=None,
        needs_words=needs_words,
        optimizer=optimizer,
        scaler=place.precision.scaler(),  # float16 loss scaling; a pass-through otherwise
        schedule=schedule,
        stream=stream,
        book=Bookkeeping(),
        resumed_from=resumed_from,
        init=init,
    )


def _distribute(place: Place, made: TrainingState) -> None:
    """The model as trained: under DDP with several processes, compiled with train.compile."""
    if place.dist.enabled:
        from torch.nn.parallel import DistributedDataParallel as DDP

        made.ddp = DDP(
            made.model,
            device_ids=[place.device.index] if place.device.type == "cuda" else None,
            find_unused_parameters=place.cfg.train.find_unused,
        )
        made.train_model = made.ddp
    if place.cfg.train.compile:
        made.log.info("torch.compile: the first updates compile the model (minutes)")
        made.train_model = torch.compile(made.train_model)


def check_run_dir(
    place: Place, resume: bool
) -> tuple[dict[str, Any] | None, Path | None, list[str]]:
    """(the checkpoint a resume continues, its file, notes on damaged checkpoints set aside),
    or (None, None, []) for a new run; the run's lock is taken first."""
    run = place.run_dir
    if resume:
        run.require_checkpoints()
    lock(place, create=not resume)  # before anything of the run is read or written
    if not resume:
        if run.holds_a_run():
            raise UserError(
                f"{run.root} already holds a run: continue it with --resume, or choose "
                "another --out"
            )
        return None, None, []
    notes: list[str] = []
    if place.main:  # sets damaged checkpoints aside: one process does it
        state, resumed_from, notes = ckpt.resume_state(run)
    distributed.barrier(place.dist)
    if not place.main:
        state, resumed_from = ckpt.load(run.last), run.last
    return state, resumed_from, notes


def lock(place: Place, create: bool) -> None:
    """Rank 0 takes the run's lock, unless the ``adl train --nproc N`` that started
    it holds it; every rank stops when it cannot be had."""
    error = None
    if place.main and not held_for_me(place.run_dir):
        try:
            place.lock.acquire(create=create)
        except UserError as exc:
            error = exc
    if place.dist.enabled:
        message = distributed.broadcast(place.dist, str(error) if error else None)
        if message and error is None:
            raise RunDirError(message)
    if error is not None:
        raise error


def read_train(place: Place) -> TextPairs:
    """The training text, checked before anything is trained on it."""
    d = place.cfg.data
    if not (d.train or (d.train_src and d.train_tgt)):
        raise UserError(
            "no training data: give --train PREFIX --langs SRC TGT, --train-src and "
            "--train-tgt, or one file of pairs: --train FILE.tsv or FILE.jsonl"
        )
    text = read_split(d, "train")
    assert text is not None  # the files are given (checked above)
    return text


def read_valid(place: Place) -> TextPairs | None:
    d = place.cfg.data
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


def token_cache(place: Place, log: logging.Logger) -> TokenCache | None:
    d = place.cfg.data
    if not d.cache:
        return None
    where = Path(d.cache_dir) if d.cache_dir else place.run_dir.root.parent / DEFAULT_NAME
    return TokenCache(where, warn=log.warning)


def tokenizers(
    place: Place,
    log: logging.Logger,
    cache: TokenCache | None,
    init: tuple[Path, dict[str, Any]] | None,
    state: dict[str, Any] | None,
    text: TextPairs,
) -> Tokenizers:
    d = place.cfg.data
    if state:
        return Tokenizers.from_state(state["tokenizer"])
    if place.main:
        started = time.monotonic()
        given = d.spm_model or d.spm_src or d.spm_tgt
        if init and not (given or place.cfg.train.new_tokenizer):
            tok = Tokenizers.from_state(init[1]["tokenizer"])
            tok.save(place.run_dir.tokenizer)
            how = f"of {init[0]}"
        else:
            hits = cache.hits["sentencepiece"] if cache else 0
            tok = make_tokenizers(d, place.run_dir.tokenizer, text, cache)
            how = (
                "given"
                if given
                else f"from the cache {cache.directory}"
                if cache and cache.hits["sentencepiece"] > hits
                else f"trained in {time.monotonic() - started:.1f}s"
            )
        kind = "joint" if tok.joint else "separate"
        log.info(
            f"tokenizer: {kind} sentencepiece ({how}): vocabulary "
            f"{tok.src_vocab:,}" + ("" if tok.joint else f" / {tok.tgt_vocab:,}")
        )
    distributed.barrier(place.dist)
    return Tokenizers.load(place.run_dir.tokenizer)


def data(
    place: Place,
    log: logging.Logger,
    tok: Tokenizers,
    cache: TokenCache | None,
    positions: tuple[int, int],
    text: TextPairs,
    valid_text: TextPairs | None,
) -> tuple[ParallelData, ParallelData | None]:
    """Tokenized (or from the token cache) and filtered by the length limits: data.max_len
    and the model's learned positions on both sets, data.max_ratio on training data."""
    d = place.cfg.data
    limits = Limits(d.max_len, d.max_ratio, *positions)
    train = encode(log, tok, cache, text, limits, "training data")
    valid = None
    if valid_text is not None:
        valid_limits = Limits(d.max_len, 0.0, *positions)
        valid = encode(log, tok, cache, valid_text, valid_limits, "validation data", True)
    return train, valid


def encode(
    log: logging.Logger,
    tok: Tokenizers,
    cache: TokenCache | None,
    text: TextPairs,
    limits: Limits,
    what: str,
    keep_text: bool = False,
) -> ParallelData:
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
    log.info(f"{data.stats.describe(name)}; {how}")
    loud = data.stats.warning(name)
    if loud:
        log.warning(loud)
    return data


def position_limits_of(
    place: Place,
    resumed_from: Path | None,
    init: tuple[Path, dict[str, Any]] | None,
    state: dict[str, Any] | None,
) -> tuple[int, int]:
    """The longest source and target the model's learned positions take (0: any): of
    the .adl files, or of the checkpoint the model comes from (--resume, --init-from
    without files)."""
    m = place.cfg.model
    source = None
    if state:
        source = (resumed_from or place.run_dir.last, state)
    elif init and not (m.encoder or m.joint):
        source = init
    if source is None:
        return position_limits(m)
    where, found = source
    try:
        return position_limits(spec=found.get("spec"))
    except adl.errors.ADLError as exc:
        raise CheckpointError(f"{where}: its model description does not build:\n{exc}") from None


def model(
    place: Place,
    tok: Tokenizers,
    length_ratio: float,
    resumed_from: Path | None,
    init: tuple[Path, dict[str, Any]] | None,
    state: dict[str, Any] | None,
):
    if state:  # the checkpoint's ADL text is input: checked (bounded) before building
        where = resumed_from or place.run_dir.last
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
    if init:
        return init_model(place, tok, length_ratio, *init)
    return build_model(place.cfg.model, tok.src_vocab, tok.tgt_vocab, length_ratio)


def init_model(
    place: Place, tok: Tokenizers, length_ratio: float, path: Path, source: dict[str, Any]
):
    """--init-from: the model (of the .adl files given, else of the checkpoint's own
    description) with the checkpoint's weights; the architecture must match."""
    m = place.cfg.model
    if m.encoder or m.joint:
        model = build_model(m, tok.src_vocab, tok.tgt_vocab, length_ratio)
    else:
        theirs = Tokenizers.from_state(source["tokenizer"])
        sizes = (theirs.src_vocab, theirs.tgt_vocab)
        mine = (tok.src_vocab, tok.tgt_vocab)
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


def describe(place: Place, made: TrainingState) -> None:
    params = sum(p.numel() for p in made.model.parameters())
    cfg, log = place.cfg, made.log
    kind = "joint" if cfg.model.joint else "encoder-decoder"
    log.info(
        f"model: {kind}, {params:,} parameters, d_model {cfg.model.d_model}; "
        f"length ratio {made.length_ratio:.3f}"
    )
    t = cfg.train
    where = f"{place.device}" + (f", {place.dist.world} processes" if place.dist.enabled else "")
    log.info(
        f"training on {where}, {place.precision.describe()}, {t.max_tokens:,} tokens a batch x "
        f"{t.accumulate} per update; schedule {cfg.schedule.kind}, "
        f"lr {cfg.optim.lr:g}"
    )
    if made.valid_data is None and cfg.schedule.kind == "plateau":
        log.warning(
            "schedule.kind=plateau decays when the validation perplexity "
            "stalls, but there is no validation set: the rate stays "
            f"{cfg.optim.lr:g} (give --valid)"
        )
    if made.valid_data is not None and t.bleu:
        sig = signatures()
        n, k = len(made.valid_data), t.valid_bleu_sentences
        sample = f"a fixed sample of {k:,} of the" if 0 < k < n else "all"
        log.info(
            f"validation: loss on all {n:,} pairs, BLEU and chrF of greedy translations of "
            f"{sample} {n:,} sentences (train.valid_bleu_sentences); sacrebleu "
            f"signatures: BLEU {sig['bleu']}; chrF {sig['chrf']}"
        )
