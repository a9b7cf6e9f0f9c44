"""The checkpoint policy of a run (the part of :class:`~adl.runtime.training.train.Trainer`
that decides what is kept): validating and keeping the best (``train.best_metric``, early
stopping with ``train.patience``), what a checkpoint holds and how a resume restores it
(random states included), which step files stay (``keep_last``, ``keep_best``), and the
averages of the last checkpoints that may become best.pt (``train.average_last``)."""

from __future__ import annotations

import random
import time
from typing import Any

import torch

from adl.runtime.errors import UserError
from adl.runtime.model import averaging
from adl.runtime.model import checkpoint as ckpt
from adl.runtime.training import distributed
from adl.runtime.training import optimizer as optimizer_mod
from adl.runtime.training.state import TrainerState


def rng_state(trainer: TrainerState) -> dict[str, Any]:
    state = {"torch": torch.get_rng_state(), "python": random.getstate()}
    if trainer.device.type == "cuda":
        state["cuda"] = torch.cuda.get_rng_state(trainer.device)
    return state


def set_rng_state(trainer: TrainerState, state: dict[str, Any]) -> None:
    torch.set_rng_state(state["torch"])
    random.setstate(state["python"])
    if trainer.device.type == "cuda" and "cuda" in state:
        torch.cuda.set_rng_state(state["cuda"], trainer.device)


def restore(trainer: TrainerState, state: dict[str, Any]) -> None:
    optimizer_mod.load_state(trainer.optimizer, state["optimizer"])
    trainer.schedule.load_state_dict(state["schedule"])
    trainer.stream.load_state_dict(state["data"])
    tr = state["trainer"]
    trainer.step, trainer.skipped = int(state["step"]), int(tr["skipped"])
    trainer.best_value, trainer.best_step = tr["best_value"], tr["best_step"]
    trainer.best_loss = tr.get("best_loss")
    trainer.stale, trainer.history = int(tr["stale"]), list(tr["history"])
    trainer.last_metrics = dict(state.get("metrics") or {})
    trainer.overflows = int(tr.get("overflows", 0))
    if trainer.scaler.is_enabled() and state.get("scaler"):
        trainer.scaler.load_state_dict(state["scaler"])  # the loss scale goes on where it was
    trainer.saved_step = trainer.step
    rngs = state["rng"]
    if len(rngs) == trainer.dist.world:
        set_rng_state(trainer, rngs[trainer.dist.rank])
    else:
        trainer.log.warning(
            f"the run was saved by {len(rngs)} processes and resumes in "
            f"{trainer.dist.world}: random states and the epoch's batches "
            "start afresh"
        )
    if trainer.main:
        trainer.metrics.truncate_after(trainer.step)


def state(trainer: TrainerState, rngs: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "format": ckpt.FORMAT,
        "step": trainer.step,
        "epoch": trainer.stream.epoch_progress,
        "spec": trainer.model.spec.to_dict(),
        "model": trainer.model.state_dict(),
        "optimizer": trainer.optimizer.state_dict(),
        "schedule": trainer.schedule.state_dict(),
        "data": trainer.stream.state_dict(),
        "rng": rngs,
        "scaler": trainer.scaler.state_dict(),  # {} unless precision fp16
        "trainer": {
            "skipped": trainer.skipped,
            "overflows": trainer.overflows,
            "best_value": trainer.best_value,
            "best_loss": trainer.best_loss,
            "best_step": trainer.best_step,
            "stale": trainer.stale,
            "history": trainer.history,
            "metric": trainer.cfg.train.best_metric,
        },
        "metrics": trainer.last_metrics,
        "config": trainer.cfg.to_dict(),
        "tokenizer": trainer.tokenizers.to_state(),
        "length_ratio": trainer.length_ratio,
    }


