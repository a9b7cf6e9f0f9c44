"""What a sweep keeps on disk besides the ordinary run folders, and reading it back.

SWEEP/sweep.json               which spec made the sweep (``adl sweep SWEEP --status``), and the
                               results folder a --results named (results.py)
SWEEP/spec.yaml                a copy of that spec as last run, for the record
SWEEP/SYSTEM/seed-N/           the run folder of a trained system (what ``adl train --out``
                               makes), plus:
    job.json                   the job's state: running | stopped | failed | trained | done,
                               its process, its error, its training progress and cost
    job.log                    what the job printed (the traceback of a failure too)
    result.json, test.hyp      the test set's translations and scores (written last)
SWEEP/SYSTEM/seed-N/           for a system that decodes another's runs: result.json and
                               test.hyp only
SWEEP/results.{md,csv,json}    the table; SWEEP/pictures/*.png
SWEEP/jobs/                    submitit's logs (--executor slurm | submitit-local)
"""

from __future__ import annotations

import json
import os
import socket
import tempfile
import time
from pathlib import Path
from typing import Any

SWEEP = "sweep.json"  # in the sweep folder
STATE = "job.json"  # in a run folder
RESULT = "result.json"
HYP = "test.hyp"
LOG = "job.log"


def read_json(path: Path) -> dict[str, Any] | None:
    """A JSON object from ``path``; None when it is missing or not readable JSON."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def write_json(path: Path, data: dict[str, Any]) -> None:
    """Write atomically (a reader sees the old file or the new one, never a part)."""
    write_text(path, json.dumps(data, indent=2, sort_keys=False) + "\n")


def write_text(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def update_state(folder: Path, **changes: Any) -> dict[str, Any]:
    """Merge ``changes`` into ``folder/job.json`` (with the time of the change)."""
    state = read_json(folder / STATE) or {}
    state.update(changes, updated=time.time())
    write_json(folder / STATE, state)
    return state


def me() -> dict[str, Any]:
    """This process, as a state records it."""
    return {"pid": os.getpid(), "host": socket.gethostname()}


def alive(state: dict[str, Any]) -> bool | None:
    """Whether the process a state names still runs: True or False on this host, None for
    another host (a cluster node: this machine cannot tell)."""
    if state.get("host") != socket.gethostname():
        return None
    pid = state.get("pid")
    if not isinstance(pid, int):
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:  # a killed process nobody has reaped yet is a zombie: dead
        stat = Path(f"/proc/{pid}/stat").read_text()
        return stat.rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return True


def last_step(run: Path) -> int | None:
    """The last training step the run logged (metrics.jsonl), without reading it all."""
    path = run / "metrics.jsonl"
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            size = f.tell()
            f.seek(max(0, size - 4096))
            lines = f.read().decode("utf-8", "replace").splitlines()
    except OSError:
        return None
    for line in reversed(lines):
        try:
            return int(json.loads(line)["step"])
        except (ValueError, KeyError, TypeError):
            continue
    return None
