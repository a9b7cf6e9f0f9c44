"""The benchmark's picture of one corpus: every system's validation BLEU and chrF (its
checkpoints' greedy translations of the validation sample, one sacrebleu call for all,
``selection.py``) against the wall-clock since its clock started and against the target
tokens it had trained on: four panels, a colour per system, a line per seed.

Drawn with matplotlib's Agg canvas, as ``adl.runtime.run.figures`` draws (no pyplot).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

COLOURS = ("tab:blue", "tab:orange", "tab:green", "tab:red", "tab:purple", "tab:brown")


@dataclass
class Series:
    """One run's curve."""

    system: str  # the legend's name (one colour per name)
    seed: int
    seconds: Sequence[float]
    tokens: Sequence[int]
    bleu: Sequence[float]
    chrf: Sequence[float]


def draw(series: Sequence[Series], out: Path, title: str) -> Path:
    """Write the PNG; returns its path."""
    if not series:
        raise ValueError("no curves to draw")
    fig = Figure(figsize=(11.0, 7.5), dpi=100, layout="constrained")
    FigureCanvasAgg(fig)
    axes = fig.subplots(2, 2, sharey="row")
    systems = list(dict.fromkeys(s.system for s in series))
    colour = {name: COLOURS[i % len(COLOURS)] for i, name in enumerate(systems)}
    for row, metric in enumerate(("bleu", "chrf")):
        for col, (xname, xlabel) in enumerate(
            (
                ("seconds", "wall-clock since the first update (minutes)"),
                ("tokens", "target tokens trained on (millions)"),
            )
        ):
            ax = axes[row][col]
            for s in series:
                scale = 60.0 if xname == "seconds" else 1e6
                x = [v / scale for v in getattr(s, xname)]
                first = s.seed == min(t.seed for t in series if t.system == s.system)
                ax.plot(
                    x,
                    getattr(s, metric),
                    color=colour[s.system],
                    marker="o",
                    markersize=3,
                    linewidth=1.2,
                    alpha=0.85,
                    label=s.system if first else None,
                )
            ax.set_xlabel(xlabel)
            ax.set_ylabel(f"validation {'BLEU' if metric == 'bleu' else 'chrF'} (greedy)")
            ax.grid(True, alpha=0.3)
    axes[0][0].legend(loc="best", fontsize=8)
    fig.suptitle(title)
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out)
    return out
