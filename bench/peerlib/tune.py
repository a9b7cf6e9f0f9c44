"""The recipe search: the same small grid for every system on a tuning corpus' validation set.

Each cell of the grid (e.g. dropout {0, 0.1, 0.3} x peak learning rate {1e-3, 2e-3}) is
trained by every system for the same minutes and seeds; a run's score is the validation
score its chosen model had (``selection.py``: greedy, the validation sample, the recipe's
metric), so no test set is translated. Each system keeps the cell with its highest mean
score (the first such cell in grid order on a tie). The choice goes to a recipes file that a
benchmark run on other corpora reads (``--recipes``): the test corpora never see the search.
"""

from __future__ import annotations

import itertools
import json
from collections import defaultdict
from pathlib import Path
from typing import Any

from .recipe import TUNABLE
from .stats import spread

DEFAULT_GRID = {"dropout": [0.0, 0.1, 0.3], "lr": [1e-3, 2e-3]}


def parse_grid(items: list[str]) -> dict[str, list[float]]:
    """``["dropout=0,0.1,0.3", "lr=1e-3,2e-3"]`` -> {"dropout": [...], "lr": [...]}."""
    grid: dict[str, list[float]] = {}
    for item in items:
        name, _, values = item.partition("=")
        if name not in TUNABLE:
            raise ValueError(f"--grid {item}: the recipe search changes {', '.join(TUNABLE)}")
        try:
            grid[name] = [float(v) for v in values.split(",") if v]
        except ValueError:
            raise ValueError(f"--grid {item}: expected NAME=NUMBER,NUMBER,...") from None
        if not grid[name]:
            raise ValueError(f"--grid {item}: no values")
    return grid


def cells(grid: dict[str, list[float]]) -> list[dict[str, float]]:
    """Every combination, in grid order (the first name varies slowest)."""
    names = list(grid)
    return [dict(zip(names, values)) for values in itertools.product(*grid.values())]


def cell_name(cell: dict[str, float]) -> str:
    return ",".join(f"{k}={v:g}" for k, v in cell.items())


def choose(
    results: list[dict], grid: dict[str, list[float]], order: list[dict] | None = None
) -> dict[str, dict]:
    """system -> {"settings": best cell, "score": its mean, "cells": every cell's scores},
    over the cells of ``grid``, or of ``order`` when given (an extended search's cells)."""
    runs: dict[str, dict[str, list[dict]]] = defaultdict(lambda: defaultdict(list))
    for r in results:
        if not r.get("failed"):
            runs[r["system"]][cell_name(r["settings"])].append(r)
    chosen = {}
    for system, found in runs.items():
        table: list[dict[str, Any]] = []
        for cell in order if order is not None else cells(grid):
            done = found.get(cell_name(cell))
            if done:
                values = [r["selection"]["value"] for r in done]
                s = spread(values)
                facts = [{k: r.get(k) for k in ("seed", "updates", "tokens")} for r in done]
                table.append(
                    {
                        "settings": cell,
                        "scores": values,
                        "mean": s.mean,
                        "std": s.std,
                        "runs": facts,
                    }
                )
        if table:
            best = max(table, key=lambda c: c["mean"])  # max keeps the first of equals
            chosen[system] = {"settings": best["settings"], "score": best["mean"], "cells": table}
    return chosen


def write(path: Path, chosen: dict[str, dict], about: dict) -> None:
    """The recipes file: what was searched, on what, and each system's choice."""
    record = {**about, "systems": chosen}
    Path(path).write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")


def settings(pooled: dict[str, dict]) -> dict[str, dict[str, float]]:
    """system -> its chosen settings, from :func:`pool`'s answer."""
    return {name: dict(found["settings"]) for name, found in pooled.items()}


def pool(*paths: Path) -> dict[str, dict]:
    """system -> {"settings", "score", "cells"} over the searches of several tuning corpora:
    each cell's score is the mean over the corpora of its mean there (each corpus counts
    once, whatever its seeds), and each system keeps its highest (the first in grid order
    on a tie); a cell holds its per-corpus means under "by_corpus". The searches must share
    their grid and metric; a system is pooled over the corpora that searched it. With one
    file, the choice is that file's."""
    records = [_record(Path(p)) for p in paths]
    if not records:
        raise ValueError("no recipes file")
    for path, r in zip(paths, records):
        found = r.get("systems") if isinstance(r, dict) else None
        if not isinstance(found, dict) or not all(
            isinstance(x, dict) and x.get("cells") for x in found.values()
        ):
            raise ValueError(f"{path}: not the recipes file of a --tune run (no searched cells)")
    first = records[0]
    for path, r in zip(paths[1:], records[1:]):
        for key in ("grid", "metric"):
            if r.get(key) != first.get(key):
                raise ValueError(
                    f"{path}: its {key} {r.get(key)!r} is not {paths[0]}'s {first.get(key)!r}: "
                    "pool searches of one grid and metric"
                )
    pooled: dict[str, dict] = {}
    systems = dict.fromkeys(name for r in records for name in r["systems"])
    for system in systems:
        by_cell: dict[str, dict[str, Any]] = {}
        for path, r in zip(paths, records):
            for c in r["systems"].get(system, {}).get("cells", []):
                cell = by_cell.setdefault(cell_name(c["settings"]), {"settings": c["settings"]})
                cell.setdefault("by_corpus", []).append(
                    {"corpus": r.get("corpus", str(path)), "mean": c["mean"]}
                )
        table = [
            {**c, "mean": sum(x["mean"] for x in c["by_corpus"]) / len(c["by_corpus"])}
            for c in by_cell.values()
        ]
        best = max(table, key=lambda c: c["mean"])  # max keeps the first of equals
        pooled[system] = {"settings": best["settings"], "score": best["mean"], "cells": table}
    return pooled


