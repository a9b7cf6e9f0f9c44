"""Learning-rate schedules and the label-smoothed loss."""

import math

import pytest
import torch

from adl.runtime.config import ScheduleConfig
from adl.runtime.training.loss import token_loss
from adl.runtime.training.schedule import Schedule


def test_inverse_sqrt_warms_up_then_decays():
    s = Schedule(ScheduleConfig(kind="inverse_sqrt", warmup=4000), lr=7e-4)
    assert s.lr(1) == pytest.approx(7e-4 / 4000)
    assert s.lr(2000) == pytest.approx(3.5e-4)
    assert s.lr(4000) == pytest.approx(7e-4)
    assert s.lr(16000) == pytest.approx(3.5e-4)  # sqrt(4000 / 16000) = 1/2


def test_linear_decays_to_the_end():
    s = Schedule(ScheduleConfig(kind="linear"), lr=3e-4, max_steps=1000)
    assert s.lr(1) == pytest.approx(3e-4 * 999 / 1000)
    assert s.lr(500) == pytest.approx(1.5e-4)
    assert s.lr(1000) == 0.0 and s.lr(2000) == 0.0


def test_plateau_decays_by_0_7_after_8_validations_without_improvement():
    s = Schedule(ScheduleConfig(kind="plateau", factor=0.7, patience=8), lr=2e-4)
    assert not s.on_validation(10.0)
    decayed = [s.on_validation(10.0 + i) for i in range(1, 9)]
    assert decayed == [False] * 7 + [True]
    assert s.lr(100) == pytest.approx(1.4e-4)
    assert not s.on_validation(9.0)  # a new best resets the count
    state = s.state_dict()
    t = Schedule(ScheduleConfig(kind="plateau"), lr=2e-4)
    t.load_state_dict(state)
    assert t.lr(5) == s.lr(5) and t.best == 9.0


def test_loss_matches_torch_cross_entropy_with_label_smoothing():
    torch.manual_seed(0)
    logits = torch.randn(2, 5, 11)
    target = torch.randint(1, 11, (2, 5))
    target[1, 3:] = 0
    sums = token_loss(logits, target, smoothing=0.1)
    ref = torch.nn.functional.cross_entropy(
        logits.flatten(0, 1), target.flatten(), ignore_index=0, label_smoothing=0.1, reduction="sum"
    )
    nll = torch.nn.functional.cross_entropy(
        logits.flatten(0, 1), target.flatten(), ignore_index=0, reduction="sum"
    )
    torch.testing.assert_close(sums.loss, ref)
    torch.testing.assert_close(sums.nll, nll)
    assert sums.tokens == 8
    assert math.isfinite(float(sums.loss))
    kept = target.ne(0)
    assert sums.correct is not None
    assert int(sums.correct) == int(logits[kept].argmax(-1).eq(target[kept]).sum())
    # training skips the accuracy's argmax: the same sums, no count
    quiet = token_loss(logits, target, smoothing=0.1, count_correct=False)
    assert quiet.correct is None
    torch.testing.assert_close(quiet.loss, sums.loss, rtol=0, atol=0)
    torch.testing.assert_close(quiet.nll, sums.nll, rtol=0, atol=0)
