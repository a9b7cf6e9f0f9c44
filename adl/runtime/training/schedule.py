"""Learning-rate schedules, each with linear warm-up from ``warmup_init`` to the peak ``lr``:

- ``constant``: the peak rate after warm-up;
- ``inverse_sqrt``: ``lr * sqrt(warmup / step)`` after warm-up (Vaswani et al.'s schedule,
  written with the peak rate as in fairseq);
- ``linear``: from ``lr`` down to ``min_lr`` at ``max_steps`` (You et al. 2020);
- ``plateau``: the peak rate, multiplied by ``factor`` whenever the validation perplexity has
  not improved for ``schedule.patience`` validations (Domhan 2018: ×0.7 after 8). This is
  the rate's patience; ``train.patience``, the trainer's, stops the run instead.

A :class:`Schedule` is the one owner of the rate: the optimizer is made with the rate of the
first update (:meth:`Schedule.lr` of step 1), and :meth:`Schedule.apply` alone sets it
before each update; the plateau's decay is the schedule's own, told of each validation.
"""

from __future__ import annotations

import math

from adl.runtime.config import ScheduleConfig


class Schedule:
    """The learning rate of each update, from the peak ``lr`` (``optim.lr``)."""

    def __init__(self, cfg: ScheduleConfig, lr: float, max_steps: int = 0):
        self.cfg, self.peak, self.max_steps = cfg, lr, max_steps
        self.scale = 1.0  # plateau: product of the decays so far
        self.best: float | None = None  # plateau: best validation perplexity
        self.best_loss: float | None = None  # plateau: the validation loss there
        self.stalled = 0  # plateau: validations since it improved (decays at cfg.patience)

    def lr(self, step: int) -> float:
        """The learning rate of update ``step`` (1 = the first)."""
        c = self.cfg
        if c.warmup and step <= c.warmup:
            return c.warmup_init + (self.peak - c.warmup_init) * step / c.warmup
        if c.kind == "inverse_sqrt":
            return self.peak * math.sqrt(max(c.warmup, 1) / step)
        if c.kind == "linear":
            span = max(self.max_steps - c.warmup, 1)
            done = min(max(step - c.warmup, 0) / span, 1.0)
            return max(self.peak * (1.0 - done), c.min_lr)
        if c.kind == "plateau":
            return max(self.peak * self.scale, c.min_lr)
        return self.peak

    def apply(self, optimizer, step: int) -> float:
        """Set every parameter group's rate to that of update ``step``; returns it."""
        rate = self.lr(step)
        for group in optimizer.param_groups:
            group["lr"] = rate
        return rate

    def on_validation(self, perplexity: float, loss: float | None = None) -> bool:
        """Feed a validation perplexity (and loss: reported perplexity is capped, and
        between capped values the loss tells progress); True when the rate was just
        decayed."""
        if self.cfg.kind != "plateau" or not math.isfinite(perplexity):
            return False
        finite = lambda x: x if x is not None and math.isfinite(x) else math.inf
        if self.best is None or (perplexity, finite(loss)) < (self.best, finite(self.best_loss)):
            self.best, self.best_loss, self.stalled = perplexity, loss, 0
            return False
        self.stalled += 1
        if self.stalled >= self.cfg.patience:
            self.scale *= self.cfg.factor
            self.stalled = 0
            return True
        return False

    def state_dict(self) -> dict:
        """What a checkpoint keeps (its keys are those of earlier checkpoints)."""
        return {
            "scale": self.scale,
            "best": self.best,
            "best_loss": self.best_loss,
            "bad": self.stalled,
        }

    def load_state_dict(self, state: dict) -> None:
        self.scale, self.best, self.stalled = state["scale"], state["best"], state["bad"]
        self.best_loss = state.get("best_loss")
