"""Checkpoints: the run layout, atomic writes, refusing pickled code, keep-last-N, averaging,
loading for inference."""

import json
import os
import pickle
import re

import pytest
import torch
from conftest import run_cli
from runtime_helpers import reverse_config

from adl import runtime
from adl.runtime.errors import CheckpointError
from adl.runtime.model import checkpoint as ckpt
from adl.runtime.rundir import RunDir


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """A tiny run of 8 updates with a validation (and a checkpoint) every 2."""
    tmp = tmp_path_factory.mktemp("ckpt")
    settings = ["max_steps=8", "valid_every=2", "keep_last=3", "log_every=4"]
    config = reverse_config(tmp, *settings, train=200, valid=20)
    summary = runtime.train(config, tmp / "run")
    assert summary.step == 8 and summary.reason == "max_steps"
    return RunDir(tmp / "run")


def test_the_run_directory_layout(run):
    assert run.config.is_file() and run.log.is_file() and run.metrics.is_file()
    assert (run.tokenizer / "joint.model").is_file()
    assert sorted(run.step_files()) == [4, 6, 8]  # keep_last=3
    assert run.last.is_file() and run.best.is_file()
    assert os.path.samefile(run.last, run.step_file(8))
    records = [json.loads(l) for l in run.metrics.read_text().splitlines()]
    assert [r["step"] for r in records if r["split"] == "valid"] == [2, 4, 6, 8]
    assert [r["step"] for r in records if r["split"] == "train"] == [4, 8]
    assert {"ppl", "acc", "bleu", "chrf", "loss"} <= set(records[-1])
    log = run.log.read_text()
    assert "sacrebleu signatures: BLEU nrefs:1|case:mixed|eff:no|tok:13a" in log
    assert re.search(
        r"training data \(\S+train\.src \+ \S+train\.tgt\): 200 lines, 200 pairs kept", log
    )
    best = ckpt.load(run.best)
    history = best["trainer"]["history"]
    assert best["step"] == min(history, key=lambda h: h["value"])["step"]


def test_a_checkpoint_holds_only_tensors_and_plain_data(run):
    state = ckpt.load(run.last)  # weights_only=True inside
    assert state["format"] == ckpt.FORMAT and state["step"] == 8
    assert {"spec", "model", "optimizer", "schedule", "data", "rng", "tokenizer", "config"} <= set(
        state
    )


def test_a_planted_pickled_callable_is_refused(run, tmp_path):
    marker = tmp_path / "pwned"

    class Payload:
        def __reduce__(self):
            return (os.system, (f"touch {marker}",))

    state = ckpt.load(run.last)
    state["hook"] = Payload()
    planted = tmp_path / "planted.pt"
    torch.save(state, planted)
    with pytest.raises(CheckpointError) as err:
        ckpt.load(planted)
    assert "refused: the file carries a pickled Python object (posix.system)" in str(err.value)
    with pytest.raises(CheckpointError):
        runtime.load_for_inference(planted)
    assert not marker.exists()  # nothing was run
    # a run whose last.pt was replaced: --resume refuses it with one message
    other = tmp_path / "run"
    (other / "checkpoints").mkdir(parents=True)
    (other / "config.yaml").write_text(run.config.read_text())
    os.replace(planted, other / "checkpoints" / "last.pt")
    code, _, err = run_cli("train", "--resume", "--out", str(other))
    assert code == 1 and "refused: the file carries a pickled Python object" in err
    assert "Traceback" not in err and not marker.exists()


def test_garbage_is_not_a_checkpoint(tmp_path):
    f = tmp_path / "x.pt"
    f.write_bytes(b"not a checkpoint at all")
    with pytest.raises(CheckpointError, match="not a checkpoint"):
        ckpt.load(f)
    torch.save({"model": {}}, f)
    with pytest.raises(CheckpointError, match="not an ADL checkpoint"):
        ckpt.load(f)


