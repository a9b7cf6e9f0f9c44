"""The checkpoint policy's decisions, apart from its saving: what a validation decides
(the best, early stopping) from the validation and the bookkeeping alone."""

import pytest

from adl.runtime.config import TrainConfig
from adl.runtime.errors import UserError
from adl.runtime.training.policy import decide, take
from adl.runtime.training.state import Bookkeeping


def test_a_validation_decides_the_best_and_early_stopping_without_touching_anything():
    t = TrainConfig(best_metric="ppl", patience=2)
    book = Bookkeeping(step=100)
    first = decide(t, book, {"ppl": 10.0, "loss": 2.3})
    assert (first.improved, first.stop, first.value) == (True, False, 10.0)
    assert book == Bookkeeping(step=100)  # deciding changes nothing
    take(book, first)
    assert (book.best_value, book.best_step, book.since_best) == (10.0, 100, 0)
    book.step = 200
    worse = decide(t, book, {"ppl": 11.0, "loss": 2.4})
    assert (worse.improved, worse.stop) == (False, False)
    take(book, worse)
    book.step = 300
    again = decide(t, book, {"ppl": 12.0, "loss": 2.5})
    assert (again.improved, again.stop) == (False, True)  # train.patience validations
    take(book, again)
    assert book.since_best == 2 and [h["step"] for h in book.history] == [100, 200, 300]
    assert decide(TrainConfig(patience=0), book, {"ppl": 13.0}).stop is False  # never stops


def test_a_metric_that_is_not_measured_is_a_user_error():
    with pytest.raises(UserError, match="train.best_metric=bleu is not measured"):
        decide(TrainConfig(best_metric="bleu"), Bookkeeping(), {"ppl": 10.0, "loss": 2.3})


def test_the_bookkeeping_is_kept_in_checkpoints_under_its_earlier_keys():
    book = Bookkeeping(step=7, skipped=1, best_value=3.0, best_step=5, since_best=2)
    book.history.append({"step": 5, "value": 3.0, "loss": 1.1})
    stored = book.to_state("ppl")
    assert stored["stale"] == 2 and stored["metric"] == "ppl"  # as checkpoints always had it
    back = Bookkeeping.from_state({"step": 7, "trainer": stored, "metrics": {"ppl": 3.5}})
    assert back == Bookkeeping(
        step=7,
        skipped=1,
        best_value=3.0,
        best_step=5,
        since_best=2,
        history=book.history,
        last_metrics={"ppl": 3.5},
        saved_step=7,
    )
