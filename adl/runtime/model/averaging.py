"""Checkpoint averaging at the end of a run (``train.average_last``).

The mean of the weights of the last few checkpoints is often a better model than any one of
them (Vaswani et al. 2017 decode the average of the last 5 or 20; Sockeye and fairseq ship it
as a separate script). In a run of minutes at a high learning rate the checkpoints scatter
around a minimum, and their mean lies nearer to it.

At the end of a run the trainer averages the last ``k`` step checkpoints for ``k`` = 2 ..
``train.average_last`` and validates each average exactly as it validates a checkpoint. When
the best of them ranks above every checkpoint of the run by ``train.best_metric``, it is
written to ``checkpoints/average.pt`` and becomes ``best.pt``; otherwise ``best.pt`` stays.
The choice is made on the validation set only, so an average that does not help is never
used.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from adl.runtime.model import checkpoint as ckpt


@dataclass
class Average:
    steps: list[int]  # the checkpoints averaged, oldest first
    metrics: dict[str, float]  # its validation
    state: dict[str, Any]  # the checkpoint (no optimizer state)


def best_average(
    files: dict[int, Path],
    most: int,
    measure: Callable[[dict[str, Any]], dict[str, float]],
    metric: str,
    seen: Callable[[Average], None] = lambda a: None,
) -> Average | None:
    """Average the last ``k`` of ``files`` (step -> checkpoint) for ``k`` = 2 .. ``most``;
    ``measure`` validates a model's weights, ``seen`` hears of each average. Returns the best
    average by ``metric`` (None when there are fewer than two checkpoints)."""
    steps = sorted(files)[-most:]
    found: Average | None = None
    for k in range(2, len(steps) + 1):
        state = ckpt.average([files[s] for s in steps[-k:]])
        average = Average(steps[-k:], measure(state["model"]), state)
        seen(average)
        got, best = average.metrics, found.metrics if found else {}
        if ckpt.better(metric, got[metric], got.get("loss"), best.get(metric), best.get("loss")):
            found = average
    return found
