"""The sweep's pictures, drawn as adl/runtime/run/figures.py draws (matplotlib's Agg canvas, no
pyplot): test BLEU per system with error bars and each seed's score, the systems that differ
significantly from the baseline starred; and BLEU against decoding speed (error bars: the
standard deviations over seeds)."""

from __future__ import annotations

import statistics
from pathlib import Path
from typing import TYPE_CHECKING

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from adl.runtime.run.figures import DPI

if TYPE_CHECKING:
    from adl.runtime.sweep.table import Table

BASELINE, OTHER = "tab:gray", "tab:blue"


def draw(table: Table, folder: Path | None = None) -> list[Path]:
    """bleu.png, bleu_speed.png and a regime's regime-SYSTEM.png of the sweep in ``folder``
    (default: the sweep folder's pictures/; nothing without scores)."""
    rows = [r for r in table.rows if r.values["bleu_mean"] is not None]
    if not rows:
        return []
    folder = folder or table.plan.out / "pictures"
    from adl.runtime.sweep import regime_pictures

    return [
        bleu_bars(table, rows, folder / "bleu.png"),
        bleu_speed(table, rows, folder / "bleu_speed.png"),
        *regime_pictures.draw(table, folder),
    ]


def bleu_bars(table: Table, rows: list, out: Path) -> Path:
    from adl.runtime.sweep.significance import LEVEL

    fig = Figure(figsize=(max(4.0, 1.1 * len(rows) + 2.0), 4.0), dpi=DPI, layout="constrained")
    FigureCanvasAgg(fig)
    ax = fig.subplots()
    x = range(len(rows))
    means = [r.values["bleu_mean"] for r in rows]
    stds = [r.values["bleu_std"] or 0.0 for r in rows]
    colors = [BASELINE if r.baseline else OTHER for r in rows]
    ax.bar(x, means, yerr=stds, capsize=5, color=colors, alpha=0.75)
    for i, r in enumerate(rows):
        seeds = [run["bleu"] for _, run in sorted(r.runs.items())]
        ax.plot([i] * len(seeds), seeds, "o", color="black", markersize=3, zorder=3)
        verdict = r.values["verdict"]
        if verdict is not None:
            if verdict != "tie":
                star = "*"
            elif r.values["bleu_low"] is None:
                star = "(1 run)"  # no interval to judge (cells.FEW_RUNS in the tables)
            else:
                star = "tie"
            top = max([means[i] + stds[i], *seeds])
            ax.annotate(
                f"{r.values['delta_bleu']:+.2f} {star}",
                (i, top),
                xytext=(0, 4),
                textcoords="offset points",
                ha="center",
                fontsize=8,
            )
    base = table.plan.spec.baseline
    names = [r.system + (f"\n(vs {r.vs(base)})" if r.vs(base) else "") for r in rows]
    ax.set_xticks(list(x), names, rotation=20 if len(rows) > 4 else 0)
    ax.set_ylabel("test BLEU")
    ax.set_ylim(0, max(m + s for m, s in zip(means, stds)) * 1.2 + 1)
    ax.grid(True, axis="y", alpha=0.3)
    counts = sorted({len(r.runs) for r in rows})
    n = "/".join(map(str, counts))
    ax.set_title(
        f"{table.plan.spec.name}: test BLEU, mean ± std over {n} seed{'s' if counts != [1] else ''}"
        f"\ngrey: baseline; * the {100 * LEVEL:.0f} % interval over the runs excludes 0 "
        "(against it, or against X where (vs X))",
        fontsize=9,
    )
    return _save(fig, out)


def bleu_speed(table: Table, rows: list, out: Path) -> Path:
    fig = Figure(figsize=(5.5, 4.0), dpi=DPI, layout="constrained")
    FigureCanvasAgg(fig)
    ax = fig.subplots()
    for r in rows:
        speeds = [
            run["decode_sentences_per_s"]
            for run in r.runs.values()
            if run.get("decode_sentences_per_s")
        ]
        if not speeds:
            continue
        mean = statistics.fmean(speeds)
        spread = statistics.stdev(speeds) if len(speeds) > 1 else 0.0
        ax.errorbar(
            mean,
            r.values["bleu_mean"],
            xerr=spread,
            yerr=r.values["bleu_std"] or 0.0,
            fmt="o",
            capsize=4,
            color=BASELINE if r.baseline else OTHER,
        )
        ax.annotate(
            r.system,
            (mean, r.values["bleu_mean"]),
            xytext=(5, 5),
            textcoords="offset points",
            fontsize=8,
        )
    ax.set_xlabel("decoding speed (test sentences per second)")
    ax.set_ylabel("test BLEU")
    ax.grid(True, alpha=0.3)
    beams = sorted({str(s.decode.get("beam", 1)) for s in table.plan.spec.systems})
    ax.set_title(
        f"{table.plan.spec.name}: BLEU against decoding speed (beam {'/'.join(beams)})", fontsize=9
    )
    return _save(fig, out)


def _save(fig: Figure, out: Path) -> Path:
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=DPI, format="png")
    return out
