"""Checkpoints: atomic writes, safe loading, keep-last-N, averaging, loading for inference.

A checkpoint is a dict of tensors and plain data (``FORMAT`` below): the model's
description (``spec``, rebuilt with ``adl.models.build_from_spec``) and weights, the optimizer,
schedule, data position and RNG states for an exact resume, the configuration, and the
sentencepiece models' bytes — so one file is enough to translate. Loading always uses
``torch.load(weights_only=True)``: a file that carries pickled code is refused, never run.
"""

from __future__ import annotations

import math
import os
import pickle
import re
import shutil
import tempfile
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import torch

from adl.runtime.errors import CheckpointError
from adl.runtime.rundir import RunDir

FORMAT = "adl-checkpoint/1"
LOWER_IS_BETTER = {"ppl": True, "loss": True, "acc": False, "bleu": False, "chrf": False}


class DamagedCheckpoint(CheckpointError):
    """A checkpoint file that cannot be read: truncated (a full disk, a copy cut short) or
    otherwise damaged. A resume falls back to the newest intact one."""


def rank(metric: str, value: float, loss: float | None = None, step: int = 0) -> tuple:
    """The sort key of a validation when checkpoints are compared by ``metric`` (smaller
    is better; among equals the later step first). Validation perplexity is reported
    capped (at exp(100) = 2.688e43), so capped values tie: the validation loss decides
    between them, and "best" follows the loss while it falls."""
    if not LOWER_IS_BETTER[metric]:
        return (-value, 0.0, -step)
    tie = loss if loss is not None and math.isfinite(loss) else math.inf
    return (value if math.isfinite(value) else math.inf, tie, -step)


def better(
    metric: str, value: float, loss: float | None, best: float | None, best_loss: float | None
) -> bool:
    """Whether a validation of ``value`` (with ``loss``) ranks above the best so far, of
    ``best`` (with ``best_loss``; None: there is none yet)."""
    return best is None or rank(metric, value, loss)[:2] < rank(metric, best, best_loss)[:2]


