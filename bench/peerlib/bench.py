"""One benchmark or recipe search, from its options to its tables: what ``bench/peers.py``
runs for its command line, and ``protocol_run.py`` for each stage of a protocol.

A benchmark prepares the corpus (``prepare.py``), makes every job (a system, a seed, the
recipe the search chose for it), runs the unfinished ones in rounds (``runs.py``), keeps
each finished job where git holds it (``--results``, ``kept.py``), writes a ledger line for
each job that scored the test set (``ledger.py``), then reports (``report.py``). A recipe
search runs every system on every cell of its grid, or on the cells given per system.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shlex
from dataclasses import dataclass, field
from pathlib import Path

from . import recipe as recipe_mod
from . import report, systems, table, tune, venvs
from .base import Data, read_lines
from .kept import Kept
from .ledger import Ledger, Scoring
from .prepare import find_files, prepare
from .recipe import Recipe
from .runs import Job, run_rounds

ROOT = Path(__file__).resolve().parent.parent.parent
SETTINGS = "benchmark.json"  # what a benchmark folder was started with


@dataclass
class Options:
    """What a benchmark or a recipe search runs (the command line's options, resolved)."""

    corpus: Path  # folder of train/valid/test files
    out: Path  # where the runs train (checkpoints, logs)
    langs: tuple[str, str] | None = None
    minutes: float = 15.0
    peers: list[str] = field(default_factory=lambda: ["sockeye", "fairseq"])
    seeds: int = 1
    recipes: list[Path] = field(default_factory=list)  # recipe searches' files, pooled
    tune: bool = False  # a recipe search instead of a benchmark
    grid: dict = field(default_factory=lambda: dict(tune.DEFAULT_GRID))
    cells: dict[str, list[dict]] | None = None  # a search's cells per system (else the grid)
    preset: str = "small_cpu"
    sets: list[str] = field(default_factory=list)  # --set items, train.threads added
    results: Path | None = None  # kept files (a folder git tracks)
    cache: Path = ROOT / "data" / "cache" / "peers"
    threads: int = 1
    slots: int = 1
    device: str = "cpu"
    beams: list[int] = field(default_factory=lambda: [1, 4])
    own: bool = False  # also test each peer's own practice
    keep_checkpoints: bool = False
    dry_run: bool = False
    protocol: dict | None = None  # {"file", "sha256", "stage"}: recorded in every result
    ledger: Path | None = None  # the ledger of test-set scorings (None: none kept)
    rescore_reason: str | None = None


def plan_rounds(peers: list[str], slots: int) -> list[list[str]]:
    """Systems per round: all at once when they fit, else ADL beside slots - 1 peers."""
    if slots >= 1 + len(peers):
        return [["adl", *peers]]
    if slots < 2:
        return [["adl"]] + [[p] for p in peers]
    per = slots - 1
    return [["adl", *peers[i : i + per]] for i in range(0, len(peers), per)]


def bible_corpus(cache: Path) -> Path:
    """The default corpus, as ``adl demo`` makes it (data/bible, en-fr, verses <= 20 words)."""
    from adl.runtime.data import bible

    out = ROOT / "data" / "bible"
    bible.bible("en-fr", out=out, max_words=20, cache=cache.parent)
    return out


def shown(path: Path) -> str:
    """``path`` as a results file records it: relative to the repository when inside it."""
    resolved = Path(path).resolve()
    return str(resolved.relative_to(ROOT)) if resolved.is_relative_to(ROOT) else str(path)


class Factory:
    """Systems for jobs: each with its recipe (the search's choice, the seed) and python."""

    def __init__(self, base: Recipe, chosen: dict, data: Data, device: str, venv: dict):
        self.base, self.chosen, self.data, self.device, self.venv = base, chosen, data, device, venv
        self.about: dict = {}  # recorded in every job's result (the protocol)

    def recipe(self, name: str, seed: int, settings: dict | None = None) -> Recipe:
        found = settings if settings is not None else self.chosen.get(name, {})
        return dataclasses.replace(recipe_mod.with_settings(self.base, found), seed=seed)

    def job(
        self,
        name: str,
        seed: int,
        group: str,
        out: Path,
        minutes: float,
        beams: list[int],
        settings: dict | None = None,
        keep: bool = False,
        own: bool = False,
    ) -> Job:
        r = self.recipe(name, seed, settings)
        system = systems.make(name, r, self.data, out, self.device, self.venv.get(name))
        cell = dict(settings or {})
        return Job(system, seed, group, minutes, beams, cell, keep, own, dict(self.about))


def bench_rounds(
    f: Factory, rounds: list[list[str]], seeds: list[int], o: Options
) -> list[list[Job]]:
    """Seed by seed (a stopped benchmark has whole seeds), each round's systems together."""
    found = []
    for seed in seeds:
        for names in rounds:
            group = "+".join(names)
            folder = o.out / "runs" / group / f"seed{seed}"
            jobs = [
                f.job(
                    n, seed, group, folder / n, o.minutes, o.beams, None, o.keep_checkpoints, o.own
                )
                for n in names
            ]
            found.append(jobs)
    return found


def tune_rounds(
    f: Factory,
    cells: dict[str, list[dict]],
    seeds: list[int],
    out: Path,
    minutes: float,
    slots: int,
) -> list[list[Job]]:
    """Every system x its cells x seed, ``slots`` jobs at a time (a cell's systems together)."""
    order = list(dict.fromkeys(tune.cell_name(c) for found in cells.values() for c in found))
    jobs = []
    for seed in seeds:
        for name in order:
            for system, found in cells.items():
                for cell in found:
                    if tune.cell_name(cell) == name:
                        folder = out / "tune" / name / f"seed{seed}" / system
                        jobs.append(f.job(system, seed, name, folder, minutes, [], cell))
    return [jobs[i : i + slots] for i in range(0, len(jobs), slots)]


def check_settings(out: Path, settings: dict) -> None:
    """A benchmark folder continues only with the settings it was started with."""
    path = out / SETTINGS
    if path.is_file():
        before = json.loads(path.read_text(encoding="utf-8"))
        if "corpus" in before:  # folders started before the corpus was recorded as shown
            before["corpus"] = shown(Path(before["corpus"]))
        changed = sorted(k for k in set(before) | set(settings) if before.get(k) != settings.get(k))
        if changed:
            raise SystemExit(
                f"{out} holds a benchmark started with other settings ({', '.join(changed)}): "
                "choose another --out, or start it again with the same options"
            )
    out.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(settings, indent=1) + "\n", encoding="utf-8")


