"""A run directory belongs to one process: RUN/.lock (flock) is held for the run's life; a
second `adl train` or `adl train --resume` on a held run exits 1 naming the holder; a lock
left by a dead process is taken over, saying so."""

import json
import os
import re
import signal
import socket
import subprocess
import sys
import time

import pytest
from conftest import run_cli
from runtime_helpers import (
    QUICK,
    adl_command,
    data_args,
    env,
    model_files,
    reverse_task,
    start_adl,
    train_cli,
)

from adl import runtime
from adl.runtime.errors import RunDirError
from adl.runtime.model import checkpoint as ckpt
from adl.runtime.rundir import LOCK_ENV, Holder, RunDir, RunLock, held_for_me

HOLDER = r"\(pid \d+ on \S+ since \d{4}-\d\d-\d\d \d\d:\d\d:\d\d\)"


def in_use(run: RunDir) -> str:
    return (
        rf"adl train: error: {re.escape(str(run.root))} is in use by another training "
        rf"{HOLDER}: wait for it to end, or stop it\n"
    )


def test_a_second_lock_on_a_held_run_names_the_holder(tmp_path):
    run = RunDir(tmp_path / "run")
    with RunLock(run):
        holder = Holder.parse(run.lock.read_text())
        assert holder.pid == os.getpid() and holder.host == socket.gethostname()
        with pytest.raises(RunDirError) as err:
            RunLock(run).acquire()  # another open file: flock refuses it, even in-process
        assert str(err.value) == (
            f"{run.root} is in use by another training ({holder.describe()}): "
            "wait for it to end, or stop it"
        )
    assert not run.lock.exists()  # a clean release removes the lock file
    assert not run.root.exists()  # ... and the directory it made for nothing
    with RunLock(run) as again:  # free again
        assert again.held and again.taken_over is None


def test_a_lock_left_by_a_dead_process_is_taken_over(tmp_path):
    run = RunDir(tmp_path / "run")
    child = subprocess.run(
        [
            sys.executable,
            "-c",
            "import os, sys; from pathlib import Path\n"
            "from adl.runtime.rundir import RunDir, RunLock\n"
            "RunLock(RunDir(Path(sys.argv[1]))).acquire()\n"
            "os._exit(9)  # dies holding it: no release",
            str(run.root),
        ],
        env=env(),
        capture_output=True,
        text=True,
    )
    assert child.returncode == 9, child.stderr
    dead = Holder.parse(run.lock.read_text())
    assert dead is not None and dead.pid != os.getpid()
    with RunLock(run) as lock:
        assert lock.taken_over == dead
        assert Holder.parse(run.lock.read_text()).pid == os.getpid()


def test_the_launcher_of_nproc_workers_holds_the_lock_for_them(tmp_path):
    run = RunDir(tmp_path / "run")
    probe = [
        sys.executable,
        "-c",
        "import sys; from pathlib import Path\n"
        "from adl.runtime.rundir import RunDir, held_for_me\n"
        "print(held_for_me(RunDir(Path(sys.argv[1]))))",
        str(run.root),
    ]

    def ask(pid: str | None) -> str:
        e = env()
        e.pop(LOCK_ENV, None)
        if pid is not None:
            e[LOCK_ENV] = pid
        return subprocess.run(probe, env=e, capture_output=True, text=True).stdout.strip()

    with RunLock(run):
        assert ask(str(os.getpid())) == "True"
        assert ask(str(os.getpid() + 1)) == "False"  # another pid than the holder's
        assert ask(None) == "False"
    assert ask(str(os.getpid())) == "False"  # released
    assert not held_for_me(run)


def test_a_fresh_run_on_a_held_out_stops_before_writing(tmp_path):
    paths = reverse_task(tmp_path / "data", train=50, valid=5)
    run = RunDir(tmp_path / "run")
    with RunLock(run):
        code, _, err = run_cli(
            "train", *model_files(tmp_path), *data_args(paths), *QUICK, "--out", str(run.root)
        )
        assert code == 1
        assert re.fullmatch(in_use(run), err), err
        assert sorted(p.name for p in run.root.iterdir()) == [".lock"]  # no tokenizer, no log


def test_a_second_resume_exits_1_and_leaves_the_first_runs_metrics_alone(tmp_path):
    paths = reverse_task(tmp_path / "data", train=200, valid=5)
    run = RunDir(tmp_path / "run")
    train_cli(tmp_path, paths, "max_steps=5", "valid_every=5")
    resume = ["train", "--resume", "--out", str(run.root), "--set", "log_every=1"]
    first = start_adl(*resume, "--set", "max_steps=1000000", "--set", "valid_every=1000000")
    try:
        deadline = time.monotonic() + 120
        while not (run.metrics.is_file() and '"step": 8,' in run.metrics.read_text()):
            assert first.poll() is None, first.communicate()[1]
            assert time.monotonic() < deadline, "the first run did not get to step 8"
            time.sleep(0.05)
        assert Holder.parse(run.lock.read_text()).pid == first.pid
        before = run.metrics.read_text()
        second = subprocess.run(
            adl_command(*resume, "--set", "max_steps=20", "--set", "optim.lr=0.1"),
            env=env(),
            capture_output=True,
            text=True,
            timeout=120,
        )
        during = run.metrics.read_text()
        assert first.poll() is None  # the first trains on
        first.send_signal(signal.SIGINT)
        _, first_err = first.communicate(timeout=60)
    finally:
        if first.poll() is None:
            first.kill()
    assert second.returncode == 1
    assert re.fullmatch(in_use(run), second.stderr), second.stderr
    assert f"pid {first.pid} on {socket.gethostname()}" in second.stderr
    assert second.stdout == ""
    assert first.returncode == 130, first_err
    after = run.metrics.read_text()
    assert during.startswith(before) and after.startswith(during)  # only appended to
    steps = [json.loads(line)["step"] for line in after.splitlines() if '"train"' in line]
    assert steps == sorted(set(steps)) and steps[-1] > 8  # one run's records: no step twice
    assert not run.lock.exists()  # released by the first at its end
    step = ckpt.load(run.last)["step"]
    assert step == steps[-1]
    summary = runtime.train(
        runtime.configure(resume_from=run.root, sets=[f"max_steps={step}"]), run.root, resume=True
    )  # free for the next one
    assert summary.step == step


def test_a_resume_takes_over_a_dead_processs_lock_saying_so(tmp_path):
    paths = reverse_task(tmp_path / "data", train=50, valid=5)
    run = RunDir(tmp_path / "run")
    argv = ["--set", "max_steps=2", "--set", "valid_every=2", "--out", str(run.root)]
    code, _, err = run_cli("train", *model_files(tmp_path), *data_args(paths), *QUICK, *argv)
    assert code == 0, err
    dead = Holder(999_999_999, "elsewhere", "2024-01-02 03:04:05")  # no such process holds it
    run.lock.write_text(dead.to_text())
    code, _, err = run_cli("train", "--resume", *argv)
    assert code == 0, err
    assert (
        f"{run.lock}: taking over the lock of a process that is no longer running "
        "(pid 999999999 on elsewhere since 2024-01-02 03:04:05)"
    ) in err.splitlines()
    assert not run.lock.exists()
