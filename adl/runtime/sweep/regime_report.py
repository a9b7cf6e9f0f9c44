"""What a regime's table says as a curve (regime.py): for each compared pair, Δ BLEU with its
interval at every size, the passes the runs made, the trend of Δ against the training pairs
and where it would meet the paper's Δ if it held (a hypothesis with its uncertainty, never a
result); and the rate search. Read from a built table (table.py), so that ``adl sweep
report`` and the pictures (regime_pictures.py) say the same."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from adl.runtime.sweep.cells import p_cell, verdict_cell, within
from adl.runtime.sweep.table import Table

TREND_LEVEL = 0.95  # the crossing's range
BENT_BELOW = 0.05  # a misfit's p below which the points are said to lie off the line


@dataclass
class Point:
    size: int
    steps: int
    passes: float | None  # the mean over the system's runs of what they recorded
    delta: float | None
    low: float | None
    high: float | None
    verdict: str | None
    seeds: str  # "n/m": the runs with a result, of those planned
    higher: int | None
    lower: int | None
    passes_against: float | None = None  # the same, over the runs compared with


@dataclass
class Trend:
    """Δ = a + b · log10(pairs), fitted to the points by least squares weighted by each
    point's interval (its half-width over 1.96, squared)."""

    a: float
    b: float
    cov: list[list[float]]  # the covariance of (a, b)
    sizes: tuple[float, float]  # the smallest and largest pairs of the points fitted
    crossing: float | None = None  # pairs where the line meets the paper's Δ (None: never)
    crossing_range: tuple[float, float] | None = None  # from the fit's uncertainty
    chi2: float = 0.0  # the weighted squared residuals: the points' distance from the line
    points: int = 0  # how many points were fitted (chi2 has points - 2 degrees of freedom)

    def at(self, pairs: float) -> float:
        return self.a + self.b * math.log10(pairs)

    def misfit(self) -> float | None:
        """p of the points lying this far from the line if it were the truth (χ² on
        points - 2 degrees of freedom); None with two degrees of freedom short."""
        dof = self.points - 2
        if dof < 1:
            return None
        from scipy.stats import chi2  # type: ignore[import-untyped]

        return float(chi2.sf(self.chi2, dof))

    def bent(self) -> float | None:
        """The misfit's p where it is below ``BENT_BELOW`` (the points lie off the line),
        else None."""
        p = self.misfit()
        return p if p is not None and p < BENT_BELOW else None

    def towards(self, paper: float) -> bool | None:
        """Whether the line moves towards the paper's Δ as the data grows beyond the largest
        size fitted (None: it is flat, or already there)."""
        gap = paper - self.at(self.sizes[1])
        if self.b == 0 or gap == 0:
            return None
        return (gap > 0) == (self.b > 0)


@dataclass
class Curve:
    system: str
    against: str
    paper_delta: float | None
    claim: str | None
    points: list[Point] = field(default_factory=list)
    trend: Trend | None = None


def curves(table: Table) -> list[Curve]:
    """One curve per system of the spec that is compared with another, smallest size first."""
    spec = table.plan.spec
    by_name = {row.system: row for row in table.rows}
    found: dict[str, Curve] = {}
    for row in table.rows:
        system = spec.system(row.system)
        if system is None or system.of is None or system.size is None or not row.against:
            continue
        base = spec.system(row.against)
        v = row.values
        curve = found.setdefault(
            system.of,
            Curve(
                system.of,
                base.of if base and base.of else row.against,
                v["paper_delta"],
                v["claim"],
            ),
        )
        curve.points.append(
            Point(
                system.size,
                system.steps,
                row.mean("passes"),
                v["delta_bleu"],
                v["bleu_low"],
                v["bleu_high"],
                v["verdict"],
                f"{v['seeds']}/{row.planned}",
                v["seeds_higher"],
                v["seeds_lower"],
                by_name[row.against].mean("passes") if row.against in by_name else None,
            )
        )
    for curve in found.values():
        curve.points.sort(key=lambda p: p.size)
        curve.trend = fit(curve.points, curve.paper_delta)
    return list(found.values())


def fit(points: list[Point], paper: float | None) -> Trend | None:
    """The weighted line through the points that have an interval (three at least)."""
    use = [
        (math.log10(p.size), p.delta, (p.high - p.low) / 2 / 1.96)
        for p in points
        if p.delta is not None and p.low is not None and p.high is not None
    ]
    if len(use) < 3:
        return None
    xs = [x for x, _, _ in use]
    ys = [y for _, y, _ in use]
    ws = [1 / max(se**2, 1e-6) for _, _, se in use]
    sw = sum(ws)
    mx = sum(w * x for w, x in zip(ws, xs)) / sw
    my = sum(w * y for w, y in zip(ws, ys)) / sw
    sxx = sum(w * (x - mx) ** 2 for w, x in zip(ws, xs))
    b = sum(w * (x - mx) * (y - my) for w, x, y in zip(ws, xs, ys)) / sxx
    a = my - b * mx
    var_b = 1 / sxx
    var_a = 1 / sw + mx**2 / sxx
    cov_ab = -mx / sxx
    trend = Trend(
        a,
        b,
        [[var_a, cov_ab], [cov_ab, var_b]],
        (10 ** min(xs), 10 ** max(xs)),
        chi2=sum(w * (y - a - b * x) ** 2 for w, x, y in zip(ws, xs, ys)),
        points=len(use),
    )
    if paper is not None and b != 0:
        x = (paper - a) / b
        trend.crossing = 10**x if x < 12 else None
        # the delta method on x = (paper - a) / b: the range of log10(pairs) it implies
        dx_da, dx_db = -1 / b, -(paper - a) / b**2
        var_x = dx_da**2 * var_a + dx_db**2 * var_b + 2 * dx_da * dx_db * cov_ab
        half = 1.96 * math.sqrt(max(var_x, 0.0))
        if trend.crossing is not None and x + half < 12:
            trend.crossing_range = (10 ** (x - half), 10 ** (x + half))
    return trend


