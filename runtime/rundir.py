"""The layout of a run directory (what ``adl train --out RUN`` writes; docs/runtime.md):

RUN/config.yaml                  the effective configuration
RUN/tokenizer/                   joint.model, or src.model and tgt.model (sentencepiece)
RUN/checkpoints/step-NNNNNNN.pt  the last train.keep_last (and the train.keep_best best)
RUN/checkpoints/last.pt          the latest checkpoint (what --resume continues)
RUN/checkpoints/best.pt          the best by train.best_metric (runs with validation)
RUN/checkpoints/average.pt       written by `adl average`
RUN/metrics.jsonl                one JSON object per training log line and validation
RUN/train.log                    the log
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

_STEP = re.compile(r"^step-(\d+)\.pt$")


@dataclass(frozen=True)
class RunDir:
    root: Path

    @property
    def config(self) -> Path:
        return self.root / "config.yaml"

    @property
    def tokenizer(self) -> Path:
        return self.root / "tokenizer"

    @property
    def checkpoints(self) -> Path:
        return self.root / "checkpoints"

    @property
    def metrics(self) -> Path:
        return self.root / "metrics.jsonl"

    @property
    def log(self) -> Path:
        return self.root / "train.log"

    @property
    def last(self) -> Path:
        return self.checkpoints / "last.pt"

    @property
    def best(self) -> Path:
        return self.checkpoints / "best.pt"

    @property
    def average(self) -> Path:
        return self.checkpoints / "average.pt"

    def step_file(self, step: int) -> Path:
        return self.checkpoints / f"step-{step:07d}.pt"

    def step_files(self) -> dict[int, Path]:
        """Existing step-N.pt files by step."""
        if not self.checkpoints.is_dir():
            return {}
        found = {}
        for p in self.checkpoints.iterdir():
            m = _STEP.match(p.name)
            if m:
                found[int(m.group(1))] = p
        return dict(sorted(found.items()))

    def holds_a_run(self) -> bool:
        return self.config.exists() or bool(self.step_files()) or self.last.exists()
