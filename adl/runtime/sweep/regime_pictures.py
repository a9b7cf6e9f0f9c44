"""A regime's pictures (regime_report.py's curves): Δ BLEU with its seed-level interval
against the training pairs (log scale) for each compared pair, the paper's Δ as a line, and
the fitted trend dashed, with where it would meet the paper's Δ marked as a hypothesis."""

from __future__ import annotations

import math
from pathlib import Path

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from adl.runtime.run.figures import DPI
from adl.runtime.sweep.cells import p_cell
from adl.runtime.sweep.regime_report import curves
from adl.runtime.sweep.table import Table


def draw(table: Table, folder: Path) -> list[Path]:
    """regime-SYSTEM.png in ``folder`` for each curve with at least one Δ."""
    out = []
    for curve in curves(table):
        shown = [
            (
                p.size,
                p.delta,
                p.delta if p.low is None else p.low,
                p.delta if p.high is None else p.high,
            )
            for p in curve.points
            if p.delta is not None
        ]
        if not shown:
            continue
        fig = Figure(figsize=(6.0, 4.2), dpi=DPI, layout="constrained")
        FigureCanvasAgg(fig)
        ax = fig.subplots()
        xs = [x for x, _, _, _ in shown]
        ys = [y for _, y, _, _ in shown]
        lows = [y - low for _, y, low, _ in shown]
        highs = [high - y for _, y, _, high in shown]
        ax.errorbar(xs, ys, yerr=[lows, highs], fmt="o", capsize=4, label="Δ BLEU, 95 % interval")
        ax.axhline(0.0, color="black", linewidth=0.8)
        if curve.paper_delta is not None:
            ax.axhline(curve.paper_delta, color="tab:red", linestyle=":", label="the paper's Δ")
        t = curve.trend
        if t is not None:
            right = max(xs) if t.crossing is None else max(max(xs), min(t.crossing, max(xs) * 100))
            grid = [
                10 ** (math.log10(min(xs)) + i * (math.log10(right) - math.log10(min(xs))) / 50)
                for i in range(51)
            ]
            bent = t.bent()
            label = "trend (hypothesis)"
            if bent is not None:
                label = f"trend (hypothesis; the points lie off it, p {p_cell(bent)})"
            ax.plot(grid, [t.at(x) for x in grid], "--", color="tab:gray", label=label)
            if t.crossing is not None and t.crossing <= right:
                ax.axvline(t.crossing, color="tab:gray", linewidth=0.6)
        ax.set_xscale("log")
        ax.set_xlabel("training pairs (nested subsamples, equal passes)")
        ax.set_ylabel(f"Δ BLEU, {curve.system} − {curve.against}")
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=8)
        ax.set_title(f"{table.plan.spec.name}: {curve.system} against {curve.against}", fontsize=9)
        path = folder / f"regime-{curve.system}.png"
        path.parent.mkdir(parents=True, exist_ok=True)
        fig.savefig(path, dpi=DPI, format="png")
        out.append(path)
    return out
