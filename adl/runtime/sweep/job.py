"""What one job of a sweep does, in its own process: train (or resume) one (system, seed) run,
then translate the test set with it for that system and for every system that decodes its
runs, measuring the cost columns. Jobs are plain data (:class:`Job`), so that any engine can
carry them: a local process pool, or submitit on Slurm.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import time
import traceback
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from adl.runtime.sweep import results
from adl.runtime.sweep.state import (
    HYP,
    LOG,
    RESULT,
    STATE,
    me,
    read_json,
    update_state,
    write_json,
    write_text,
)

# What a run folder holds before its first checkpoint (removed when a job starts it again).
PARTIAL = ("config.yaml", "tokenizer", "train.log", "metrics.jsonl", "tensorboard", "checkpoints")


@dataclass
class DecodeJob:
    system: str
    folder: str
    options: dict[str, Any]  # search options (beam, ...) and loader options
    key: dict[str, Any]  # what the result depends on (plan.decoding_key)
    record: str | None = None  # the committed result file to write (results.record_path)
    hash: str = ""  # what the outcome depends on (results.outcome_hash)


@dataclass
class Job:
    system: str
    seed: int
    folder: str  # the run folder
    config: dict[str, Any]  # the effective configuration (Config.to_dict())
    fingerprint: dict[str, str]
    decodings: list[DecodeJob]
    test: tuple[str, str]  # source and reference files
    test_max: int = 0  # the first N test sentences only (0: all)
    checkpoint: str = "best"
    minutes: float = 0.0  # the training budget in minutes (0: none)
    threads: int = 0  # CPU threads (0: the CPUs this process may use)
    gpus: Any = None  # a queue of free GPU ids to take one from (local engine with GPUs)
    log: bool = True  # send what the job prints to RUN/job.log

    @property
    def name(self) -> str:
        return f"{self.system} seed {self.seed}"


def run_job(job: Job) -> dict[str, Any]:
    """Do the job; returns ``{"ok", "state", "error", "seconds"}`` (never raises for a
    failed run: the failure is recorded in RUN/job.json and returned)."""
    started = time.perf_counter()
    folder = Path(job.folder)
    folder.mkdir(parents=True, exist_ok=True)
    gpu = job.gpus.get() if job.gpus is not None else None
    try:
        with _output(folder / LOG, job.log):
            print(f"--- {time.strftime('%Y-%m-%d %H:%M:%S')}: {job.name}, process {os.getpid()}")
            outcome = _run(job, folder, gpu)
    finally:
        if gpu is not None:
            job.gpus.put(gpu)
    outcome["seconds"] = time.perf_counter() - started
    return outcome


def _run(job: Job, folder: Path, gpu: int | None) -> dict[str, Any]:
    update_state(
        folder,
        state="running",
        error=None,
        fingerprint=job.fingerprint,
        started=time.time(),
        **me(),
    )
    try:
        import torch

        from adl.runtime import config as cfgmod
        from adl.runtime.training.distributed import pick_device

        config = cfgmod.from_dict(job.config, f"{job.name}'s configuration")
        threads = job.threads or len(os.sched_getaffinity(0))
        config.train.threads = threads
        torch.set_num_threads(threads)
        if gpu is not None:
            config.train.device = f"cuda:{gpu}"
        device = pick_device(config.train.device)
        state = read_json(folder / STATE) or {}
        if not (state.get("train") or {}).get("done"):
            stopped = _train(job, config, folder, state)
            if stopped:
                update_state(folder, state="stopped", error=stopped)
                return {"ok": False, "state": "stopped", "error": stopped}
        update_state(folder, state="trained")
        for decoding in job.decodings:
            if decoding.record and results.matches(Path(decoding.record), decoding.hash):
                continue  # committed before
            result = read_json(Path(decoding.folder) / RESULT)
            if result and result.get("key") == decoding.key:
                hyps = (Path(decoding.folder) / HYP).read_text(encoding="utf-8").splitlines()
                commit_record(decoding, result, hyps, str(device), threads)
                continue
            _decode(job, decoding, config, device, threads)
        update_state(folder, state="done")
        return {"ok": True, "state": "done", "error": None}
    except KeyboardInterrupt:
        update_state(folder, state="stopped", error="interrupted")
        return {"ok": False, "state": "stopped", "error": "interrupted"}
    except Exception as exc:  # recorded, not raised: the other runs go on
        from adl.runtime.errors import UserError

        traceback.print_exc()
        if isinstance(exc, UserError):
            message = str(exc).strip().splitlines()[0]
        else:
            message = f"{type(exc).__name__}: {str(exc).strip().splitlines()[0] if str(exc).strip() else ''}"
        update_state(folder, state="failed", error=message)
        return {"ok": False, "state": "failed", "error": message}


def _train(job: Job, config, folder: Path, state: dict[str, Any]) -> str | None:
    """Train or resume; None when training is done, else why it stopped."""
    from adl.runtime.model.checkpoint import publish
    from adl.runtime.rundir import RunDir
    from adl.runtime.sweep.measure import Meter, Peak, keep, resume_point
    from adl.runtime.training.train import train

    run = RunDir(folder)
    steps = run.step_files()
    if steps and not run.last.is_file():  # killed between writing a checkpoint and linking it
        publish(steps[max(steps)], run.last)
    resume = run.last.is_file()
    if not resume:
        for name in PARTIAL:  # a start killed before its first checkpoint: start afresh
            path = folder / name
            if path.is_dir():
                shutil.rmtree(path)
            else:
                path.unlink(missing_ok=True)
    progress = state.get("train") or {}
    snapshots = list(progress.get("snapshots") or []) if resume else []
    start = resume_point(snapshots, max(steps) if steps and resume else None)
    if job.minutes:
        left = job.minutes - start.get("elapsed", 0.0) / 60
        config.train.max_minutes = max(left, 1e-3)  # at least one update (the Trainer's rule)

    from adl.runtime.training.distributed import pick_device

    peak = Peak(pick_device(config.train.device))
    earlier_peak = float(progress.get("peak_mib") or 0.0) if resume else 0.0

    def save(snapshot: dict[str, Any]) -> None:  # at each checkpoint step
        nonlocal snapshots
        snapshots = keep(snapshots, snapshot)
        peak_mib = max(earlier_peak, peak.mib())
        update_state(folder, train={"done": False, "snapshots": snapshots, "peak_mib": peak_mib})

    meter = Meter(config.train.valid_every, start, save)
    summary = train(config, folder, resume=resume, on_step=meter)
    if summary.interrupted:
        meter.snapshot(summary.step)  # the checkpoint it saved where it stopped
        return f"interrupted at step {summary.step:,} (a re-run resumes from its checkpoint)"
    update_state(
        folder,
        train={
            "done": True,
            "reason": summary.reason,
            "steps": summary.step,
            "tokens": meter.tokens,
            "seen": meter.seen,
            "seconds": meter.seconds,
            "tokens_per_s": meter.tokens_per_s,
            "elapsed": meter.elapsed(),
            "peak_mib": max(earlier_peak, peak.mib()),
            "memory": peak.description,
            "snapshots": snapshots,
        },
    )
    return None


def passes(config, folder: Path, seen: float | None) -> dict[str, Any]:
    """``train_pairs``: the training pairs; ``train_pieces``: their target pieces with the
    run's own tokenizer (each with its end of sentence); ``passes``: the target tokens the
    updates read over those pieces (None where the run predates the count)."""
    from adl.runtime.data.lines import read_lines
    from adl.runtime.data.tokenizer import Tokenizers
    from adl.runtime.rundir import RunDir

    target = read_lines(config.data.train_tgt, allow_empty=True)
    tokenizer = RunDir(folder).tokenizer
    if not target or not tokenizer.is_dir():
        return {"train_pairs": len(target)}
    pieces = sum(len(ids) + 1 for ids in Tokenizers.load(tokenizer).encode_tgt(target))
    return {
        "train_pairs": len(target),
        "train_pieces": pieces,
        "passes": seen / pieces if seen and pieces else None,
    }


def _decode(job: Job, decoding: DecodeJob, config, device, threads: int) -> None:
    """Translate the test set with the run's model for ``decoding.system``; write its
    test.hyp and result.json (last: its presence says the decoding is done)."""
    from adl.runtime.data.lines import read_lines
    from adl.runtime.decode.bleu import score
    from adl.runtime.decode.translator import Translator
    from adl.runtime.model.checkpoint import load_for_inference
    from adl.runtime.sweep.measure import Peak
    from adl.runtime.sweep.spec import split_decode

    search, loader = split_decode(decoding.options)
    out = Path(decoding.folder)
    out.mkdir(parents=True, exist_ok=True)
    model, tokenizers = load_for_inference(job.folder, job.checkpoint, device, **loader)
    sources, references = read_lines(job.test[0]), read_lines(job.test[1])
    if job.test_max:
        sources, references = sources[: job.test_max], references[: job.test_max]
    peak = Peak(device)
    started = time.perf_counter()
    found = Translator(model, tokenizers, device).search(sources, search)
    seconds = time.perf_counter() - started
    hyps = [h[0][0] for h in found]
    scores = score(hyps, references, f"{decoding.system} seed {job.seed}", job.test[1])
    state = read_json(Path(job.folder) / STATE) or {}
    trained = state.get("train") or {}
    write_text(out / HYP, "".join(h + "\n" for h in hyps))
    result = {
        "system": decoding.system,
        "seed": job.seed,
        "run": job.folder,
        "trained_as": job.system,
        "checkpoint": job.checkpoint,
        "steps": trained.get("steps"),
        "stopped_by": trained.get("reason"),
        "sentences": len(hyps),
        "bleu": scores["bleu"],
        "chrf": scores["chrf"],
        "bleu_text": scores["bleu_text"],
        "chrf_text": scores["chrf_text"],
        "bleu_signature": scores["bleu_signature"],
        "chrf_signature": scores["chrf_signature"],
        "parameters": sum(p.numel() for p in model.parameters()),
        "train_tokens_per_s": trained.get("tokens_per_s"),
        "train_seconds": trained.get("elapsed"),
        "decode_sentences_per_s": len(hyps) / seconds if seconds > 0 else None,
        "decode_seconds": seconds,
        "train_peak_mib": trained.get("peak_mib"),
        "decode_peak_mib": peak.mib(),
        "memory": peak.description,
        "device": str(device),
        "threads": threads,
        "decode": decoding.options,
        "validations": validations(Path(job.folder)),
        **passes(config, Path(job.folder), trained.get("seen")),
        "key": decoding.key,
        "finished": time.time(),
    }
    write_json(out / RESULT, result)
    commit_record(decoding, result, hyps, str(device), threads)
    print(f"{decoding.system} seed {job.seed}: {scores['bleu_text']}")


def validations(folder: Path) -> list[dict[str, float]]:
    """The run's learning curve as its metrics.jsonl has it: step, loss, perplexity, and
    BLEU and chrF where measured, of every validation (the result file keeps it)."""
    from adl.runtime.rundir import RunDir

    path = RunDir(folder).metrics
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError:
        return []
    out = []
    for line in lines:
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            continue
        if record.get("split") == "valid":
            keys = ("step", "loss", "ppl", "bleu", "chrf")
            out.append({k: round(record[k], 4) for k in keys if k in record})
    return out


def commit_record(
    decoding: DecodeJob, result: dict[str, Any], hyps: list[str], device, threads
) -> None:
    """The result file meant for the repository (results.py), when the sweep keeps one."""
    if not decoding.record:
        return
    keep = {k: v for k, v in result.items() if k not in ("run", "key", "finished")}
    record = {
        **keep,
        "hash": decoding.hash,
        "machine": results.machine(device, threads),
        "source": results.commit(),
    }
    results.write_record(Path(decoding.record), record, hyps)


@contextmanager
def _output(path: Path, redirect: bool) -> Iterator[None]:
    """Send what this process prints (file descriptors 1 and 2) to ``path``."""
    if not redirect:
        yield
        return
    sys.stdout.flush()
    sys.stderr.flush()
    saved = os.dup(1), os.dup(2)
    with open(path, "a", encoding="utf-8") as f:
        os.dup2(f.fileno(), 1)
        os.dup2(f.fileno(), 2)
        try:
            yield
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os.dup2(saved[0], 1)
            os.dup2(saved[1], 2)
            os.close(saved[0])
            os.close(saved[1])
