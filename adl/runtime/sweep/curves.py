"""``adl sweep curves SPEC``: what the validations during training say, from the committed
result files alone (no run folders, no data), as ``adl sweep report`` makes the table.

For each validation metric the result files hold (loss and BLEU), one table by update: each
trained system's mean over its seeds, and each system's difference from the system it is
compared with (its ``against:``, else the baseline), taken seed by seed and averaged. Then
every run: its lowest validation loss and highest validation BLEU with the update each came
at, its updates, and its test BLEU beside its difference from the compared system's run of
the same seed. The accounts of docs/experiments.md quote their training curves from here.
"""

from __future__ import annotations

import statistics
from pathlib import Path
from typing import Any

from adl.runtime.sweep.planning import load_plan
from adl.runtime.sweep.table import Row, build

# validation metric of the result files -> (its name in the tables, decimals, better)
METRICS = {"loss": ("validation loss", 3, "lower"), "bleu": ("validation BLEU", 2, "higher")}


def curves(target: str | Path, results: str | Path | None = None) -> str:
    """The validation tables and the runs of a spec (a file or a bundled spec's name), as
    Markdown, from its result files."""
    spec, plan, kept = load_plan(target, None, results)
    table = build(plan, kept)
    rows = [r for r in table.rows if r.decode_of is None and r.runs]  # the trained ones
    by_name = {r.system: r for r in rows}
    pairs = [(r, by_name[r.against]) for r in rows if r.against in by_name]
    lines = [f"# Sweep `{spec.name}`: validation during training", ""]
    if not rows:
        return "\n".join([*lines, "No run is done yet: no result file to read.", ""])
    for key, (name, digits, better) in METRICS.items():
        series = {r.system: _by_step(r, key) for r in rows}
        steps = sorted({step for by in series.values() for step in by})
        if not steps:
            continue
        head = [r.system for r in rows] + [f"{r.system} − {o.system}" for r, o in pairs]
        lines += [
            f"{name[0].upper()}{name[1:]} ({better} is better), by update: the mean over "
            "the seeds; a difference is taken seed by seed and averaged.",
            "",
            "| update | " + " | ".join(head) + " |",
            "|---:|" + "---:|" * len(head),
        ]
        for step in steps:
            at = {name: by.get(step, {}) for name, by in series.items()}
            cells = [_cell(at[r.system], len(r.runs), digits) for r in rows]
            cells += [_difference(at[r.system], at[o.system], digits) for r, o in pairs]
            lines.append(f"| {step:,} | " + " | ".join(cells) + " |")
        lines.append("")
    lines += [
        "Each run: its lowest validation loss and highest validation BLEU (at update), and its "
        "test BLEU (Δ: less the compared system's run of the same seed).",
        "",
        "| system | seed | updates | lowest loss | highest BLEU | test BLEU | Δ | against |",
        "|---|---:|---:|---:|---:|---:|---:|---|",
    ]
    for row in rows:
        other = by_name.get(row.against or "")
        for seed, run in sorted(row.runs.items()):
            twin = other.runs.get(seed) if other else None
            delta = f"{run['bleu'] - twin['bleu']:+.2f}" if twin else ""
            lines.append(
                f"| {row.system} | {seed} | {run.get('steps', 0):,} | "
                f"{_best(run, 'loss', min, 3)} | {_best(run, 'bleu', max, 2)} | "
                f"{run['bleu']:.2f} | {delta} | {row.against if twin else ''} |"
            )
    return "\n".join([*lines, ""])


def _by_step(row: Row, key: str) -> dict[int, dict[int, float]]:
    """step -> seed -> the run's ``key`` at that validation, for the runs that reached it."""
    found: dict[int, dict[int, float]] = {}
    for seed, run in row.runs.items():
        for v in run.get("validations", []):
            if key in v:
                found.setdefault(v["step"], {})[seed] = v[key]
    return found


def _cell(values: dict[int, float], seeds: int, digits: int) -> str:
    if not values:
        return "–"
    text = f"{statistics.fmean(values.values()):.{digits}f}"
    return text if len(values) == seeds else f"{text} ({len(values)} of {seeds})"


def _difference(mine: dict[int, float], theirs: dict[int, float], digits: int) -> str:
    """The mean over the seeds both have of mine less theirs."""
    both = sorted(set(mine) & set(theirs))
    if not both:
        return "–"
    return f"{statistics.fmean(mine[s] - theirs[s] for s in both):+.{digits}f}"


def _best(run: dict[str, Any], key: str, pick: Any, digits: int) -> str:
    found = [v for v in run.get("validations", []) if key in v]
    if not found:
        return "–"
    best = pick(found, key=lambda v: v[key])
    return f"{best[key]:.{digits}f} ({best['step']:,})"
