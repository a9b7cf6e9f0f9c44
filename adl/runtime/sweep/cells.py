"""The cells a sweep's tables share (markdown.py's table, regime_report.py's curves): a Δ with
its interval, the verdict it implies and a p value, written the same way in both."""

from __future__ import annotations

FEW_RUNS = "too few runs"  # the verdict cell where a side has one run: no interval to judge


def within(delta: float | None, low: float | None, high: float | None) -> str:
    """``+1.23 [+0.45, +2.01]``; ``[–]`` where a side has one run (no interval)."""
    if delta is None:
        return ""
    if low is None or high is None:
        return f"{delta:+.2f} [–]"
    return f"{delta:+.2f} [{low:+.2f}, {high:+.2f}]"


def p_cell(value: float | None) -> str:
    """``0.012``; ``< 0.001`` below it; empty where there is none."""
    if value is None:
        return ""
    return "< 0.001" if value < 0.001 else f"{value:.3f}"


def verdict_cell(verdict: str | None, low: float | None) -> str:
    """The verdict, bold where it decides; where the interval is missing (a side with one
    run) the cell says so instead of the 'tie' the test falls back to, so that a reader does
    not take a lone run's Δ for a measured tie."""
    if not verdict:
        return ""
    if low is None:
        return FEW_RUNS
    return verdict if verdict == "tie" else f"**{verdict}**"
