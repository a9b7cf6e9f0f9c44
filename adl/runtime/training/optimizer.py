"""The training's optimizer: Adam or AdamW as ``optim`` says, with torch's fused kernel where
torch has one, and its state restored from a checkpoint without losing the kernel."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import torch

from adl.runtime.config import OptimConfig

IMPLEMENTATION = ("fused", "foreach")  # how torch steps, not what: kept over a checkpoint's


def make(
    params: Iterable[torch.nn.Parameter],
    o: OptimConfig,
    fused: bool = True,
    lr: float | None = None,
):
    """Adam or AdamW at the rate ``lr`` (default ``o.lr``: a schedule gives the rate of its
    first update, :meth:`~adl.runtime.training.schedule.Schedule.lr`); ``fused``: where torch has the kernel (CUDA, and the CPU since torch
    2.4), one pass over every parameter's update instead of a handful of tensor operations
    per parameter, with the same arithmetic (bench/optimizer_step.py times both and compares
    the weights they reach)."""
    kind = torch.optim.AdamW if o.optimizer == "adamw" else torch.optim.Adam
    params = list(params)
    settings: dict[str, Any] = dict(
        lr=o.lr if lr is None else lr, betas=tuple(o.betas), eps=o.eps, weight_decay=o.weight_decay
    )
    if fused:
        try:
            return kind(params, **settings, fused=True)
        except (RuntimeError, TypeError):  # no fused kernel for this device or torch
            pass
    return kind(params, **settings)


def load_state(opt: torch.optim.Optimizer, state: dict[str, Any]) -> None:
    """``opt.load_state_dict(state)``, keeping ``opt``'s implementation: torch takes a saved
    group's settings whole, so a checkpoint of an unfused optimizer would switch the kernel
    off (and one of a fused optimizer switch it on where this torch has none)."""
    chosen = [{k: g.get(k) for k in IMPLEMENTATION} for g in opt.param_groups]
    opt.load_state_dict(state)
    for group, keep in zip(opt.param_groups, chosen):
        group.update(keep)
