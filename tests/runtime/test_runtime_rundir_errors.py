"""File-system errors are the user's to fix: an --out that is a file, under a file, in a
read-only or immutable directory gets one line and exit 1, never a traceback. A resume whose
last checkpoint is truncated takes the newest intact one, says so, and keeps the damaged."""

import errno
import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from conftest import run_cli
from runtime_helpers import QUICK, data_args, model_files, reverse_task

from adl.runtime.model import checkpoint as ckpt
from adl.runtime.rundir import RunDir, filesystem_error


@pytest.fixture
def train(tmp_path):
    paths = reverse_task(tmp_path / "data", train=60, valid=5)
    files = model_files(tmp_path)

    def run(out, *sets):
        extra = [x for s in ("max_steps=4", "valid_every=2", *sets) for x in ("--set", s)]
        return run_cli("train", *files, *data_args(paths), *QUICK, *extra, "--out", str(out))

    return run


def one_error(code, err) -> str:
    assert code == 1, err
    assert "Traceback" not in err and err.count("\n") == 1, err
    return err.rstrip("\n")


def test_the_run_folder_layout():
    """The paths of the module docstring's layout; on the class, each is its descriptor."""
    run = RunDir(Path("r"))
    assert (run.config, run.tokenizer, run.metrics, run.log, run.lock) == tuple(
        Path("r", name)
        for name in ("config.yaml", "tokenizer", "metrics.jsonl", "train.log", ".lock")
    )
    assert (run.last, run.best, run.average, run.damaged) == tuple(
        Path("r/checkpoints", name) for name in ("last.pt", "best.pt", "average.pt", "damaged")
    )
    assert run.step_file(42) == Path("r/checkpoints/step-0000042.pt")
    assert repr(RunDir.last) == "RUN/checkpoints/last.pt" and RunDir(Path("r")) == run


def test_out_that_is_a_file(tmp_path, train):
    (tmp_path / "taken").write_text("notes\n")
    assert one_error(*train(tmp_path / "taken")[::2]) == (
        f"adl train: error: {tmp_path}/taken: is a file, not a run directory (choose another --out)"
    )
    assert (tmp_path / "taken").read_text() == "notes\n"


@pytest.mark.parametrize("below", ["run", "deeper/run"])
def test_out_under_a_file(tmp_path, train, below):
    (tmp_path / "taken").write_text("notes\n")
    assert one_error(*train(tmp_path / "taken" / below)[::2]) == (
        f"adl train: error: {tmp_path}/taken/{below}: {tmp_path}/taken is a file, "
        "not a directory (choose another --out)"
    )


def test_out_in_a_read_only_directory(tmp_path, train):
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o555)
    try:
        if os.access(locked, os.W_OK):
            pytest.skip("this user writes into read-only directories (root)")
        assert one_error(*train(locked / "run")[::2]) == (
            f"adl train: error: {locked}/run: cannot write the run directory: Permission denied"
        )
    finally:
        locked.chmod(0o755)


def immutable(path: Path) -> bool:
    """``chattr +i path``; False where that cannot be done (not root, no chattr, tmpfs)."""
    if shutil.which("chattr") is None:
        return False
    r = subprocess.run(["chattr", "+i", str(path)], capture_output=True)
    return r.returncode == 0


def mutable(path: Path) -> None:
    subprocess.run(["chattr", "-i", str(path)], capture_output=True)


IMMUTABLE = (
    "cannot write the run directory: Operation not permitted "
    "(an immutable directory? lsattr shows the i flag)"
)


def test_out_in_an_immutable_directory(tmp_path, train):
    frozen = tmp_path / "frozen"
    frozen.mkdir()
    if not immutable(frozen):
        pytest.skip("chattr +i is not available here")
    try:
        err = one_error(*train(frozen / "run")[::2])
    finally:
        mutable(frozen)
    assert err == f"adl train: error: {frozen}/run: {IMMUTABLE}"