def checkpoint(trainer: TrainerState, validate: bool) -> bool:
    """Validate (all ranks take part), update the schedule and the best, write the
    checkpoint (rank 0). True when early stopping says stop."""
    t = trainer.cfg.train
    started = time.monotonic()
    metrics = trainer._validate() if validate else {}
    seconds = time.monotonic() - started
    stop = False
    improved = False
    if metrics:
        trainer.last_metrics = metrics
        if trainer.schedule.on_validation(metrics["ppl"], metrics.get("loss")):
            trainer.log.info(
                f"validation perplexity has not improved for "
                f"{trainer.cfg.schedule.patience} validations: learning rate "
                f"x{trainer.cfg.schedule.factor} -> "
                f"{trainer.schedule.lr(trainer.step + 1):.3e}"
            )
        value = metrics.get(t.best_metric)
        if value is None:
            raise UserError(
                f"train.best_metric={t.best_metric} is not measured "
                "(bleu and chrf need train.bleu=true)"
            )
        loss = metrics.get("loss")
        improved = ckpt.better(t.best_metric, value, loss, trainer.best_value, trainer.best_loss)
        if improved:
            trainer.best_value, trainer.best_loss = value, loss
            trainer.best_step, trainer.stale = trainer.step, 0
        else:
            trainer.stale += 1
            stop = bool(t.patience) and trainer.stale >= t.patience
        trainer.history.append({"step": trainer.step, "value": value, "loss": loss})
        trainer.valid_seconds += seconds
        record = {"split": "valid", "step": trainer.step, **metrics, "seconds": round(seconds, 3)}
        trainer.metrics.write(record)
        shown = _shown(metrics)
        share = trainer.valid_seconds / max(time.monotonic() - trainer._started, 1e-9)
        trainer.log.info(
            f"validation at step {trainer.step:,}: {shown}"
            + (
                " (best)"
                if improved
                else f" (best {trainer.best_value:.4g} at step {trainer.best_step:,})"
            )
            + f" | {seconds:.1f}s, validation {100 * min(share, 1):.0f} % of the run so far"
        )
    rngs = distributed.gather(trainer.dist, rng_state(trainer))
    if trainer.main:
        path = trainer.run_dir.step_file(trainer.step)
        ckpt.save(state(trainer, rngs), path)
        ckpt.publish(path, trainer.run_dir.last)
        if improved:
            ckpt.publish(path, trainer.run_dir.best)
        ckpt.prune(trainer.run_dir, t.keep_last, best_steps(trainer))
    trainer.saved_step = trainer.step
    if stop:
        trainer.log.info(
            f"early stop: {t.best_metric} has not improved for {t.patience} validations"
        )
    return stop


def best_steps(trainer: TrainerState) -> list[int]:
    t = trainer.cfg.train
    if not t.keep_best or not trainer.history:
        return []
    ranked = sorted(
        trainer.history,
        key=lambda h: ckpt.rank(t.best_metric, h["value"], h.get("loss"), h["step"]),
    )
    return [h["step"] for h in ranked[: t.keep_best]]


def average(trainer: TrainerState) -> None:
    """train.average_last: validate the averages of the last 2..N checkpoints; the best
    becomes best.pt when it beats every checkpoint (adl/runtime/model/averaging.py)."""
    t = trainer.cfg.train
    if t.average_last < 2 or not trainer.main or trainer.valid_data is None:
        return
    files = trainer.run_dir.step_files()
    if len(files) < 2:
        return
    started = time.monotonic()
    trained = {k: v.detach().clone() for k, v in trainer.model.state_dict().items()}

    def measure(weights: dict[str, Any]) -> dict[str, float]:
        trainer.model.load_state_dict(weights)
        return trainer._measure()

    def seen(found: averaging.Average) -> None:
        trainer.metrics.write(
            {"split": "average", "step": trainer.step, "steps": found.steps, **found.metrics}
        )
        trainer.log.info(
            f"average of the last {len(found.steps)} checkpoints "
            f"(steps {_steps(found.steps)}): {_shown(found.metrics)}"
        )

    try:
        found = averaging.best_average(files, t.average_last, measure, t.best_metric, seen)
    finally:
        trainer.model.load_state_dict(trained)
    took = time.monotonic() - started
    if found is not None and ckpt.better(
        t.best_metric,
        found.metrics[t.best_metric],
        found.metrics.get("loss"),
        trainer.best_value,
        trainer.best_loss,
    ):
        ckpt.save(found.state, trainer.run_dir.average)
        ckpt.publish(trainer.run_dir.average, trainer.run_dir.best)
        trainer.best_value = found.metrics[t.best_metric]
        trainer.best_loss = found.metrics.get("loss")
        trainer.log.info(
            f"best.pt is now the average of steps {_steps(found.steps)} ({t.best_metric} "
            f"{trainer.best_value:.4g}; {took:.1f}s of averaging)"
        )
    else:
        trainer.log.info(
            f"no average beats the best checkpoint (step {trainer.best_step:,}): best.pt "
            f"stays ({took:.1f}s of averaging)"
        )


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
