"""The cells both sweep tables write (adl/runtime/sweep/cells.py): a lone run's Δ has no
interval, and its verdict cell says so rather than 'tie'."""

from __future__ import annotations

from adl.runtime.sweep.cells import FEW_RUNS, verdict_cell, within
from adl.runtime.sweep.significance import verdict


def test_a_delta_with_and_without_its_interval():
    assert within(1.234, 0.5, 2.0) == "+1.23 [+0.50, +2.00]"
    assert within(-0.5, None, None) == "-0.50 [–]"
    assert within(None, None, None) == ""


def test_a_lone_run_is_not_called_a_tie():
    assert verdict(None, None) == "tie"  # what the test falls back to without an interval
    assert verdict_cell(verdict(None, None), None) == FEW_RUNS == "too few runs"
    assert verdict_cell(verdict(-0.5, 0.5), -0.5) == "tie"
    assert verdict_cell(verdict(0.2, 1.0), 0.2) == "**ahead**"
    assert verdict_cell(verdict(-1.0, -0.2), -1.0) == "**behind**"
    assert verdict_cell(None, None) == ""
