"""The layout of a run directory (what ``adl train --out RUN`` writes; docs/runtime.md):

RUN/config.yaml                  the effective configuration
RUN/tokenizer/                   joint.model, or src.model and tgt.model (sentencepiece)
RUN/checkpoints/step-NNNNNNN.pt  the last train.keep_last (and the train.keep_best best)
RUN/checkpoints/last.pt          the latest checkpoint (what --resume continues)
RUN/checkpoints/best.pt          the best by train.best_metric (runs with validation)
RUN/checkpoints/average.pt       written by `adl average`
RUN/checkpoints/damaged/         checkpoints a resume could not read (set aside, never deleted)
RUN/metrics.jsonl                one JSON object per training log line and validation
RUN/train.log                    the log
RUN/.lock                        held by the process training the run (see RunLock)

One process at a time trains a run: :class:`RunLock` takes an exclusive ``flock`` on
RUN/.lock for the run's life, and a second ``adl train`` (or ``--resume``) on the same run
stops with a message naming the holder. The operating system releases the lock when its
process ends, however it ends, so a lock file left by a killed process is taken over.
"""

from __future__ import annotations

import errno
import json
import os
import re
import socket
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import overload

from adl.runtime.errors import RunDirError

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows: no flock, runs are not locked
    fcntl = None  # type: ignore[assignment]

_STEP = re.compile(r"^step-(\d+)\.pt$")


def step_of(name: str) -> int | None:
    """The step of a step checkpoint's file name (``step-0001200.pt`` -> 1200), else None."""
    m = _STEP.match(name)
    return int(m.group(1)) if m else None


class _At:
    """A path of the run folder: ``RunDir(root).NAME`` is ``root / parts...``."""

    def __init__(self, *parts: str):
        self.parts = parts

    @overload
    def __get__(self, run: None, owner: type | None = None) -> _At: ...
    @overload
    def __get__(self, run: RunDir, owner: type | None = None) -> Path: ...
    def __get__(self, run: RunDir | None, owner: type | None = None) -> Path | _At:
        if run is None:  # on the class (RunDir.config): the descriptor, as a property is
            return self
        return run.root.joinpath(*self.parts)

    def __repr__(self) -> str:
        return f"RUN/{'/'.join(self.parts)}"


@dataclass(frozen=True)
class RunDir:
    root: Path

    # the layout of the module's docstring
    config = _At("config.yaml")
    tokenizer = _At("tokenizer")
    checkpoints = _At("checkpoints")
    metrics = _At("metrics.jsonl")
    log = _At("train.log")
    lock = _At(".lock")
    damaged = _At("checkpoints", "damaged")  # checkpoints a resume could not read, set aside
    last = _At("checkpoints", "last.pt")
    best = _At("checkpoints", "best.pt")
    average = _At("checkpoints", "average.pt")

    def step_file(self, step: int) -> Path:
        return self.checkpoints / f"step-{step:07d}.pt"

    def step_files(self) -> dict[int, Path]:
        """Existing step-N.pt files by step."""
        if not self.checkpoints.is_dir():
            return {}
        found = {}
        for p in self.checkpoints.iterdir():
            step = step_of(p.name)
            if step is not None:
                found[step] = p
        return dict(sorted(found.items()))

    def holds_a_run(self) -> bool:
        return self.config.exists() or bool(self.step_files()) or self.last.exists()

    def require_checkpoints(self) -> None:
        """Refuse to resume a run that has no checkpoint (checkpoints/last.pt or step-N.pt)."""
        if not (self.last.is_file() or self.step_files()):
            raise RunDirError(f"{self.root}: nothing to resume (no checkpoints/last.pt)")


# --- one process per run ------------------------------------------------------------------
LOCK_ENV = "ADL_RUN_LOCK_PID"  # set by a launcher that holds the lock for its workers


@dataclass(frozen=True)
class Holder:
    """Who holds (or held) a run's lock, as written in RUN/.lock."""

    pid: int | None
    host: str
    since: str

    @classmethod
    def me(cls) -> Holder:
        return cls(os.getpid(), socket.gethostname(), time.strftime("%Y-%m-%d %H:%M:%S"))

    @classmethod
    def parse(cls, text: str) -> Holder | None:
        try:
            data = json.loads(text)
            return cls(int(data["pid"]), str(data["host"]), str(data["since"]))
        except (ValueError, KeyError, TypeError):
            return None

    def to_text(self) -> str:
        return json.dumps({"pid": self.pid, "host": self.host, "since": self.since}) + "\n"

    def describe(self) -> str:
        return f"pid {self.pid} on {self.host} since {self.since}"


