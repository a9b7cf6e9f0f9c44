"""A checkpoint is input too: the ADL text stored in it goes through the same bounded check and
memory estimate as a file before anything is built, for inference and for --resume."""

import time

import pytest
import torch
from conftest import run_cli
from runtime_helpers import reverse_config

from adl import runtime
from adl.runtime.errors import CheckpointError
from adl.runtime.model import checkpoint as ckpt
from adl.runtime.rundir import RunDir

DOUBLING = (
    "b0 = ffl\n"
    + "".join(f"b{i} = concat(b{i - 1}, b{i - 1}) -> linear\n" for i in range(1, 23))
    + "pos -> b22\n"
)


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("ckpt_text")
    settings = ["d_model=16", "max_tokens=128", "max_steps=2", "valid_every=2", "log_every=2"]
    config = reverse_config(tmp, *settings, train=60, valid=8)  # smaller than its d_model 32
    runtime.train(config, tmp / "run")
    return RunDir(tmp / "run")


def planted(run: RunDir, path, **spec) -> None:
    state = ckpt.load(run.last)
    state["spec"] = {**state["spec"], **spec}
    torch.save(state, path)


@pytest.mark.parametrize(
    "spec, message",
    [
        (dict(encoder=DOUBLING), "the network expands to more than 10,000 layers"),
        (dict(src_vocab=10**12), "the model needs about"),
        (dict(d_model=True), "model description: 'd_model' must be a positive integer"),
    ],
)
def test_inference_refuses_a_planted_description_quickly(run, tmp_path, spec, message):
    path = tmp_path / "planted.pt"
    planted(run, path, **spec)
    started = time.perf_counter()
    with pytest.raises(CheckpointError) as info:
        runtime.load_for_inference(path)
    assert time.perf_counter() - started < 30  # before: minutes, or the allocator
    assert str(info.value).startswith(f"{path}: its model description does not build:\n")
    assert message in str(info.value)


def test_resume_refuses_a_planted_description(run, tmp_path):
    other = tmp_path / "run"
    (other / "checkpoints").mkdir(parents=True)
    (other / "config.yaml").write_text(run.config.read_text())
    planted(run, other / "checkpoints" / "last.pt", encoder=DOUBLING)
    code, _, err = run_cli("train", "--resume", "--out", str(other))
    assert code == 1 and "Traceback" not in err
    assert "last.pt: its model description does not build" in err
    assert "the network expands to more than 10,000 layers" in err
    assert not RunDir(other).metrics.exists()  # stopped before any training
