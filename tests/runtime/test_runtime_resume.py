"""Exact resume: a run killed with SIGKILL mid-training and resumed reaches bit-identical
weights (and optimizer state) at step N to a run that was never interrupted."""

import json
import signal
import subprocess
import time

import pytest
import torch
from conftest import sets
from runtime_helpers import (
    QUICK,
    adl_command,
    data_args,
    env,
    last_reaches,
    model_files,
    reverse_task,
    run_adl,
)

from adl.runtime.model import checkpoint as ckpt
from adl.runtime.rundir import RunDir

N = 150


@pytest.mark.slow  # about 50 s: two trainings to compare bit for bit
def test_sigkill_then_resume_is_bit_identical(tmp_path):
    paths = reverse_task(tmp_path / "data", train=300, valid=10)
    common = [
        "train",
        *model_files(tmp_path),
        *data_args(paths),
        *QUICK,
        *sets(f"max_steps={N}", "valid_every=10", "model.dropout=0.1"),
    ]  # dropout: the RNG state must resume too
    whole = run_adl(*common, "--out", str(tmp_path / "whole"))
    assert whole.returncode == 0, whole.stderr

    killed = RunDir(tmp_path / "killed")
    child = subprocess.Popen(
        adl_command(*common, "--out", str(killed.root)),
        env=env(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 120
        while not last_reaches(killed, 20):
            assert child.poll() is None, child.stderr.read().decode()
            assert time.monotonic() < deadline, "no checkpoint at step 20"
            time.sleep(0.01)
        assert child.poll() is None  # still training when killed
        child.send_signal(signal.SIGKILL)
        assert child.wait(timeout=30) == -signal.SIGKILL
    finally:
        if child.poll() is None:
            child.kill()
        child.stderr.close()
    stopped_at = ckpt.load(killed.last)["step"]
    assert 20 <= stopped_at < N

    resumed = run_adl(*common, "--out", str(killed.root), "--resume")
    assert resumed.returncode == 0, resumed.stderr
    assert f"resuming in {killed.root} from step {stopped_at}" in resumed.stderr

    a, b = ckpt.load(tmp_path / "whole" / "checkpoints" / "last.pt"), ckpt.load(killed.last)
    assert a["step"] == b["step"] == N
    assert a["model"].keys() == b["model"].keys()
    for name in a["model"]:
        assert torch.equal(a["model"][name], b["model"][name]), name
    for p, q in zip(a["optimizer"]["state"].values(), b["optimizer"]["state"].values()):
        assert all(torch.equal(p[k], q[k]) for k in p)
    assert a["data"] == b["data"]
    # the metrics log holds each step once, as if the run had never stopped
    lines = (killed.root / "metrics.jsonl").read_text().splitlines()
    whole_lines = (tmp_path / "whole" / "metrics.jsonl").read_text().splitlines()
    clock = ("tokens_per_s", "seconds")  # wall-clock figures differ between runs
    strip = lambda ls: [{k: v for k, v in json.loads(l).items() if k not in clock} for l in ls]
    assert strip(lines) == strip(whole_lines)


def test_the_same_seed_gives_the_same_initial_weights(tmp_path):
    import hashlib

    import adl

    files = model_files(tmp_path)
    digests, junk = set(), []
    for k in range(16):  # builds that differ only in what was allocated before them
        junk.append([object() for _ in range(k * 37)])
        torch.manual_seed(1)
        m = adl.build(*files, src_vocab=40, tgt_vocab=40, d_model=32, heads=4)
        digests.add(
            hashlib.sha256(
                b"".join(p.detach().numpy().tobytes() for p in m.parameters())
            ).hexdigest()
        )
    assert len(digests) == 1
