"""``bench/peers.py --protocol FILE``: every stage of a protocol (``protocol.py``), in order,
each continuing where it stopped.

1. The recipe search on the tuning corpora: the committed grid's cells are read, not run
   again; every system trains the extension's cells at its chosen dropout on each tuning
   corpus, then the cells past any edge its pooled best lies on (``tune.beyond_edges``),
   step by step. Each corpus's search, committed cells included, is written to
   ``tune-CORPUS/recipes.json``; the pool of both is what the budgets train with.
2. Each budget on each of its corpora: the corpus built when missing and its test
   references checked against the protocol's sha256; the ledger checked (``ledger.py``);
   the benchmark run with the protocol's seeds, minutes, searches and own practices, its
   runs kept in the protocol's results folder and a ledger line for each run's scoring.

Every job's result and every results.json record the protocol (file, sha256, stage).
"""

from __future__ import annotations

import subprocess
import sys
from dataclasses import replace
from pathlib import Path

from . import tune
from .bench import ROOT, Options, bible_corpus, run
from .protocol import Protocol, check_corpus, check_signatures, estimate
from .table import signatures

HELD_OUT = ("emoji", "gnu", "wesnoth")  # the committed rounds the machine time is measured on


def base_options(p: Protocol, cache: Path, dry_run: bool) -> Options:
    s = p.systems
    return Options(
        corpus=ROOT,  # set per stage
        out=ROOT,
        peers=list(s["peers"]),
        preset=s["preset"],
        sets=list(s["sets"]),
        cache=cache,
        threads=int(s["threads"]),
        slots=int(s["slots"]),
        device=s["device"],
        dry_run=dry_run,
    )


def ensure_corpus(folder: Path, build: str, say) -> None:
    """Build a corpus with the protocol's command when its folder is missing."""
    if (folder / "test.tgt").is_file() or (folder / "train.en").is_file():
        return
    argv = build.split()
    if argv[:2] != ["python", "bench/corpora.py"]:
        raise SystemExit(f"{folder} is missing: build it ({build})")
    say(f"building {folder}: {build}")
    subprocess.run([sys.executable, str(ROOT / argv[1]), *argv[2:]], check=True, cwd=ROOT)


def tuning(p: Protocol, o: Options, say) -> list[Path]:
    """Stage 1; the recipes files of the tuning corpora (pooled by the budgets)."""
    from .recipe import load

    t = p.tuning
    base = load(p.systems["preset"], p.systems["sets"], root=str(ROOT))
    folders = {}
    for name, c in t["corpora"].items():
        if name == "bible":
            folders[name] = bible_corpus(o.cache)
        else:
            folders[name] = ROOT / c["folder"]
            ensure_corpus(folders[name], c["build"], say)
    kept = {n: ROOT / t["results"].format(corpus=n) for n in t["corpora"]}
    files = [kept[n] / "recipes.json" for n in t["corpora"]]
    committed = {n: tune.committed(ROOT / c["committed"], base) for n, c in t["corpora"].items()}
    offered: dict[str, list[dict]] = {}  # system -> every cell it was offered, in order
    for found in committed.values():
        for system, cells in found.items():
            add(offered, system, [c["settings"] for c in cells])
    pooled = tune.pool(*(ROOT / c["committed"] for c in t["corpora"].values()))
    todo = tune.at_chosen(pooled, t["extension"], base)
    for step in range(int(t["edges"]["steps"]) + 1):
        if not todo:
            break
        for system, cells in todo.items():
            add(offered, system, cells)
        cells = {
            s: [c for c in found if not _in_committed(c, committed, s)]
            for s, found in offered.items()
        }
        say(
            f"recipe search, step {step} (0: the extension; then past the edges): "
            + "; ".join(
                f"{s}: {', '.join(tune.cell_name(c) for c in found)}" for s, found in todo.items()
            )
        )
        results = {}
        for name, folder in folders.items():
            stage = replace(
                o,
                corpus=folder,
                out=ROOT / "runs" / "peers" / p.spec["name"] / f"tune-{name}",
                results=kept[name],
                tune=True,
                cells=cells,
                minutes=float(t["minutes"]),
                seeds=int(t["seeds"]),
                beams=[],
                protocol=p.about(f"tuning-{name}"),
            )
            done = run(stage, say)
            results[name] = done["results"] if done else []
        if o.dry_run:
            say("(a dry run stops at the search's first step: the later ones follow its results)")
            break
        for name in folders:
            write_recipes(kept[name], name, committed[name], results[name], offered, p)
        pooled = tune.pool(*files)
        todo = tune.beyond_edges(pooled, offered, t["edges"]["fields"], t["edges"]["factor"])
    return files