class RunLock:
    """The exclusive lock of a run directory (``flock`` on RUN/.lock), held from before the
    first file of the run is written until the run ends. The lock file says who holds it
    (pid, host, start time); a clean release removes it, so a lock file found unlocked
    was left by a process that died, and is taken over (``taken_over`` says whose)."""

    def __init__(self, run: RunDir):
        self.run = run
        self.fd: int | None = None
        self.created = False  # the run directory was made by this lock (removed if empty)
        self.taken_over: Holder | None = None

    @property
    def held(self) -> bool:
        return self.fd is not None

    def acquire(self, create: bool = True) -> RunLock:
        """Take the lock, making the run directory when ``create``; raises
        :class:`RunDirError` when another process holds it or the directory cannot be
        written."""
        root = self.run.root
        with user_errors(root):
            if root.exists() and not root.is_dir():
                raise RunDirError(f"{root}: is a file, not a run directory (choose another --out)")
            if not root.is_dir():
                if not create:
                    raise RunDirError(f"{root}: no such run directory")
                root.mkdir(parents=True)
                self.created = True
            if fcntl is None:
                return self
            while True:
                fd = os.open(self.run.lock, os.O_RDWR | os.O_CREAT, 0o644)
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except OSError as exc:
                    holder = _read_holder(fd)
                    os.close(fd)
                    if exc.errno not in (errno.EAGAIN, errno.EWOULDBLOCK, errno.EACCES):
                        raise
                    self._give_up()
                    raise RunDirError(in_use(root, holder)) from None
                if _same_file(fd, self.run.lock):
                    break
                os.close(fd)  # removed by its holder's release meanwhile: lock the new one
            self.taken_over = _read_holder(fd)
            os.ftruncate(fd, 0)
            os.pwrite(fd, Holder.me().to_text().encode(), 0)
            os.fsync(fd)
            self.fd = fd
        return self

    def release(self) -> None:
        """Give the lock back (removing the lock file first, while it is still held)."""
        if self.fd is not None:
            try:
                self.run.lock.unlink(missing_ok=True)
            except OSError:
                pass
            os.close(self.fd)
            self.fd = None
        self._give_up()

    def _give_up(self) -> None:
        if self.created:  # a directory this lock made and nothing else filled
            try:
                self.run.root.rmdir()
            except OSError:
                pass
            self.created = False

    def __enter__(self) -> RunLock:
        return self.acquire() if not self.held else self

    def __exit__(self, *exc) -> None:
        self.release()


def in_use(root: Path, holder: Holder | None) -> str:
    who = holder.describe() if holder else "a process that is just starting"
    return f"{root} is in use by another training ({who}): wait for it to end, or stop it"


def held_for_me(run: RunDir) -> bool:
    """Whether the process named by ``ADL_RUN_LOCK_PID`` (the ``adl train --nproc N`` that
    started this worker) holds the run's lock now."""
    pid = os.environ.get(LOCK_ENV)
    if fcntl is None or not pid or not run.lock.is_file():
        return False
    try:
        fd = os.open(run.lock, os.O_RDONLY)
    except OSError:
        return False
    try:
        holder = _read_holder(fd)
        if holder is None or str(holder.pid) != pid:
            return False
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except OSError:
            return True  # locked, by the launcher that named itself
        fcntl.flock(fd, fcntl.LOCK_UN)
        return False
    finally:
        os.close(fd)


def _read_holder(fd: int) -> Holder | None:
    try:
        return Holder.parse(os.pread(fd, 4096, 0).decode("utf-8", "replace"))
    except OSError:
        return None


def _same_file(fd: int, path: Path) -> bool:
    try:
        st = path.stat()
    except FileNotFoundError:
        return False
    mine = os.fstat(fd)
    return (st.st_dev, st.st_ino) == (mine.st_dev, mine.st_ino)


# --- file-system errors ---------------------------------------------------------------------
_USER_ERRNOS = {
    errno.EACCES,
    errno.EPERM,
    errno.EROFS,
    errno.ENOSPC,
    errno.EDQUOT,
    errno.ENOTDIR,
    errno.EEXIST,
    errno.EISDIR,
}


def filesystem_error(exc: OSError, root: Path) -> RunDirError | None:
    """The one-line user error for an OSError met writing the run in ``root`` (None: not
    a problem of the run directory)."""
    if exc.errno not in _USER_ERRNOS:
        return None
    name = Path(os.fsdecode(exc.filename)) if exc.filename else None
    if name is not None and not _within(name, root):
        return None
    if exc.errno == errno.ENOTDIR:
        blocker = next((p for p in [root, *root.parents] if p.is_file()), None)
        if blocker is not None:
            return RunDirError(
                f"{root}: {blocker} is a file, not a directory (choose another --out)"
            )
    if exc.errno in (errno.EEXIST, errno.ENOTDIR) and root.exists() and not root.is_dir():
        return RunDirError(f"{root}: is a file, not a run directory (choose another --out)")
    where = name or root
    if where.name.startswith(".") and where.name.endswith(".tmp"):
        where = where.parent  # a temporary file of an atomic write: name its folder
    hint = " (an immutable directory? lsattr shows the i flag)" if exc.errno == errno.EPERM else ""
    return RunDirError(f"{where}: cannot write the run directory: {exc.strerror}{hint}")


@contextmanager
def user_errors(root: Path) -> Iterator[None]:
    """Turn the file-system errors of writing the run in ``root`` into :class:`RunDirError`."""
    try:
        yield
    except OSError as exc:
        error = filesystem_error(exc, root)
        if error is None:
            raise
        raise error from None


def _within(path: Path, root: Path) -> bool:
    """``path`` is ``root``, in it, or one of the folders ``root`` is made in."""
    path, root = Path(os.path.abspath(path)), Path(os.path.abspath(root))
    return path == root or root in path.parents or path in root.parents
