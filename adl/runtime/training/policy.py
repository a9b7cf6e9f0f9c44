"""The checkpoint policy of a run (the part of :class:`~adl.runtime.training.train.Trainer`
that decides what is kept): at each validation, :func:`decide` says whether the model is the
best so far and whether early stopping (``train.patience``) stops the run, from the
validation and the bookkeeping alone; :func:`checkpoint` validates, has the schedule and the
bookkeeping take the validation in, and saves (:func:`save`: what a checkpoint holds, which
step files stay, ``keep_last``, ``keep_best``). It also restores a resume (random states
included) and makes the averages of the last checkpoints that may become best.pt
(``train.average_last``)."""

from __future__ import annotations

import random
import time
from dataclasses import dataclass
from typing import Any

import torch

from adl.runtime.config import TrainConfig
from adl.runtime.errors import UserError
from adl.runtime.model import averaging
from adl.runtime.model import checkpoint as ckpt
from adl.runtime.training import distributed
from adl.runtime.training import optimizer as optimizer_mod
from adl.runtime.training.state import Bookkeeping, Place, Training, TrainingState


def rng_state(device: torch.device) -> dict[str, Any]:
    state = {"torch": torch.get_rng_state(), "python": random.getstate()}
    if device.type == "cuda":
        state["cuda"] = torch.cuda.get_rng_state(device)
    return state


def set_rng_state(device: torch.device, state: dict[str, Any]) -> None:
    torch.set_rng_state(state["torch"])
    random.setstate(state["python"])
    if device.type == "cuda" and "cuda" in state:
        torch.cuda.set_rng_state(state["cuda"], device)


def restore(place: Place, st: TrainingState, state: dict[str, Any]) -> None:
    """Continue from a checkpoint: its bookkeeping, optimizer, rate, batches, loss scale and
    random states."""
    optimizer_mod.load_state(st.optimizer, state["optimizer"])
    st.schedule.load_state_dict(state["schedule"])
    st.stream.load_state_dict(state["data"])
    st.book = Bookkeeping.from_state(state)
    if st.scaler.is_enabled() and state.get("scaler"):
        st.scaler.load_state_dict(state["scaler"])  # the loss scale goes on where it was
    rngs = state["rng"]
    if len(rngs) == place.dist.world:
        set_rng_state(place.device, rngs[place.dist.rank])
    else:
        st.log.warning(
            f"the run was saved by {len(rngs)} processes and resumes in "
            f"{place.dist.world}: random states and the epoch's batches "
            "start afresh"
        )
    if place.main:
        st.metrics.truncate_after(st.book.step)


def contents(trainer: Training, rngs: list[dict[str, Any]]) -> dict[str, Any]:
    """What a checkpoint holds."""
    st, cfg = trainer.state, trainer.place.cfg
    return {
        "format": ckpt.FORMAT,
        "step": st.book.step,
        "epoch": st.stream.epoch_progress,
        "spec": st.model.spec.to_dict(),
        "model": st.model.state_dict(),
        "optimizer": st.optimizer.state_dict(),
        "schedule": st.schedule.state_dict(),
        "data": st.stream.state_dict(),
        "rng": rngs,
        "scaler": st.scaler.state_dict(),  # {} unless precision fp16
        "trainer": st.book.to_state(cfg.train.best_metric),
        "metrics": st.book.last_metrics,
        "config": cfg.to_dict(),
        "tokenizer": st.tokenizers.to_state(),
        "length_ratio": st.length_ratio,
    }


@dataclass(frozen=True)
class Decision:
    """What one validation decides."""

    value: float  # train.best_metric's value
    loss: float | None  # the validation loss (breaks ties of capped perplexities)
    improved: bool  # the best so far: best.pt
    stop: bool  # early stopping: train.patience validations without a better best


def decide(t: TrainConfig, book: Bookkeeping, metrics: dict[str, float]) -> Decision:
    """The decision of a validation, from its ``metrics`` and the bookkeeping so far."""
    value = metrics.get(t.best_metric)
    if value is None:
        raise UserError(
            f"train.best_metric={t.best_metric} is not measured "
            "(bleu and chrf need train.bleu=true)"
        )
    loss = metrics.get("loss")
    improved = ckpt.better(t.best_metric, value, loss, book.best_value, book.best_loss)
    stop = not improved and bool(t.patience) and book.since_best + 1 >= t.patience
    return Decision(value, loss, improved, stop)


def take(book: Bookkeeping, decision: Decision) -> None:
    """The bookkeeping after a validation decided."""
    if decision.improved:
        book.best_value, book.best_loss = decision.value, decision.loss
        book.best_step, book.since_best = book.step, 0
    else:
        book.since_best += 1
    book.history.append({"step": book.step, "value": decision.value, "loss": decision.loss})


