"""Drawing: grids of heatmaps and line charts as PNG files, with matplotlib's Agg backend.

Figures are made with ``matplotlib.figure.Figure`` on an Agg canvas, never through
``pyplot``: nothing needs a display, and neither the process's matplotlib backend nor any
global figure state is touched (a notebook importing this keeps its own backend).
The size of a picture in pixels is exactly ``figure inches × DPI`` (no tight bounding box).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator
from torch import Tensor

DPI = 100
CMAP = "Blues"
LABELS_UP_TO = 40  # axes longer than this get numeric ticks instead of one per position


@dataclass
class Heatmap:
    """One panel: a (rows × columns) matrix with a title and, optionally, tick labels."""

    title: str
    matrix: Tensor  # (queries, keys)
    rows: Sequence[str] | None = None  # query labels, top to bottom
    cols: Sequence[str] | None = None  # key labels, left to right
    ylabel: str = "query position i"
    xlabel: str = "key position j"
    split: int | None = None  # draw a line before this row and column (a joint stream)


def grid(n: int, columns: int) -> tuple[int, int]:
    """(rows, columns) of a grid for n panels, at most ``columns`` wide."""
    cols = max(1, min(n, columns))
    return math.ceil(n / cols), cols


def panel_inches(queries: int, keys: int) -> tuple[float, float]:
    """(width, height) of one panel: room for a label per position, within bounds."""
    cell = 0.2 if max(queries, keys) <= LABELS_UP_TO else 0.08
    return (min(max(2.6, 1.1 + cell * keys), 9.0), min(max(2.4, 1.1 + cell * queries), 9.0))


def heatmap_size(panels: Sequence[Heatmap], columns: int) -> tuple[float, float]:
    """The figure size in inches of :func:`draw_heatmaps` for these panels."""
    rows, cols = grid(len(panels), columns)
    w = max(panel_inches(*p.matrix.shape)[0] for p in panels)
    h = max(panel_inches(*p.matrix.shape)[1] for p in panels)
    return round(max(cols * w + 1.2, 5.0), 2), round(rows * h + 1.0, 2)


def pixels(size: tuple[float, float], dpi: int = DPI) -> tuple[int, int]:
    """The PNG's (width, height) in pixels for a figure of ``size`` inches."""
    return round(size[0] * dpi), round(size[1] * dpi)


def _ticks(ax, labels: Sequence[str] | None, n: int, axis: str) -> None:
    if labels is None:
        if n > LABELS_UP_TO:
            return  # matplotlib's own numeric ticks
        labels = [str(i) for i in range(n)]
    if axis == "x":
        ax.set_xticks(range(n), labels, rotation=90, fontsize=7)
    else:
        ax.set_yticks(range(n), labels, fontsize=7)


def draw_heatmaps(
    panels: Sequence[Heatmap],
    out: str | Path,
    title: str = "",
    columns: int = 4,
    vmax: float | None = None,
) -> Path:
    """A grid of heatmaps sharing one colour scale (0 .. ``vmax``, default the largest value)
    and one colour bar; query positions run down, key positions across. Returns the path."""
    if not panels:
        raise ValueError("no panels to draw")
    size = heatmap_size(panels, columns)
    fig = Figure(figsize=size, dpi=DPI, layout="constrained")
    FigureCanvasAgg(fig)
    rows, cols = grid(len(panels), columns)
    axes = fig.subplots(rows, cols, squeeze=False).ravel()
    top = vmax if vmax is not None else max(float(p.matrix.max()) for p in panels) or 1.0
    image = None
    for ax, p in zip(axes, panels):
        m = p.matrix.detach().float().cpu().numpy()
        image = ax.imshow(m, cmap=CMAP, vmin=0.0, vmax=top, aspect="auto", interpolation="nearest")
        ax.set_title(p.title, fontsize=9)
        _ticks(ax, p.cols, m.shape[1], "x")
        _ticks(ax, p.rows, m.shape[0], "y")
        ax.set_xlabel(p.xlabel, fontsize=8)
        ax.set_ylabel(p.ylabel, fontsize=8)
        ax.tick_params(labelsize=7)
        if p.split is not None:
            ax.axhline(p.split - 0.5, color="tab:red", linewidth=0.8)
            ax.axvline(p.split - 0.5, color="tab:red", linewidth=0.8)
    for ax in axes[len(panels) :]:
        ax.set_axis_off()
    assert image is not None  # there is at least one panel
    fig.colorbar(image, ax=list(axes), shrink=0.8, label="weight")
    if title:
        fig.suptitle(title, fontsize=10)
    return _save(fig, out)


@dataclass
class Curve:
    """One chart: y against x (training steps)."""

    title: str
    x: Sequence[float]
    y: Sequence[float]
    ylabel: str
    log: bool = False  # a logarithmic y axis where values span over 10× (perplexity)


CURVE_INCHES = (5.0, 3.2)


def curves_size(n: int, columns: int = 2) -> tuple[float, float]:
    """The figure size in inches of :func:`draw_curves` for n charts."""
    rows, cols = grid(n, columns)
    return cols * CURVE_INCHES[0], rows * CURVE_INCHES[1] + 0.5


def draw_curves(
    charts: Sequence[Curve], out: str | Path, title: str = "", columns: int = 2
) -> Path:
    """Line charts by training step, one per panel. Returns the path."""
    if not charts:
        raise ValueError("no charts to draw")
    fig = Figure(figsize=curves_size(len(charts), columns), dpi=DPI, layout="constrained")
    FigureCanvasAgg(fig)
    rows, cols = grid(len(charts), columns)
    axes = fig.subplots(rows, cols, squeeze=False).ravel()
    for ax, c in zip(axes, charts):
        ax.plot(c.x, c.y, marker="o" if len(c.x) <= 30 else None, markersize=3)
        if c.log and min(c.y) > 0 and max(c.y) > 10 * min(c.y):
            ax.set_yscale("log")
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.set_title(c.title, fontsize=10)
        ax.set_xlabel("step")
        ax.set_ylabel(c.ylabel)
        ax.grid(True, alpha=0.3)
    for ax in axes[len(charts) :]:
        ax.set_axis_off()
    if title:
        fig.suptitle(title, fontsize=10)
    return _save(fig, out)


def _save(fig: Figure, out: str | Path) -> Path:
    path = Path(out)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=DPI, format="png")
    return path