def test_checkpoints_made_immutable_during_a_run(tmp_path, train):
    run = RunDir(tmp_path / "run")
    code, _, err = train(run.root)
    assert code == 0, err
    if not immutable(run.checkpoints):
        pytest.skip("chattr +i is not available here")
    try:
        code, _, err = run_cli("train", "--resume", "--out", str(run.root), "--set", "max_steps=6")
        message = one_error(code, err.splitlines()[-1] + "\n")
    finally:
        mutable(run.checkpoints)
    assert code == 1 and "Traceback" not in err
    assert message == f"adl train: error: {run.checkpoints}: {IMMUTABLE}"
    assert ckpt.load(run.last)["step"] == 4  # the last checkpoint is as it was
    assert not run.lock.exists()  # and the run is free again


def truncate(path: Path) -> None:
    data = path.read_bytes()
    with open(path, "r+b") as f:  # in place: last.pt and its step file are one file
        f.truncate(len(data) // 2)


def test_a_truncated_last_checkpoint_resumes_from_the_newest_intact(tmp_path, train):
    run = RunDir(tmp_path / "run")
    code, _, err = train(run.root, "keep_last=5")
    assert code == 0, err
    assert sorted(run.step_files()) == [2, 4] and os.path.samefile(run.last, run.step_file(4))
    truncate(run.last)
    damaged = run.last.read_bytes()

    code, out, err = run_cli("train", "--resume", "--out", str(run.root), "--set", "max_steps=6")
    assert code == 0, err
    warning = next(line for line in err.splitlines() if "newest intact" in line)
    assert re.fullmatch(
        rf"{re.escape(str(run.last))}: cannot read the checkpoint \(truncated or damaged: "
        rf"[^\n]+\): resuming from {re.escape(str(run.step_file(2)))} \(step 2\), the newest "
        rf"intact checkpoint; the damaged files are kept in {re.escape(str(run.damaged))}",
        warning,
    ), warning
    assert out.startswith(f"{run.root}: 6 steps")
    kept = sorted(p.name.split(".")[0] for p in run.damaged.iterdir())
    assert kept == ["last", "step-0000004"]  # set aside, not deleted
    assert all(p.read_bytes() == damaged for p in run.damaged.iterdir())
    assert ckpt.load(run.last)["step"] == 6 and sorted(run.step_files()) == [2, 4, 6]
    valid = [json.loads(x)["step"] for x in run.metrics.read_text().splitlines() if "valid" in x]
    assert valid == [2, 4, 6]  # the records after step 2 were written again, once


def test_no_intact_checkpoint_to_resume_from(tmp_path, train):
    run = RunDir(tmp_path / "run")
    code, _, err = train(run.root, "keep_last=5")
    assert code == 0, err
    for path in run.step_files().values():
        truncate(path)
    message = one_error(*run_cli("train", "--resume", "--out", str(run.root))[::2])
    assert message.startswith(
        f"adl train: error: {run.root}: no intact checkpoint to resume from "
        f"({run.last}: cannot read the checkpoint (truncated or damaged: "
    )
    assert sorted(run.step_files()) == [2, 4]  # nothing moved when nothing can be taken


@pytest.mark.parametrize(
    "code, text",
    [
        (errno.EACCES, "Permission denied"),
        (errno.EROFS, "Read-only file system"),
        (errno.ENOSPC, "No space left on device"),
    ],
)
def test_the_file_system_refusing_a_write_is_one_line(tmp_path, code, text):
    root = tmp_path / "run"
    inside = OSError(code, os.strerror(code), str(root / "checkpoints" / ".step-0000002.pt.x.tmp"))
    assert str(filesystem_error(inside, root)) == (
        f"{root}/checkpoints: cannot write the run directory: {text}"
    )
    unnamed = OSError(code, os.strerror(code))  # e.g. a write() to an open file
    assert str(filesystem_error(unnamed, root)) == f"{root}: cannot write the run directory: {text}"
    elsewhere = OSError(code, os.strerror(code), str(tmp_path / "train.src"))
    assert filesystem_error(elsewhere, root) is None  # not the run directory's: not ours