def settings_of(o: Options, chosen: dict) -> dict:
    """What a benchmark folder records it was started with (``check_settings``)."""
    found = {
        "corpus": shown(o.corpus),
        "preset": o.preset,
        "sets": o.sets,
        "minutes": o.minutes,
        "peers": o.peers,
        "device": o.device,
        "slots": o.slots,
        "beams": o.beams,
        "recipes": chosen,
        # a protocol's extended search: its cells grow step by step (the protocol fixes them)
        "grid": ("the protocol's" if o.cells else o.grid) if o.tune else None,
    }
    if o.own:  # recorded only when asked: older folders continue as they were
        found["own_practice"] = True
    if o.protocol:
        found["protocol"] = o.protocol
    return found


def run(o: Options, say=print) -> dict | None:
    """Run a benchmark or a recipe search; its record (None for a dry run). A recipe search's
    record is its results and, when it ran the grid, its choice (``recipes.json``)."""
    config = recipe_mod.configure(
        [str(ROOT / f) for f in recipe_mod.ARCH], preset=o.preset, sets=o.sets
    )
    base = recipe_mod.from_config(config, o.preset, o.sets)
    pooled = tune.pool(*o.recipes) if o.recipes else {}
    chosen = tune.settings(pooled)
    seeds = [base.seed + i for i in range(o.seeds)]
    settings = settings_of(o, chosen)
    if not o.dry_run:
        check_settings(o.out, settings)
        if o.results:
            check_settings(o.results.resolve(), settings)
    files = find_files(o.corpus, o.langs)
    say(f"corpus {o.corpus}: preparing one sentencepiece model and the pieces -> {o.out}/data")
    data = prepare(files, o.out / "data", base, config.data)
    c = data.counts
    say(
        f"  train {c['train']:,} pairs ({c['dropped']:,} over the length filter dropped, "
        f"{c['dropped_tokens_percent']:g} % of the target tokens), valid {c['valid']:,} "
        f"(sample of {c['sample']:,} scored), test {c['test']:,}"
    )
    venv = {}
    for name in o.peers:
        if name in venvs.RECIPES:
            venv[name] = o.cache / name if o.dry_run else venvs.ensure(name, o.cache, say)
    f = Factory(base, chosen, data, o.device, venv)
    if o.protocol:
        f.about = {"protocol": o.protocol}
    if len(o.recipes) > 1:
        say(f"recipes pooled over {len(o.recipes)} searches (per-corpus means → mean):")
        say("\n".join(tune.pooled_markdown(pooled, systems.labels(pooled))))
    names = ["adl", *o.peers]
    for name in names if chosen else []:
        found = tune.cell_name(chosen[name]) if name in chosen else "the preset's (not searched)"
        say(f"  {systems.SYSTEMS[name].label}: {found}")
    if o.tune:
        cells = o.cells or {n: tune.cells(o.grid) for n in names}
        rounds = tune_rounds(f, cells, seeds, o.out, o.minutes, o.slots)
    else:
        rounds = bench_rounds(f, plan_rounds(o.peers, o.slots), seeds, o)
    todo = sum(1 for jobs in rounds if any(not j.finished() for j in jobs))
    say(
        f"{len(rounds)} rounds of {o.minutes:g} minutes ({todo} to run), {o.slots} processes "
        f"at once, {o.threads} thread(s) each, on {o.device}; after its clock, each run's "
        "checkpoints are validated" + ("" if o.tune else " and its test set translated")
    )
    if o.dry_run:
        for i, jobs in enumerate(rounds, 1):
            for j in jobs:
                for step in [*j.system.prepare(), j.system.train(o.minutes)]:
                    say(f"# round {i}, {j.system.label}, seed {j.seed}, {step.name}")
                    say(shlex.join(step.argv))
        return None
    kept = Kept(o.results.resolve(), o.out) if o.results else None
    every = [j for jobs in rounds for j in jobs]
    if kept:
        kept.check(every)
        restored = kept.restore(every)
        if restored:
            say(f"{restored} finished runs copied back from {shown(kept.root)}")
    on_finish = kept.keep if kept else None
    if not o.tune and o.ledger is not None and any(not j.finished() for j in every):
        on_finish = scoring_recorder(o, data, on_finish)
    results = run_rounds(rounds, o.threads, say, on_finish=on_finish)
    if o.tune:
        return {"results": results, "base": base, "seeds": seeds}
    return write_report(o, base, chosen, data, results, settings, seeds, kept)


