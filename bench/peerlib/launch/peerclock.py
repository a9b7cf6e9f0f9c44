"""The one clock of the peer benchmark, shared by the launchers of every system.

The clock starts when the first update starts and a run trains until the update during
which the time runs out ends (each system then writes its last checkpoint, after the
clock). At every checkpoint the launcher records the update, the seconds since the clock
started at the end of that update (before the checkpoint's validation, which is counted in
the later checkpoints' seconds), and the target tokens (with eos) trained on so far, in
``stats.json``, rewritten at every checkpoint so that a stopped run leaves what it did.

Plain Python: it runs inside ADL's, Sockeye's and fairseq's virtualenvs alike.
"""

from __future__ import annotations

import json
import os
import time


class Clock:
    def __init__(self, stats_file: str, minutes: float = 0.0):
        self.stats_file, self.minutes = stats_file, minutes
        self.start: float | None = None  # monotonic time of the first update's start
        self.updates = self.tokens = 0
        self.last = 0.0  # seconds at the end of the last update
        self.checkpoints: list[dict] = []

    def update_started(self) -> None:
        if self.start is None:
            self.start = time.monotonic()

    def update_done(self, tokens: int, updates: int) -> None:
        self.tokens += int(tokens)
        self.updates = int(updates)
        self.last = self.elapsed()

    def elapsed(self) -> float:
        return 0.0 if self.start is None else time.monotonic() - self.start

    def over(self) -> bool:
        """Whether the time is up (never before the first update)."""
        return bool(self.minutes) and self.start is not None and self.elapsed() >= 60 * self.minutes

    def checkpoint(self, name: str, update: int) -> None:
        """A checkpoint of ``update`` (the last update done) named ``name``."""
        self.checkpoints = [c for c in self.checkpoints if c["update"] != int(update)]
        self.checkpoints.append(
            {
                "update": int(update),
                "seconds": round(self.last, 3),
                "tokens": self.tokens,
                "name": name,
            }
        )
        self.write()

    def run(self, main):
        """``main()``, then the record written whatever happened; returns what main does."""
        try:
            return main()
        finally:
            self.write()

    def write(self) -> None:
        record = {
            "updates": self.updates,
            "tokens": self.tokens,
            "seconds": round(self.last, 3),
            "checkpoints": self.checkpoints,
        }
        tmp = self.stats_file + ".tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump(record, f, indent=1)
        os.replace(tmp, self.stats_file)


def take(args: list, flag: str) -> str:
    """Remove ``flag VALUE`` from ``args`` (a launcher's own options) and return VALUE."""
    i = args.index(flag)
    value = args[i + 1]
    del args[i : i + 2]
    return value
