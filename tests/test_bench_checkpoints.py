"""bench/checkpoints.py's summary: the spread of the first beam's BLEU over a run's step
checkpoints and each beam's gain over it, from best.pt/last.pt left out; and the committed
emoji result agrees with its own rows."""

import json
import sys

import pytest
from conftest import ROOT

sys.path.insert(0, str(ROOT / "bench"))

import checkpoints  # noqa: E402


def row(name: str, greedy: float, beam4: float) -> dict:
    return {"checkpoint": name, "beam1": {"bleu": greedy}, "beam4": {"bleu": beam4}}


def test_the_summary_counts_step_checkpoints_only():
    rows = [
        row("best", 90.0, 0.0),
        row("step-0000200", 10.0, 12.0),
        row("step-0000400", 14.0, 13.0),
    ]
    s = checkpoints.summary(rows, [1, 4])
    assert s["checkpoints"] == 2
    assert s["beam1_range"] == [10.0, 14.0]
    gain = s["beam4_minus_beam1"]
    assert (gain["mean"], gain["least"], gain["most"]) == (pytest.approx(0.5), -1.0, 2.0)


def test_the_committed_emoji_result_agrees_with_its_rows():
    report = json.loads((ROOT / "docs/results/peers/emoji-en-fr/checkpoints.json").read_text())
    assert len(report) == 3
    for run in report:
        assert checkpoints.summary(run["scores"], [1, 4, 8]) == run["summary"]
        assert not run["run"].startswith("/")
