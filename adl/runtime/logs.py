"""What a run reports: the log (RUN/train.log and the terminal), a progress bar, and the
metrics (RUN/metrics.jsonl, and TensorBoard's event files when tensorboard is installed)."""

from __future__ import annotations

import json
import logging
import math
import sys
from pathlib import Path
from typing import Any, TextIO


def duration(seconds: float) -> str:
    if not math.isfinite(seconds):
        return "?"
    seconds = int(seconds)
    h, rest = divmod(seconds, 3600)
    m, s = divmod(rest, 60)
    return f"{h}:{m:02d}:{s:02d}" if h else f"{m}:{s:02d}"


class Progress:
    """The training progress bar on a terminal (a tqdm bar: steps, ETA, and tokens/s, loss
    and learning rate after it). Off a terminal it draws nothing: the periodic log lines say
    the same."""

    def __init__(self, total: int, stream: TextIO | None = None, start: int = 0):
        from tqdm import tqdm

        self.stream = stream or sys.stderr
        self.live = bool(getattr(self.stream, "isatty", lambda: False)())
        self.bar = tqdm(
            total=total or None,
            initial=start,
            file=self.stream,
            disable=not self.live,
            unit=" steps",
            desc="step",
            mininterval=0.2,
            dynamic_ncols=True,
        )

    def update(self, step: int, tokens_per_s: float, loss: float, lr: float) -> None:
        if not self.live:
            return
        self.bar.set_postfix_str(
            f"{tokens_per_s:,.0f} tok/s | loss {loss:.3f} | lr {lr:.2e}", refresh=False
        )
        self.bar.update(step - self.bar.n)

    def clear(self) -> None:
        """Take the bar off the line (a log line is printed next)."""
        self.bar.clear()

    def redraw(self) -> None:
        self.bar.refresh()

    def close(self) -> None:
        self.bar.close()


class _ConsoleHandler(logging.StreamHandler):
    """Log lines that step around the progress bar."""

    def __init__(self, stream: TextIO, progress: Progress | None = None):
        super().__init__(stream)
        self.progress = progress

    def emit(self, record: logging.LogRecord) -> None:
        if self.progress:
            self.progress.clear()
        super().emit(record)
        if self.progress:
            self.progress.redraw()


def make_logger(
    name: str, log_file: Path | None, stream: TextIO | None = None, quiet: bool = False
) -> tuple[logging.Logger, _ConsoleHandler]:
    """A logger writing to ``log_file`` (rank 0) and the terminal (warnings only when
    ``quiet``, e.g. ranks other than 0)."""
    logger = logging.getLogger(name)
    logger.handlers.clear()
    logger.setLevel(logging.INFO)
    logger.propagate = False
    console = _ConsoleHandler(stream or sys.stderr)
    console.setFormatter(logging.Formatter("%(message)s"))
    console.setLevel(logging.WARNING if quiet else logging.INFO)
    logger.addHandler(console)
    if log_file is not None:
        handler = logging.FileHandler(log_file, encoding="utf-8")
        handler.setFormatter(
            logging.Formatter("%(asctime)s %(levelname)s %(message)s", "%Y-%m-%d %H:%M:%S")
        )
        logger.addHandler(handler)
    return logger, console


def close_logger(logger: logging.Logger) -> None:
    for handler in list(logger.handlers):
        handler.close()
        logger.removeHandler(handler)


class Metrics:
    """Appends one JSON object per record to metrics.jsonl (and TensorBoard scalars)."""

    def __init__(self, path: Path | None, tensorboard_dir: Path | None = None):
        self.path = path
        self.writer = None
        if path is not None and tensorboard_dir is not None:
            try:
                from torch.utils.tensorboard import SummaryWriter
            except ImportError:  # tensorboard is optional
                pass
            else:
                self.writer = SummaryWriter(str(tensorboard_dir))

    def write(self, record: dict[str, Any]) -> None:
        if self.path is None:
            return
        with open(self.path, "a", encoding="utf-8") as f:
            f.write(json.dumps(record, sort_keys=False) + "\n")
        if self.writer is not None:
            split, step = record.get("split", "train"), record.get("step", 0)
            for key, value in record.items():
                if key not in ("split", "step") and isinstance(value, (int, float)):
                    self.writer.add_scalar(f"{split}/{key}", value, step)
            self.writer.flush()

    def truncate_after(self, step: int) -> None:
        """Forget records after ``step`` (a resumed run writes them again)."""
        if self.path is None or not self.path.exists():
            return
        kept = []
        for line in self.path.read_text(encoding="utf-8").splitlines():
            try:
                if json.loads(line).get("step", 0) <= step:
                    kept.append(line)
            except json.JSONDecodeError:
                continue  # a line cut by a kill
        tmp = self.path.with_suffix(".jsonl.tmp")
        tmp.write_text("".join(k + "\n" for k in kept), encoding="utf-8")
        tmp.replace(self.path)

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
