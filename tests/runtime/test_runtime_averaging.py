"""train.average_last: at the end of a run the averages of the last 2..N checkpoints are
validated, and the best of them becomes best.pt only when it beats every checkpoint."""

import importlib
import json
import re

import pytest
import torch
from runtime_helpers import reverse_config

from adl import runtime
from adl.runtime.config import ConfigError
from adl.runtime.model import checkpoint as ckpt
from adl.runtime.rundir import RunDir

TRAIN = importlib.import_module("adl.runtime.training.train")  # where the trainer validates


def config(tmp_path, *sets):
    return reverse_config(tmp_path, "bleu=false", *sets)


def run_with(tmp_path, monkeypatch, perplexities, *sets):
    """Validation ``i`` reports perplexity ``perplexities[i]`` (checkpoints, then averages)."""
    calls = iter(perplexities)

    def validate(*args, **kwargs):
        ppl = next(calls)
        return {"loss": ppl / 10, "ppl": ppl, "acc": 0.0}

    monkeypatch.setattr(TRAIN, "validate", validate)
    run = RunDir(tmp_path / "run")
    sets = ("max_steps=3", "valid_every=1", "keep_last=3", "average_last=3", *sets)
    summary = runtime.train(config(tmp_path, *sets), run.root)
    assert next(calls, None) is None  # every validation was used
    return run, summary


def mean_of(run, steps):
    states = [ckpt.load(run.step_file(s))["model"] for s in steps]
    return {k: sum(s[k].double() for s in states) / len(states) for k in states[0]}


def test_an_average_that_beats_every_checkpoint_becomes_best(tmp_path, monkeypatch):
    # checkpoints at steps 1, 2, 3; then the averages of steps 2-3 and of 1-3
    run, summary = run_with(tmp_path, monkeypatch, [9.0, 8.0, 7.0, 6.0, 6.5])
    assert summary.best_value == 6.0
    best = ckpt.load(run.best)
    assert best["averaged_steps"] == [2, 3]
    expected = mean_of(run, [2, 3])
    for name, tensor in best["model"].items():
        if tensor.is_floating_point():
            torch.testing.assert_close(tensor.double(), expected[name], rtol=1e-6, atol=1e-7)
    assert ckpt.load(run.last)["step"] == 3 and "averaged_steps" not in ckpt.load(run.last)
    averages = [
        json.loads(line)
        for line in run.metrics.read_text().splitlines()
        if json.loads(line).get("split") == "average"
    ]
    assert [(a["steps"], a["ppl"]) for a in averages] == [([2, 3], 6.0), ([1, 2, 3], 6.5)]
    log = run.log.read_text()
    assert "average of the last 2 checkpoints (steps 2, 3): loss 0.6 | ppl 6" in log
    assert "best.pt is now the average of steps 2, 3 (ppl 6;" in log
    # the averaged best decodes like any checkpoint
    model, _ = runtime.load_for_inference(run.root)
    assert not model.training


def test_best_stays_when_no_average_beats_it(tmp_path, monkeypatch):
    run, summary = run_with(tmp_path, monkeypatch, [9.0, 5.0, 7.0, 6.0, 8.0])
    assert summary.best_value == 5.0
    assert ckpt.load(run.best)["step"] == 2 and "averaged_steps" not in ckpt.load(run.best)
    assert not run.average.exists()
    assert "no average beats the best checkpoint (step 2): best.pt stays" in run.log.read_text()


def test_averages_only_the_checkpoints_there_are(tmp_path, monkeypatch):
    # 2 checkpoints, average_last 3: one average (of both)
    run, summary = run_with(tmp_path, monkeypatch, [9.0, 8.0, 4.0], "max_steps=2")
    assert ckpt.load(run.best)["averaged_steps"] == [1, 2]


def test_no_averaging_unless_asked(tmp_path, monkeypatch):
    run, summary = run_with(tmp_path, monkeypatch, [9.0, 8.0, 7.0], "average_last=0")
    assert summary.best_value == 7.0 and not run.average.exists()


@pytest.mark.parametrize(
    "sets, message",
    [
        (["average_last=1"], "train.average_last must be 0 (no averaging) or at least 2"),
        (
            ["average_last=4", "keep_last=2"],
            "train.average_last=4 averages checkpoints that train.keep_last=2 deletes",
        ),
    ],
)
def test_settings_that_cannot_average_are_refused(tmp_path, sets, message):
    with pytest.raises(ConfigError, match=re.escape(message)):
        config(tmp_path, "max_steps=2", *sets).validate()
