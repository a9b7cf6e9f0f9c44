"""Which checkpoint is best: validation perplexity is reported capped (exp(100) =
2.688e43), so while it sits at the cap the validation loss decides: "best", keep_best,
`adl average --best`, early stopping and the plateau schedule follow the loss as it falls."""

import importlib
import math

import pytest
from runtime_helpers import reverse_config

from adl import runtime
from adl.runtime.model import checkpoint as ckpt
from adl.runtime.rundir import RunDir

CAP = math.exp(100.0)  # what validate reports for any loss above 100 nats
TRAIN = importlib.import_module("adl.runtime.training.train")  # where the trainer validates


def config(tmp_path, *sets):
    return reverse_config(tmp_path, "bleu=false", "valid_every=1", *sets)


def fake_validations(monkeypatch, sequence):
    """Validation ``i`` reports ``sequence[i]`` = (ppl, loss)."""
    calls = iter(sequence)

    def validate(*args, **kwargs):
        ppl, loss = next(calls)
        return {"loss": loss, "ppl": ppl, "acc": 0.0}

    monkeypatch.setattr(TRAIN, "validate", validate)


def best_of(tmp_path, monkeypatch, sequence, *sets):
    fake_validations(monkeypatch, sequence)
    run = RunDir(tmp_path / "run")
    summary = runtime.train(config(tmp_path, f"max_steps={len(sequence)}", *sets), run.root)
    return run, summary


def test_capped_perplexity_follows_the_falling_loss(tmp_path, monkeypatch):
    run, summary = best_of(
        tmp_path,
        monkeypatch,
        [(CAP, 130.0), (CAP, 120.0), (CAP, 125.0), (CAP, 110.0), (CAP, 105.0)],
        "keep_last=1",
        "keep_best=2",
    )
    assert summary.reason == "max_steps"
    assert summary.best_value == CAP
    assert ckpt.load(run.best)["step"] == 5  # not stuck at step 1
    assert sorted(run.step_files()) == [4, 5]  # the best two by loss (and the last)
    assert [p.name for p in ckpt.choose(run, best=2)] == ["step-0000004.pt", "step-0000005.pt"]
    assert (
        "validation at step 3: loss 125 | ppl 2.688e+43 | acc 0.0000 (best 2.688e+43 at step 2)"
        in (run.log.read_text())
    )


def test_uncapped_perplexity_still_decides(tmp_path, monkeypatch):
    # the loss (label-smoothed) may disagree with the perplexity: the perplexity decides
    run, summary = best_of(tmp_path, monkeypatch, [(9.0, 2.0), (7.0, 2.5), (8.0, 1.0)])
    assert summary.best_value == 7.0 and ckpt.load(run.best)["step"] == 2
    # and a value under the cap beats a capped one, whatever the losses
    run, summary = best_of(tmp_path / "b", monkeypatch, [(CAP, 101.0), (5e42, 200.0)])
    assert summary.best_value == 5e42 and ckpt.load(run.best)["step"] == 2


def test_early_stopping_counts_validations_without_a_lower_loss(tmp_path, monkeypatch):
    sequence = [(CAP, 130.0), (CAP, 120.0), (CAP, 110.0), (CAP, 111.0), (CAP, 112.0)]
    sequence += [(CAP, 100.0)] * 5
    _, summary = best_of(tmp_path, monkeypatch, sequence, "train.patience=2")
    assert summary.reason == "early_stop" and summary.step == 5  # not at step 3


@pytest.mark.parametrize(
    "losses, decays",
    [([130.0, 120.0, 110.0, 100.5], 0), ([130.0, 131.0, 132.0, 133.0], 3)],
)
def test_the_plateau_schedule_sees_the_loss_under_a_capped_perplexity(
    tmp_path, monkeypatch, losses, decays
):
    fake_validations(monkeypatch, [(CAP, loss) for loss in losses])
    cfg = config(tmp_path, f"max_steps={len(losses)}", "schedule.kind=plateau", "optim.lr=1e-3")
    cfg.schedule.patience, cfg.schedule.factor, cfg.schedule.warmup = 1, 0.5, 0
    trainer = runtime.Trainer(cfg, tmp_path / "run")
    try:
        trainer.run()
    finally:
        trainer.close()
    assert trainer.state.schedule.lr(trainer.step + 1) == pytest.approx(1e-3 * 0.5**decays)


def test_old_checkpoints_without_losses_are_still_ranked(tmp_path):
    history = [{"step": 1, "value": 3.0}, {"step": 2, "value": 2.0}]
    ranked = sorted(history, key=lambda h: ckpt.rank("ppl", h["value"], h.get("loss"), h["step"]))
    assert [h["step"] for h in ranked] == [2, 1]
    assert ckpt.rank("bleu", 30.0) < ckpt.rank("bleu", 20.0)  # higher is better