def checkpoint(trainer: Training, validate: bool) -> bool:
    """Validate (all ranks take part), let the schedule and the bookkeeping take the
    validation in, save the checkpoint (rank 0). True when early stopping says stop."""
    st, cfg = trainer.state, trainer.place.cfg
    started = time.monotonic()
    metrics = trainer.validate() if validate else {}
    seconds = time.monotonic() - started
    decision = None
    if metrics:
        st.book.last_metrics = metrics
        if st.schedule.on_validation(metrics["ppl"], metrics.get("loss")):
            st.log.info(
                f"validation perplexity has not improved for {cfg.schedule.patience} "
                f"validations: learning rate x{cfg.schedule.factor} -> "
                f"{st.schedule.lr(st.book.step + 1):.3e}"
            )
        decision = decide(cfg.train, st.book, metrics)
        take(st.book, decision)
        trainer.clock.valid_seconds += seconds
        _report(trainer, metrics, decision, seconds)
    save(trainer, improved=decision is not None and decision.improved)
    if decision is not None and decision.stop:
        st.log.info(
            f"early stop: {cfg.train.best_metric} has not improved for "
            f"{cfg.train.patience} validations"
        )
    return decision is not None and decision.stop


def _report(trainer: Training, metrics: dict[str, float], decision: Decision, seconds: float):
    """The validation's line of the metrics file and of the log."""
    st, book = trainer.state, trainer.state.book
    record = {"split": "valid", "step": book.step, **metrics, "seconds": round(seconds, 3)}
    st.metrics.write(record)
    clock = trainer.clock
    share = clock.valid_seconds / max(time.monotonic() - clock.started, 1e-9)
    assert book.best_value is not None and book.best_step is not None  # a validation decided
    st.log.info(
        f"validation at step {book.step:,}: {_shown(metrics)}"
        + (
            " (best)"
            if decision.improved
            else f" (best {book.best_value:.4g} at step {book.best_step:,})"
        )
        + f" | {seconds:.1f}s, validation {100 * min(share, 1):.0f} % of the run so far"
    )


def save(trainer: Training, improved: bool) -> None:
    """Write the checkpoint of the step (rank 0): the step file, last.pt, best.pt when
    ``improved``, and the step files that stay."""
    st, place = trainer.state, trainer.place
    rngs = distributed.gather(place.dist, rng_state(place.device))
    if place.main:
        path = place.run_dir.step_file(st.book.step)
        ckpt.save(contents(trainer, rngs), path)
        ckpt.publish(path, place.run_dir.last)
        if improved:
            ckpt.publish(path, place.run_dir.best)
        ckpt.prune(place.run_dir, place.cfg.train.keep_last, best_steps(place.cfg.train, st.book))
    st.book.saved_step = st.book.step


def best_steps(t: TrainConfig, book: Bookkeeping) -> list[int]:
    """The steps of the ``keep_best`` best validations (their step files stay)."""
    if not t.keep_best or not book.history:
        return []
    ranked = sorted(
        book.history,
        key=lambda h: ckpt.rank(t.best_metric, h["value"], h.get("loss"), h["step"]),
    )
    return [h["step"] for h in ranked[: t.keep_best]]


def average(trainer: Training) -> None:
    """train.average_last: validate the averages of the last 2..N checkpoints; the best
    becomes best.pt when it beats every checkpoint (adl/runtime/model/averaging.py)."""
    st, place = trainer.state, trainer.place
    t, book = place.cfg.train, st.book
    if t.average_last < 2 or not place.main or st.valid_data is None:
        return
    files = place.run_dir.step_files()
    if len(files) < 2:
        return
    started = time.monotonic()
    trained = {k: v.detach().clone() for k, v in st.model.state_dict().items()}

    def measure(weights: dict[str, Any]) -> dict[str, float]:
        st.model.load_state_dict(weights)
        return trainer.measure()

    def seen(found: averaging.Average) -> None:
        st.metrics.write(
            {"split": "average", "step": book.step, "steps": found.steps, **found.metrics}
        )
        st.log.info(
            f"average of the last {len(found.steps)} checkpoints "
            f"(steps {_steps(found.steps)}): {_shown(found.metrics)}"
        )

    try:
        found = averaging.best_average(files, t.average_last, measure, t.best_metric, seen)
    finally:
        st.model.load_state_dict(trained)
    took = time.monotonic() - started
    if found is not None and ckpt.better(
        t.best_metric,
        found.metrics[t.best_metric],
        found.metrics.get("loss"),
        book.best_value,
        book.best_loss,
    ):
        ckpt.save(found.state, place.run_dir.average)
        ckpt.publish(place.run_dir.average, place.run_dir.best)
        book.best_value = found.metrics[t.best_metric]
        book.best_loss = found.metrics.get("loss")
        st.log.info(
            f"best.pt is now the average of steps {_steps(found.steps)} ({t.best_metric} "
            f"{book.best_value:.4g}; {took:.1f}s of averaging)"
        )
    else:
        st.log.info(
            f"no average beats the best checkpoint (step {book.best_step:,}): best.pt "
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
