"""Faults: a non-finite loss skips the update and is counted; K in a row stop the run with
the last good checkpoint intact; Ctrl-C writes a checkpoint and exits cleanly."""

import hashlib
import json
import signal
import time

import pytest
import torch
from conftest import sets
from runtime_helpers import QUICK, data_args, model_files, reverse_config, reverse_task, start_adl

from adl import runtime
from adl.runtime.errors import TrainingStopped
from adl.runtime.model import checkpoint as ckpt
from adl.runtime.rundir import RunDir


def config(tmp_path, *sets):
    return reverse_config(tmp_path, "log_every=1", *sets, train=200, valid=10)


def poison(model, calls):
    """Make the model's output NaN on the forward calls numbered in ``calls`` (None: all)."""
    seen = {"n": 0}

    def hook(module, inputs, output):
        seen["n"] += 1
        if module.training and (calls is None or seen["n"] in calls):
            return output * float("nan")
        return output

    return model.register_forward_hook(hook)


def test_a_nan_loss_skips_the_update_and_is_counted(tmp_path):
    trainer = runtime.Trainer(config(tmp_path, "max_steps=5", "valid_every=5"), tmp_path / "run")
    poison(trainer.state.model, {3})
    before = {}

    def watch(step, batches):
        before[step] = trainer.state.book.skipped

    try:
        summary = trainer.run(on_step=watch)
    finally:
        trainer.close()
    assert summary.step == 5 and summary.skipped == 1
    assert before == {1: 0, 2: 0, 3: 1, 4: 1, 5: 1}  # the 3rd forward pass was skipped
    records = [json.loads(l) for l in (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()]
    assert [r["skipped"] for r in records if r["split"] == "train"] == [0, 0, 1, 1, 1]
    assert "non-finite loss or gradient" in (tmp_path / "run" / "train.log").read_text()
    state = ckpt.load(tmp_path / "run" / "checkpoints" / "last.pt")
    assert all(torch.isfinite(t).all() for t in state["model"].values())


def test_k_nan_losses_in_a_row_stop_with_the_last_checkpoint_intact(tmp_path):
    cfg = config(tmp_path, "max_steps=4", "valid_every=4", "max_bad_steps=3")
    runtime.train(cfg, tmp_path / "run")
    run = RunDir(tmp_path / "run")
    digest = hashlib.sha256(run.last.read_bytes()).hexdigest()
    cfg.train.max_steps = 50
    trainer = runtime.Trainer(cfg, run.root, resume=True)
    poison(trainer.state.model, None)
    try:
        with pytest.raises(TrainingStopped) as err:
            trainer.run()
    finally:
        trainer.close()
    assert str(err.value).startswith(
        "stopped: 3 updates in a row had a non-finite loss or gradient "
        f"(train.max_bad_steps=3); the last good checkpoint is {run.last} (step 4)"
    )
    assert hashlib.sha256(run.last.read_bytes()).hexdigest() == digest
    assert sorted(run.step_files()) == [4]


def test_ctrl_c_writes_a_checkpoint_and_exits_cleanly(tmp_path):
    paths = reverse_task(tmp_path / "data", train=300, valid=10)
    run = RunDir(tmp_path / "run")
    child = start_adl(
        "train",
        *model_files(tmp_path),
        *data_args(paths),
        *QUICK,
        *sets("max_steps=100000", "valid_every=1000"),
        "--out",
        str(run.root),
    )
    try:
        deadline = time.monotonic() + 120
        while not (run.metrics.exists() and run.metrics.read_text().count("\n") >= 2):
            assert child.poll() is None, child.communicate()[1]
            assert time.monotonic() < deadline
            time.sleep(0.05)
        child.send_signal(signal.SIGINT)
        out, err = child.communicate(timeout=60)
    finally:
        if child.poll() is None:
            child.kill()
    assert child.returncode == 130, err
    assert "Traceback" not in err
    step = ckpt.load(run.last)["step"]
    assert step >= 10
    assert (
        f"interrupted at step {step:,}: saved {run.last}; continue with: adl train "
        f"--resume --out {run.root}"
    ) in err
    assert sorted(run.step_files()) == [step]