def add(offered: dict[str, list[dict]], system: str, cells: list[dict]) -> None:
    known = {tune.cell_name(c) for c in offered.setdefault(system, [])}
    offered[system] += [c for c in cells if tune.cell_name(c) not in known]


def _in_committed(cell: dict, committed: dict, system: str) -> bool:
    """Whether every tuning corpus's committed search ran ``cell`` for ``system``."""
    name = tune.cell_name(cell)
    return all(
        name in {tune.cell_name(c["settings"]) for c in found.get(system, [])}
        for found in committed.values()
    )


def write_recipes(
    folder: Path, corpus: str, committed: dict, results: list[dict], offered: dict, p: Protocol
) -> None:
    """A tuning corpus's recipes file: its committed cells and its new ones, each system's
    best by its mean (the first of equals, committed cells first)."""
    new = [r for r in results if not r.get("failed")]
    order = {s: offered[s] for s in offered}
    chosen = {}
    for system in order:
        cells = list(committed.get(system, []))
        ran = tune.choose([r for r in new if r["system"] == system], {}, order[system])
        cells += ran.get(system, {}).get("cells", [])
        best = max(cells, key=lambda c: c["mean"])
        chosen[system] = {"settings": best["settings"], "score": best["mean"], "cells": cells}
    t = p.tuning
    about = {
        "corpus": t["corpora"][corpus]["folder"],
        "minutes": float(t["minutes"]),
        "seeds": list(range(1, int(t["seeds"]) + 1)),
        "grid": {
            "committed": "dropout x lr (tune.DEFAULT_GRID), warm-up 300",
            "extension": t["extension"],
            "edges": t["edges"],
        },
        "metric": "bleu",
        "preset": p.systems["preset"],
        "reused": t["corpora"][corpus]["committed"],
        "protocol": p.about(f"tuning-{corpus}"),
    }
    tune.write(folder / "recipes.json", chosen, about)


def budgets(
    p: Protocol, o: Options, recipes: list[Path], ledger: Path, reason: str | None, say
) -> None:
    """Stage 2: every budget on every one of its corpora."""
    for b in p.budgets:
        for name in b.corpora:
            c = p.corpora[name]
            folder = ROOT / c.folder
            ensure_corpus(folder, c.build, say)
            check_corpus(c, ROOT)
            stage = replace(
                o,
                corpus=folder,
                out=ROOT / "runs" / "peers" / p.spec["name"] / b.name / name,
                results=ROOT / p.results(b.name, name),
                minutes=b.minutes,
                seeds=b.seeds,
                recipes=recipes,
                beams=p.beams,
                own=True,
                protocol=p.about(b.name),
                ledger=ledger,
                rescore_reason=reason,
            )
            say(f"== {p.spec['name']}: {b.name} on {name} ({b.seeds} seeds, {b.minutes:g} minutes)")
            if o.dry_run and not all((ROOT / r).is_file() for r in recipes):
                say("  (its recipes come from the search above: not run yet)")
                continue
            run(stage, say)


def run_protocol(p: Protocol, cache: Path, dry_run: bool, reason: str | None, say=print) -> int:
    differ = check_signatures(p.spec["metrics"], signatures())
    if differ:
        raise SystemExit(
            f"sacrebleu's {', '.join(differ)} signature is not the protocol's: {signatures()}"
        )
    o = base_options(p, cache, dry_run)
    if dry_run:
        measured = [
            (
                ROOT / f"docs/results/peers/heldout-grid/{c}",
                ROOT / f"docs/results/peers/references/{c}-en-fr/test.tgt",
            )
            for c in HELD_OUT
        ]
        hours = estimate(p, ROOT, measured)
        say(f"protocol {p.file} (sha256 {p.sha256}); machine time, hours of the whole machine:")
        for stage, h in hours.items():
            say(f"  {stage}: {h:.1f}")
        say(f"  total: {sum(hours.values()):.1f} (the edges' at most)")
    recipes = tuning(p, o, say)
    budgets(p, o, recipes, ROOT / p.spec["ledger"], reason, say)
    return 0