def markdown(table: Table) -> list[str]:
    """The curve and the rate search as Markdown lines (empty for a spec without a regime)."""
    spec = table.plan.spec
    if not any(s.of for s in spec.systems):
        return []
    lines: list[str] = []
    for curve in curves(table):
        paper = (
            f"; the paper's Δ {curve.paper_delta:+.2f} ({curve.claim})"
            if curve.paper_delta is not None
            else ""
        )
        lines += [
            "",
            f"**{curve.system} against {curve.against}** by training pairs{paper}:",
            "",
            f"| pairs | updates | passes ({curve.system} / {curve.against}) | seeds "
            "| Δ BLEU [95 % interval] | seeds +/− | verdict |",
            "|---:|---:|---:|---:|---:|---:|---|",
        ]
        for p in curve.points:
            delta = within(p.delta, p.low, p.high)
            sides = "" if p.higher is None else f"{p.higher}/{p.lower}"
            passes = " / ".join(
                "–" if n is None else f"{n:.1f}" for n in (p.passes, p.passes_against)
            )
            lines.append(
                f"| {p.size:,} | {p.steps:,} | {passes} | {p.seeds} | {delta} | {sides} | "
                f"{verdict_cell(p.verdict, p.low)} |"
            )
        lines += ["", _trend_sentence(curve)]
    lines += rate_lines(table)
    return lines


def _trend_sentence(curve: Curve) -> str:
    t = curve.trend
    if t is None:
        return "- Trend: not fitted yet (three sizes with an interval are needed)."
    text = (
        f"- Trend (a hypothesis, not a result): Δ ≈ {t.a:+.2f} {t.b:+.2f} · log10(pairs), "
        f"{t.b:+.2f} BLEU per tenfold data"
    )
    text += _misfit(t)
    if curve.paper_delta is None:
        return text + "."
    paper = curve.paper_delta
    towards = t.towards(paper)
    if towards is not None:
        text += (
            f"; with more data than the largest size run the line moves towards the paper's "
            f"{paper:+.2f}"
            if towards
            else f"; with more data than the largest size run the line moves away from the "
            f"paper's {paper:+.2f}"
        )
    if t.crossing is None:
        return text + f"; on this line Δ does not reach the paper's {paper:+.2f}."
    where = f"about {t.crossing:,.0f} pairs"
    if t.crossing_range is not None:
        lo, hi = t.crossing_range
        where += f" ({lo:,.0f} to {hi:,.0f} from the fit's uncertainty alone)"
    reach = f"the paper's {paper:+.2f} at {where}: {_reach(t.crossing, t.sizes)}"
    return text + f"; it meets {reach}."


def _misfit(t: Trend) -> str:
    """What the points' distance from the line says of the line (a curve that bends, or
    steps, fits no line): said where p < ``BENT_BELOW``."""
    p = t.bent()
    if p is None:
        return ""
    return (
        f" (the points lie off this line beyond their intervals: χ² {t.chi2:.1f} on "
        f"{t.points - 2} degrees of freedom, p {p_cell(p)}; Δ does not move as a line in "
        "log10(pairs), and the line's slope and crossing do not describe the curve)"
    )


def _reach(crossing: float, sizes: tuple[float, float]) -> str:
    """Where the crossing lies against the sizes the fit used: between them the measured
    points, not the line, say what Δ is; outside them it is an extrapolation."""
    smallest, largest = sizes
    if smallest * (1 - 1e-9) <= crossing <= largest * (1 + 1e-9):
        return "within the sizes run, where the measured points, not the line, say what Δ is"
    side = "below the smallest" if crossing < smallest else "beyond the largest"
    return f"an extrapolation {side} size run, which only a run at that size can test"


def rate_lines(table: Table) -> list[str]:
    """The rate search: each system's rates with their best validation BLEU, the chosen one."""
    from adl.runtime.sweep.regime_rates import best_validation_bleu

    spec = table.plan.spec
    rows = [r for r in table.rows if (s := spec.system(r.system)) and s.of and not s.compare]
    rows = [r for r in rows if "@lr" in r.system]
    if not rows:
        return []
    lines = [
        "",
        "Rate search (one seed, best validation BLEU during training; the highest is chosen):",
        "",
        "| system | peak rate | pairs | best validation BLEU |",
        "|---|---:|---:|---:|",
    ]
    for row in rows:
        system = spec.system(row.system)
        assert system is not None
        rate = next((v for k, v, _ in system.settings if k == "optim.lr"), None)
        best = [best_validation_bleu(r) for r in row.runs.values()]
        shown = f"{best[0]:.2f}" if best and best[0] is not None else "–"
        lines.append(f"| {system.of} | {rate:g} | {system.size:,} | {shown} |")
    return lines