def scoring(o: Options, data: Data) -> Scoring:
    """The ledger's view of this benchmark's test set and protocol."""
    from .protocol import sha256_of

    p = o.protocol or {}
    return Scoring(
        corpus=Path(o.corpus).resolve().name,
        test_sha256=sha256_of(data.raw["test"][1]),
        protocol=p.get("file"),
        protocol_sha256=p.get("sha256"),
        stage=p.get("stage"),
        reason=o.rescore_reason,
    )


def scoring_recorder(o: Options, data: Data, then):
    """Check the ledger before anything runs; a callback that records each job's scoring
    (after its files are kept)."""
    assert o.ledger is not None
    ledger, found = Ledger(o.ledger, ROOT), scoring(o, data)
    ledger.check(found)
    searches = ", ".join(table.search_name(k) for k in o.beams)

    def record(job: Job) -> None:
        if then is not None:
            then(job)
        own = ", own practice" if job.own and job.system.name != "adl" else ""
        what = f"{o.minutes:g} min, {searches}, common rule{own}"
        ledger.record(found, what, system=job.system.name, seed=job.seed)

    return record


def write_report(
    o: Options,
    base: Recipe,
    chosen: dict,
    data: Data,
    results: list[dict],
    settings: dict,
    seeds: list[int],
    kept: Kept | None,
) -> dict:
    """The tables, the curves and ``results.json``, in ``out`` and the kept folder."""
    from .describe import describe

    outs = [o.out, *([kept.root] if kept else [])]
    refs = read_lines(data.raw["test"][1])
    sig = table.signatures()
    notes = describe(base, chosen, o, data, sig)
    title = f"Peers on {Path(o.corpus).resolve().name}"
    done = report.report(results, o.beams, refs, title, notes)
    pictures = [report.draw_curves(results, folder / "curves.png", title) for folder in outs]
    record = {
        **settings,
        "recipe": base.to_dict(),
        "seeds": seeds,
        "counts": data.counts,
        "signatures": sig,
        **done.to_dict(),
        "runs": [{k: v for k, v in r.items() if k != "folder"} for r in results],
    }
    for folder in outs:
        (folder / "table.md").write_text(done.markdown, encoding="utf-8")
        (folder / "results.json").write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
    print(done.markdown)
    if pictures[0]:
        print(f"curves: {pictures[0]}")
    return record


def default_slots(threads: int) -> int:
    return max((os.cpu_count() or 1) // threads, 1)