def _record(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise ValueError(f"{path}: not JSON ({exc})") from None


def markdown(chosen: dict[str, dict], labels: dict[str, str], metric: str) -> list[str]:
    """One line per cell, one column per system: mean ± std of the validation score; then
    the same grid with each run's updates and target tokens per update."""

    def score(c: dict, system: str) -> str:
        text = f"{c['mean']:.2f}" + (f" ± {c['std']:.2f}" if c["std"] is not None else "")
        return text + (" **(chosen)**" if c["settings"] == chosen[system]["settings"] else "")

    def runs(c: dict, system: str) -> str:
        facts = [f for f in c.get("runs", []) if f.get("updates")]
        text = "; ".join(
            f"{f['seed']}: {f['updates']:,}, {f['tokens'] / f['updates']:,.0f}" for f in facts
        )
        return text or "–"

    lines = _grid(chosen, labels, score)
    lines += ["", f"validation {metric} of each run's chosen model (greedy, the validation sample)"]
    lines += [
        "",
        "Updates and target tokens per update of each run (seed: updates, tokens/update):",
    ]
    return lines + ["", *_grid(chosen, labels, runs)]


def pooled_markdown(pooled: dict[str, dict], labels: dict[str, str]) -> list[str]:
    """:func:`pool`'s table: a line per cell, a column per system, the per-corpus means and
    (after the arrow) their mean, the kept cell in bold."""

    def score(c: dict, system: str) -> str:
        parts = ", ".join(f"{x['mean']:.2f}" for x in c["by_corpus"])
        text = f"{parts} → {c['mean']:.2f}"
        return f"**{text}**" if c["settings"] == pooled[system]["settings"] else text

    return _grid(pooled, labels, score)


def _grid(chosen: dict[str, dict], labels: dict[str, str], text) -> list[str]:
    """A Markdown table: a line per cell of the grid, a column per system, ``text(cell,
    system)`` in each (a dash where the system has no run of the cell)."""
    systems = list(chosen)
    head = ["cell", *(labels.get(s, s) for s in systems)]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    names = dict.fromkeys(cell_name(c["settings"]) for s in systems for c in chosen[s]["cells"])
    for name in names:
        row = [name]
        for s in systems:
            found = [c for c in chosen[s]["cells"] if cell_name(c["settings"]) == name]
            row.append(text(found[0], s) if found else "–")
        lines.append("| " + " | ".join(row) + " |")
    return lines


# --- a search extended beyond a committed grid (a protocol's tuning: protocol_run.py) ---

SEARCHED = ("dropout", "lr", "warmup")  # what every cell of an extended search states


def full(cell: dict, base: Any) -> dict[str, float]:
    """``cell`` with every searched field stated (the base recipe's value where it has none):
    the committed grid's "dropout=0,lr=0.002" is "dropout=0,lr=0.002,warmup=300"."""
    found = {k: cell.get(k, getattr(base, k)) for k in SEARCHED}
    found.update({k: v for k, v in cell.items() if k not in SEARCHED})
    found["warmup"] = int(found["warmup"])
    return {k: float(v) if k != "warmup" else v for k, v in found.items()}


def committed(path: Path, base: Any) -> dict[str, list[dict]]:
    """system -> the cells a committed search (its recipes.json) ran, each stated in full."""
    record = _record(Path(path))
    return {
        system: [{**c, "settings": full(c["settings"], base)} for c in found["cells"]]
        for system, found in record["systems"].items()
    }


def at_chosen(pooled: dict[str, dict], extension: list[dict], base: Any) -> dict[str, list[dict]]:
    """system -> the extension's cells at the dropout it chose (``pooled``: :func:`pool`)."""
    return {
        system: [full({"dropout": found["settings"]["dropout"], **e}, base) for e in extension]
        for system, found in pooled.items()
    }


def beyond_edges(
    pooled: dict[str, dict], offered: dict[str, list[dict]], fields: list[str], factor: float
) -> dict[str, list[dict]]:
    """system -> the cells past an edge its pooled best lies on: for each of ``fields``, among
    the cells offered with the best's other settings, the best's value is the highest (then
    x ``factor``) or the lowest (then / ``factor``; a dropout of 0 has nothing below it)."""
    found: dict[str, list[dict]] = {}
    for system, chosen in pooled.items():
        best = dict(chosen["settings"])
        names = {cell_name(c) for c in offered.get(system, [])}
        for name in fields:
            line = [
                c[name]
                for c in offered.get(system, [])
                if all(c.get(k) == v for k, v in best.items() if k != name)
            ]
            if len(line) < 2:  # one value offered: no edge to tell
                continue
            value = best[name]
            if value >= max(line):
                nxt = value * factor
            elif value <= min(line) and value > 0:
                nxt = value / factor
            else:
                continue
            cell = {**best, name: int(round(nxt)) if name == "warmup" else float(nxt)}
            if cell_name(cell) not in names:
                found.setdefault(system, []).append(cell)
    return found
