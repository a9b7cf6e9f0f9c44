"""Finished runs kept where git can hold them, so a benchmark continues on a fresh machine.

A benchmark's folder (``--out``, under ``runs/``, which git ignores) holds every run's
checkpoints and logs; a machine that is handed back loses them. With ``--results DIR``
each job, when it finishes, copies the few small files that make it finished into
``DIR`` at the same place below it as below ``--out``: its ``result.json`` and its test
translations (``test.beamK.txt``, and ``test.OWN.beamK.txt`` of a peer's own practice:
what the report's paired test reads). ``DIR`` also gets
the benchmark's settings (``benchmark.json``), checked like ``--out``'s. Started again on
another machine with the same options, the benchmark copies the kept files of every job
back into ``--out`` before it runs anything, so those jobs are finished there and only the
others train. Commit ``DIR`` as runs finish (``docs/results/peers/...``). A ``DIR`` in
which git would ignore the kept files (a ``.gitignore`` rule such as ``runs/`` matching a
folder of the layout) is refused before anything runs (:meth:`Kept.check`): its runs
would be lost with the machine all the same.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from .runs import RESULT, Job

# the files of a finished job that the report needs (the rest: checkpoints, logs)
PATTERNS = (RESULT, "test.beam*.txt", "test.*.beam*.txt")


class Kept:
    """The kept copies, under ``root``, of the jobs of a benchmark folder ``out``."""

    def __init__(self, root: Path, out: Path):
        self.root, self.out = Path(root), Path(out)

    def place(self, job: Job) -> Path:
        """Where ``job``'s files are kept: its folder's place below ``out``, below ``root``."""
        return self.root / job.out.relative_to(self.out)

    def check(self, jobs: list[Job]) -> None:
        """Raise ValueError when git would ignore a file kept for one of ``jobs``."""
        ignored = ignored_by_git([self.place(job) / RESULT for job in jobs])
        if ignored:
            raise ValueError(
                f"git ignores what would be kept in {self.root} ({ignored[0]}): "
                "change the rule or choose another folder"
            )

    def keep(self, job: Job) -> None:
        """Copy a finished job's result and translations into its place."""
        place = self.place(job)
        place.mkdir(parents=True, exist_ok=True)
        for path in files(job.out):
            copy(path, place)

    def restore(self, jobs: list[Job]) -> int:
        """Copy back the kept files of every job that is not finished in ``out`` but is kept;
        returns how many. A job's folder is emptied first (what an unfinished run left)."""
        n = 0
        for job in jobs:
            place = self.place(job)
            if job.finished() or not (place / RESULT).is_file():
                continue
            if job.out.exists():
                shutil.rmtree(job.out)
            job.out.mkdir(parents=True)
            for path in files(place):
                copy(path, job.out)
            n += 1
        return n


def ignored_by_git(paths: list[Path]) -> list[str]:
    """Those of ``paths`` (existing or not) that git would not commit, each as ``RULE\tPATH``
    (``git check-ignore -v``); none when they are not in a git work tree or git is missing."""
    if not paths:
        return []
    top = Path(paths[0]).resolve()
    while not top.is_dir():
        top = top.parent
    try:
        found = subprocess.run(
            ["git", "-C", str(top), "check-ignore", "--verbose", "--stdin"],
            input="\n".join(str(Path(p).resolve()) for p in paths),
            capture_output=True,
            text=True,
        )
    except OSError:
        return []
    # 0: some are ignored, 1: none is; 128: not a work tree (nothing git could commit)
    return found.stdout.splitlines() if found.returncode == 0 else []


def files(folder: Path) -> list[Path]:
    """The kept files of a job's folder, its result last."""
    found = sorted({p for pattern in PATTERNS for p in folder.glob(pattern) if p.is_file()})
    return sorted(found, key=lambda p: p.name == RESULT)


def copy(path: Path, folder: Path) -> None:
    """Copy ``path`` into ``folder`` whole or not at all (through a temporary file): with the
    result copied last, a copy stopped half-way leaves no finished job, kept or restored."""
    tmp = folder / (path.name + ".tmp")
    shutil.copyfile(path, tmp)
    tmp.replace(folder / path.name)