# --- writing ------------------------------------------------------------------------------
def _fsync_dir(directory: Path) -> None:
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def save(state: dict[str, Any], path: Path) -> None:
    """Write ``state`` to ``path`` atomically: a temporary file in the same directory,
    flushed and fsynced, then renamed over ``path`` (a reader sees the old file or the new
    one, never a part)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            torch.save(state, f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    _fsync_dir(path.parent)


def publish(src: Path, dst: Path) -> None:
    """Make ``dst`` (last.pt, best.pt) the same checkpoint as ``src``, atomically: a hard
    link renamed into place (a copy where links are not supported)."""
    tmp = dst.with_name(f".{dst.name}.link.tmp")
    tmp.unlink(missing_ok=True)
    try:
        os.link(src, tmp)
    except OSError:
        with open(src, "rb") as fin, open(tmp, "wb") as fout:
            shutil.copyfileobj(fin, fout)
            fout.flush()
            os.fsync(fout.fileno())
    os.replace(tmp, dst)
    _fsync_dir(dst.parent)


def prune(run: RunDir, keep_last: int, keep: Iterable[int] = ()) -> list[int]:
    """Delete step-N.pt files beyond the newest ``keep_last`` (0: keep all), except the
    steps in ``keep``; returns the deleted steps."""
    if keep_last <= 0:
        return []
    files = run.step_files()
    protected = set(sorted(files)[-keep_last:]) | set(keep)
    gone = [s for s in files if s not in protected]
    for s in gone:
        files[s].unlink(missing_ok=True)
    return gone


# --- reading ------------------------------------------------------------------------------
def load(path: str | Path, map_location: str | torch.device = "cpu") -> dict[str, Any]:
    """Read a checkpoint without running any code; raises :class:`CheckpointError`."""
    path = Path(path)
    if not path.is_file():
        raise CheckpointError(f"{path}: no such checkpoint")
    try:
        state = torch.load(path, map_location=map_location, weights_only=True)
    except pickle.UnpicklingError as exc:
        found = re.search(r"GLOBAL ([\w.]+)", str(exc))
        if found:
            raise CheckpointError(
                f"{path}: refused: the file carries a pickled Python object "
                f"({found.group(1)}), and loading it could run code. An ADL checkpoint holds "
                "only tensors and plain data; this file was not written by adl train, or was "
                "tampered with."
            ) from None
        raise DamagedCheckpoint(f"{path}: not a checkpoint (damaged, or another format)") from None
    except (PermissionError, IsADirectoryError) as exc:
        raise CheckpointError(f"{path}: cannot read the checkpoint: {exc.strerror}") from None
    except (RuntimeError, EOFError, OSError, ValueError) as exc:
        why = str(exc).split(". ")[0].strip() or type(exc).__name__
        raise DamagedCheckpoint(
            f"{path}: cannot read the checkpoint (truncated or damaged: {why})"
        ) from None
    if not isinstance(state, dict) or state.get("format") != FORMAT:
        raise CheckpointError(f"{path}: not an ADL checkpoint (no '{FORMAT}' format mark)")
    return state


def resume_state(run: RunDir) -> tuple[dict[str, Any], Path, list[str]]:
    """The state a resume continues from: checkpoints/last.pt, or when that cannot be read,
    the newest intact step-N.pt. Returns ``(state, file, notes)``; the notes say what was
    taken instead and where the damaged files were moved (checkpoints/damaged/: never
    deleted; last.pt is linked to the checkpoint taken)."""
    run.require_checkpoints()
    candidates = ([run.last] if run.last.is_file() else []) + [
        path for _, path in sorted(run.step_files().items(), reverse=True)
    ]
    damaged: list[tuple[Path, DamagedCheckpoint]] = []
    for path in candidates:
        if any(_same(path, bad) for bad, _ in damaged):
            continue  # another name of a damaged file (last.pt is a link to a step file)
        try:
            state = load(path)
        except DamagedCheckpoint as exc:
            damaged.append((path, exc))
            continue
        break
    else:
        raise CheckpointError(f"{run.root}: no intact checkpoint to resume from ({damaged[0][1]})")
    if not damaged:
        return state, path, []
    step = int(state["step"])
    aside = [run.last] if run.last.is_file() and path != run.last else []
    aside += [p for s, p in run.step_files().items() if s > step]
    run.damaged.mkdir(parents=True, exist_ok=True)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    for p in aside:
        os.replace(p, run.damaged / f"{p.stem}.{stamp}{p.suffix}")
    _fsync_dir(run.checkpoints)
    if path != run.last:
        publish(path, run.last)
    first = damaged[0][1]
    notes = [
        f"{first}: resuming from {path} (step {step:,}), the newest intact checkpoint; "
        f"the damaged files are kept in {run.damaged}"
    ]
    return state, path, notes


def _same(a: Path, b: Path) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def resolve(run_or_file: str | Path, which: str = "best") -> Path:
    """The checkpoint file meant by a run directory and ``which`` (best | last | average |
    a file name in RUN/checkpoints), or a checkpoint file given directly."""
    path = Path(run_or_file)
    if path.is_file():
        return path
    run = RunDir(path)
    if not run.root.is_dir():
        raise CheckpointError(f"{path}: no such run directory or checkpoint file")
    if which == "best":
        if run.best.is_file():
            return run.best
        if run.last.is_file() and not _had_validation(run):
            return run.last  # a run without a validation set has no best: its last
        raise CheckpointError(f"{path}: no checkpoints/best.pt yet")
    if which == "last":
        if run.last.is_file():
            return run.last
        raise CheckpointError(f"{path}: no checkpoints/last.pt (has it trained a checkpoint?)")
    if which == "average":
        if run.average.is_file():
            return run.average
        raise CheckpointError(
            f"{path}: no checkpoints/average.pt: make it with `adl average {path} --last 5`"
        )
    for candidate in (Path(which), run.checkpoints / which):
        if candidate.is_file():
            return candidate
    raise CheckpointError(f"{path}: no checkpoint '{which}' (best, last, average, or a file)")


def _had_validation(run: RunDir) -> bool:
    from adl.runtime.config import read_yaml

    if not run.config.is_file():
        return True
    data = read_yaml(run.config) or {}
    section = data.get("data") or {}
    return bool(section.get("valid_src") or section.get("valid"))


def load_for_inference(
    run_or_file: str | Path,
    which: str = "best",
    device: str | torch.device = "cpu",
    decode_attention: str | None = None,
):
    """``(model, tokenizers)`` from a run directory (``which`` = best | last | average |
    a checkpoint file name) or from a checkpoint file. The model is in eval mode on
    ``device``; the tokenizers come from the checkpoint itself. ``decode_attention``
    (soft | hard) decodes the decoder's attention that way (``adl.models.build``)."""
    from adl.runtime.data.tokenizer import Tokenizers

    path = resolve(run_or_file, which)
    state = load(path)
    model = model_from_state(state, path, decode_attention)
    model.to(device).eval()
    return model, Tokenizers.from_state(state["tokenizer"])


def model_from_state(state: dict[str, Any], path: Path, decode_attention: str | None = None):
    """The model a loaded checkpoint describes, with its weights; its description goes
    through ``adl.models.build_from_spec``'s bounded check before anything is built."""
    import adl.errors
    import adl.models

    try:
        model = adl.models.build_from_spec(state.get("spec"), decode_attention=decode_attention)
    except adl.errors.ADLError as exc:
        raise CheckpointError(f"{path}: its model description does not build:\n{exc}") from None
    try:
        model.load_state_dict(state["model"])
    except RuntimeError:
        raise CheckpointError(
            f"{path}: its weights do not fit the model it describes (a "
            "checkpoint of another architecture, or a damaged one)"
        ) from None
    return model