def test_an_interrupted_write_leaves_the_old_file(tmp_path):
    target = tmp_path / "last.pt"
    ckpt.save({"format": ckpt.FORMAT, "step": 1}, target)
    with pytest.raises((AttributeError, TypeError, pickle.PicklingError)):
        ckpt.save({"format": ckpt.FORMAT, "step": 2, "bad": lambda: 0}, target)
    assert ckpt.load(target)["step"] == 1
    assert [p.name for p in tmp_path.iterdir()] == ["last.pt"]  # no temporary left


def test_prune_keeps_the_last_n_and_the_protected(tmp_path):
    r = RunDir(tmp_path)
    for step in range(1, 7):
        ckpt.save({"format": ckpt.FORMAT, "step": step}, r.step_file(step))
    assert ckpt.prune(r, keep_last=2, keep=[3]) == [1, 2, 4]
    assert sorted(r.step_files()) == [3, 5, 6]


def test_average_of_the_last_n(run, tmp_path):
    code, out, err = run_cli(
        "average", str(run.root), "--last", "2", "--out", str(tmp_path / "avg.pt")
    )
    assert code == 0, err
    assert out.strip() == f"averaged steps 6, 8 -> {tmp_path / 'avg.pt'}"
    avg = ckpt.load(tmp_path / "avg.pt")["model"]
    a, b = ckpt.load(run.step_file(6))["model"], ckpt.load(run.step_file(8))["model"]
    for name in a:
        if a[name].is_floating_point():
            torch.testing.assert_close(avg[name], (a[name] + b[name]) / 2)
    assert run_cli("average", str(run.root), "--last", "9")[0] == 1


def test_average_of_given_steps(run, tmp_path):
    kept = sorted(run.step_files())
    code, out, err = run_cli(
        "average",
        str(run.root),
        "--steps",
        f"{kept[-1]},{kept[0]}",
        "--out",
        str(tmp_path / "s.pt"),
    )
    assert code == 0, err
    assert out.strip() == f"averaged steps {kept[0]}, {kept[-1]} -> {tmp_path / 's.pt'}"
    avg = ckpt.load(tmp_path / "s.pt")
    a, b = (ckpt.load(run.step_file(s))["model"] for s in (kept[0], kept[-1]))
    name = next(k for k, v in a.items() if v.is_floating_point() and not v.equal(b[k]))
    torch.testing.assert_close(avg["model"][name], (a[name] + b[name]) / 2)
    code, _, err = run_cli("average", str(run.root), "--steps", "3")  # not kept
    assert code == 1 and "no checkpoint of step 3 (it has steps " in err
    assert run_cli("average", str(run.root), "--steps", "x")[0] == 2  # a usage error


def test_average_of_the_best_n_and_loading_it(run):
    code, out, _ = run_cli("average", str(run.root), "--best", "2")
    history = ckpt.load(run.last)["trainer"]["history"]
    kept = [h for h in history if h["step"] in run.step_files()]
    best2 = sorted(h["step"] for h in sorted(kept, key=lambda h: h["value"])[:2])
    assert code == 0 and out.startswith(f"averaged steps {best2[0]}, {best2[1]} -> ")
    model, tok = runtime.load_for_inference(run.root, "average")
    assert not model.training
    assert runtime.translate(model, tok, ["a b c"])[0] is not None


def test_load_for_inference_from_a_run_and_a_file(run):
    model, tok = runtime.load_for_inference(run.root)  # best
    state = ckpt.load(run.best)
    for name, tensor in model.state_dict().items():
        assert torch.equal(tensor, state["model"][name])
    again, _ = runtime.load_for_inference(run.step_file(8))
    out = runtime.translate(again, tok, ["a b c", "d e"])
    assert len(out) == 2 and all(isinstance(s, str) for s in out)
    with pytest.raises(CheckpointError, match="no checkpoint 'step-9.pt'"):
        runtime.load_for_inference(run.root, "step-9.pt")
