"""The cost columns, measured the same way for every system.

- Training throughput (:class:`Meter`): target tokens of the updates over their wall time.
  ``on_step`` is called after each update; the time between two calls is one update, except
  after a checkpoint step, when it also holds validation and saving: those intervals and
  the first one (set-up) are left out.
- Peak memory (:class:`Peak`): on a GPU, the most memory torch allocated
  (``torch.cuda.max_memory_allocated``); on a CPU, the high-water mark of the process's
  resident memory (``VmHWM``, reset through ``/proc/self/clear_refs`` at the start of each
  phase; where that is not possible, the process's ``ru_maxrss``).
"""

from __future__ import annotations

import re
import resource
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

KEEP = 3  # progress snapshots kept (the checkpoint a resume starts from is among them)


class Meter:
    """The ``on_step`` callback of a sweep's training run: throughput, and a snapshot of the
    totals at each checkpoint step (what a resumed run continues from)."""

    def __init__(
        self,
        valid_every: int,
        start: dict[str, float],
        save: Callable[[dict[str, Any]], None],
    ):
        self.valid_every = valid_every
        self.tokens = float(start.get("tokens", 0.0))  # target tokens in measured intervals
        self.seen = float(start.get("seen", 0.0))  # target tokens of every update (the passes)
        self.seconds = float(start.get("seconds", 0.0))  # their wall time
        self.before = float(start.get("elapsed", 0.0))  # training time of earlier segments
        self.t0 = time.perf_counter()
        self.prev: tuple[int, float] | None = None  # (step, time) of the last update
        self.save = save

    def elapsed(self, now: float | None = None) -> float:
        """Training wall time so far, earlier segments included."""
        return self.before + (time.perf_counter() if now is None else now) - self.t0

    def __call__(self, step: int, batches: list) -> None:
        now = time.perf_counter()
        self.seen += sum(b.tgt_tokens for b in batches)
        if self.prev is not None and self.prev[0] % self.valid_every != 0:
            self.tokens += sum(b.tgt_tokens for b in batches)
            self.seconds += now - self.prev[1]
        self.prev = (step, now)
        if step % self.valid_every == 0:  # a checkpoint follows: what a resume starts from
            self.snapshot(step, now)

    def snapshot(self, step: int, now: float | None = None) -> None:
        """Save the totals at ``step``, whose checkpoint a resume will start from: every
        validation step's, and the checkpoint a stopped run saves where it stopped (without
        it, a resume would start from the validation step before and the updates after it
        would be missing from the totals: the passes of such runs were short by up to 13 %)."""
        self.save(
            {
                "step": step,
                "tokens": self.tokens,
                "seen": self.seen,
                "seconds": self.seconds,
                "elapsed": self.elapsed(now),
            }
        )

    @property
    def tokens_per_s(self) -> float | None:
        return self.tokens / self.seconds if self.seconds > 0 else None


def resume_point(snapshots: list[dict[str, Any]], step: int | None) -> dict[str, float]:
    """The snapshot of the checkpoint a run resumes from (the nearest earlier one when that
    step has none; nothing when there is no checkpoint)."""
    if step is None:
        return {}
    earlier = [s for s in snapshots if s.get("step", 0) <= step]
    return max(earlier, key=lambda s: s["step"]) if earlier else {}


def keep(snapshots: list[dict[str, Any]], new: dict[str, Any]) -> list[dict[str, Any]]:
    rest = [s for s in snapshots if s.get("step") != new["step"]]
    return sorted(rest + [new], key=lambda s: s["step"])[-KEEP:]


class Peak:
    """Peak memory of one phase (training, decoding) in MiB, and how it was measured."""

    def __init__(self, device: torch.device):
        self.device = device
        self.how = "cuda"
        if device.type == "cuda":
            torch.cuda.reset_peak_memory_stats(device)
        elif _reset_hwm():
            self.how = "rss"
        else:
            self.how = "maxrss"

    def mib(self) -> float:
        if self.how == "cuda":
            return torch.cuda.max_memory_allocated(self.device) / 2**20
        if self.how == "rss":
            found = _hwm_kib()
            if found is not None:
                return found / 1024
        kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        return kib / (2**20 if sys.platform == "darwin" else 1024)  # bytes on macOS

    @property
    def description(self) -> str:
        return {
            "cuda": "the most GPU memory torch allocated",
            "rss": "the high-water mark of the process's resident memory",
            "maxrss": "the process's peak resident memory",
        }[self.how]


def _reset_hwm() -> bool:
    """Reset the process's resident-memory high-water mark (Linux 4.0+)."""
    try:
        Path("/proc/self/clear_refs").write_text("5")
    except OSError:
        return False
    return _hwm_kib() is not None


def _hwm_kib() -> int | None:
    try:
        found = re.search(r"VmHWM:\s+(\d+)", Path("/proc/self/status").read_text())
    except OSError:
        return None
    return int(found.group(1)) if found else None