def first_mismatch(model: dict[str, torch.Tensor], weights: dict[str, torch.Tensor]) -> str | None:
    """What first keeps ``weights`` (a checkpoint's) from loading into the model whose
    state is ``model``: the first tensor (in the model's order) missing, extra, or of
    another shape, with both shapes; None when they fit."""

    def shape(t: torch.Tensor) -> str:
        return str(list(t.shape))

    for name, tensor in model.items():
        if name not in weights:
            return f"this model has {name} {shape(tensor)}, the checkpoint has no such tensor"
        if weights[name].shape != tensor.shape:
            return (
                f"{name} is {shape(weights[name])} in the checkpoint "
                f"and {shape(tensor)} in this model"
            )
    for name, tensor in weights.items():
        if name not in model:
            return f"the checkpoint has {name} {shape(tensor)}, this model has no such tensor"
    return None


# --- averaging ------------------------------------------------------------------------------
def average(paths: list[Path]) -> dict[str, Any]:
    """A checkpoint whose weights are the mean of those of ``paths`` (same model); the
    rest (spec, tokenizer, configuration) comes from the newest. No optimizer state."""
    if not paths:
        raise CheckpointError("nothing to average")
    total: dict[str, torch.Tensor] = {}
    newest: dict[str, Any] = {}
    steps = []
    for path in paths:
        state = load(path)
        if newest and state["spec"] != newest["spec"]:
            raise CheckpointError(f"{path}: another model than {paths[0]}: cannot average")
        model = state["model"]
        if total and set(model) != set(total):
            raise CheckpointError(f"{path}: other weights than {paths[0]}: cannot average")
        for name, tensor in model.items():
            if tensor.is_floating_point():
                acc = tensor.double()
                total[name] = acc if name not in total else total[name] + acc
            else:
                total[name] = tensor  # integer buffers: the newest value
        steps.append(int(state["step"]))
        if not newest or state["step"] >= newest["step"]:
            newest = state
    dtypes = {k: v.dtype for k, v in newest["model"].items()}
    averaged = {
        k: (v / len(paths)).to(dtypes[k]) if v.is_floating_point() else v for k, v in total.items()
    }
    return {
        "format": FORMAT,
        "step": newest["step"],
        "spec": newest["spec"],
        "model": averaged,
        "tokenizer": newest["tokenizer"],
        "config": newest["config"],
        "averaged_steps": sorted(steps),
        "metrics": {},
    }


def choose(
    run: RunDir,
    last: int | None = None,
    best: int | None = None,
    steps: list[int] | None = None,
) -> list[Path]:
    """The ``last`` newest step-N.pt files, the ``best`` best by the run's best metric
    (from the history kept in last.pt), or the files of the given ``steps``."""
    files = run.step_files()
    if not files:
        raise CheckpointError(f"{run.root}: no step-N.pt checkpoints to average")
    if steps is not None:
        if not steps:
            raise CheckpointError("give at least one step")
        missing = ", ".join(f"{s:,}" for s in steps if s not in files)
        if missing:
            have = ", ".join(f"{s:,}" for s in files)  # step_files() is sorted
            raise CheckpointError(
                f"{run.root}: no checkpoint of step {missing} (it has steps {have})"
            )
        return [files[s] for s in sorted(set(steps))]
    n = last if last is not None else best
    if not n or n <= 0:
        raise CheckpointError("give a positive number of checkpoints")
    if last is not None:
        picked = sorted(files)[-n:]
    else:
        trainer = load(run.last).get("trainer", {})
        metric = trainer.get("metric", "ppl")
        scored = [
            h
            for h in trainer.get("history", [])
            if h["step"] in files and h.get("value") is not None
        ]
        if not scored:
            raise CheckpointError(
                f"{run.root}: no validated checkpoints to pick the best "
                "from (the run had no validation set?): use --last"
            )
        scored.sort(key=lambda h: rank(metric, h["value"], h.get("loss"), h["step"]))
        picked = sorted(h["step"] for h in scored[:n])
    if len(picked) < n:
        raise CheckpointError(
            f"{run.root}: only {len(picked)} checkpoint"
            f"{'s' if len(picked) != 1 else ''} to choose from, not {n} "
            "(train.keep_last / train.keep_best decide how many are kept)"
        )
    return [files[s] for s in picked]


def average_run(
    run_dir: str | Path,
    last: int | None = None,
    best: int | None = None,
    out: str | Path | None = None,
    steps: list[int] | None = None,
) -> tuple[Path, list[int]]:
    """Average the last or best N checkpoints of a run, or those of the given ``steps``, into
    ``out`` (default RUN/checkpoints/average.pt); returns the file and the steps averaged."""
    run = RunDir(Path(run_dir))
    if not run.root.is_dir():
        raise CheckpointError(f"{run_dir}: no such run directory")
    state = average(choose(run, last, best, steps))
    target = Path(out) if out else run.average
    save(state, target)
    return target, state["averaged_steps"]
