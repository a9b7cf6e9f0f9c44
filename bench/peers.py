"""ADL beside Sockeye 3 and fairseq: one recipe, the same minutes, at the same time, seeds
and a paired test, and a recipe search run by every system alike.

    python bench/peers.py [--corpus DIR] [--minutes 15] [--peers sockeye,fairseq]
                          [--seeds 3] [--recipes FILE] [--preset small_cpu] [--out DIR]
                          [--results DIR]
    python bench/peers.py --tune [--grid dropout=0,0.1,0.3 --grid lr=1e-3,2e-3] ...

1. The corpus (default: the bundled Bible corpus, English-French verses of at most 20 words,
   as in ``adl demo``; ``--corpus`` takes any folder of train/valid/test files) gets one
   sentencepiece model, trained once for all systems, one length filter, and the validation
   sample every system's checkpoints are scored on (bench/peerlib/prepare.py).
2. Every system trains with the recipe of the ADL preset (sizes, batch, peak learning rate,
   warm-up, betas, label smoothing, clipping, validation interval, length limits), written
   in each toolkit's terms with each peer's own practice where the recipe leaves it open
   (bench/peerlib/sockeye_system.py, fairseq_system.py: every flag with its source), and
   with the settings a recipe search chose for that system (``--recipes``). One process and
   ``--threads`` threads each, never more processes than ``--slots`` (default: cores /
   threads); when the slots cannot hold every system at once, ADL runs in every round beside
   its peers, and each peer is compared with the ADL runs it trained beside. One clock for
   all: from the start of the first update (bench/peerlib/launch/peerclock.py).
3. Each run's model is chosen on the validation sample by one rule for all, after the
   clock: the best checkpoint, or the average of the last checkpoints when it scores higher
   (ADL's ``train.average_last`` rule; bench/peerlib/selection.py). On the clock every
   system validates only its loss. The chosen model translates the whole test set, greedy
   and with a beam of ``--beam``; sacrebleu scores every test line.
4. ``--seeds N`` runs every system N times (seeds 1..N); the report gives mean ± std per
   system and ADL against each peer with sacrebleu's paired bootstrap on the concatenated
   outputs of the seeds (a lead with p >= 0.05 is a tie), in ``OUT/table.md`` and
   ``OUT/results.json``, and the validation curves against wall-clock and target tokens
   in ``OUT/curves.png``.

``--tune`` runs the recipe search instead (bench/peerlib/tune.py): every system trains
every cell of ``--grid``; each keeps its best by validation score; ``OUT/recipes.json`` is
what ``--recipes`` reads on the test corpora. A finished run (``result.json`` in its
folder) is never run again: an interrupted benchmark or search continues where it stopped
when started again with the same options; with ``--results DIR`` (a folder git tracks) it
continues on another machine too, from the results and translations each run kept there
(bench/peerlib/kept.py). The peers' virtualenvs are made once under
``--cache`` (bench/peerlib/venvs.py). ``--dry-run`` prints the training commands.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import shlex
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from peerlib import recipe as recipe_mod  # noqa: E402
from peerlib import report, systems, table, tune, venvs  # noqa: E402
from peerlib.base import Data, read_lines  # noqa: E402
from peerlib.kept import Kept  # noqa: E402
from peerlib.prepare import find_files, prepare  # noqa: E402
from peerlib.recipe import Recipe  # noqa: E402
from peerlib.runs import Job, run_rounds  # noqa: E402
from peerlib.stats import VERDICT  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
SETTINGS = "benchmark.json"  # what a benchmark folder was started with


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
    resolved = path.resolve()
    return str(resolved.relative_to(ROOT)) if resolved.is_relative_to(ROOT) else str(path)


class Factory:
    """Systems for jobs: each with its recipe (the search's choice, the seed) and python."""

    def __init__(self, base: Recipe, chosen: dict, data: Data, device: str, venv: dict):
        self.base, self.chosen, self.data, self.device, self.venv = base, chosen, data, device, venv

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
    ) -> Job:
        r = self.recipe(name, seed, settings)
        system = systems.make(name, r, self.data, out, self.device, self.venv.get(name))
        return Job(system, seed, group, minutes, beams, dict(settings or {}), keep)


def bench_rounds(
    f: Factory,
    rounds: list[list[str]],
    seeds: list[int],
    out: Path,
    minutes: float,
    beams: list[int],
    keep: bool,
) -> list[list[Job]]:
    """Seed by seed (a stopped benchmark has whole seeds), each round's systems together."""
    found = []
    for seed in seeds:
        for names in rounds:
            group = "+".join(names)
            folder = out / "runs" / group / f"seed{seed}"
            jobs = [f.job(n, seed, group, folder / n, minutes, beams, keep=keep) for n in names]
            found.append(jobs)
    return found


def tune_rounds(
    f: Factory,
    names: list[str],
    grid: dict,
    seeds: list[int],
    out: Path,
    minutes: float,
    slots: int,
) -> list[list[Job]]:
    """Every system x cell x seed, ``slots`` jobs at a time."""
    jobs = []
    for seed in seeds:
        for cell in tune.cells(grid):
            folder = out / "tune" / tune.cell_name(cell) / f"seed{seed}"
            group = tune.cell_name(cell)
            jobs += [f.job(n, seed, group, folder / n, minutes, [], cell) for n in names]
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


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--corpus", type=Path, help="folder of train/valid/test files (default: Bible)")
    p.add_argument("--langs", nargs=2, metavar=("SRC", "TGT"), help="the corpus' file suffixes")
    p.add_argument("--minutes", type=float, default=15.0, help="training minutes per run")
    p.add_argument("--peers", default="sockeye,fairseq", help="sockeye, fairseq, torch")
    p.add_argument("--seeds", type=int, default=1, help="runs per system (seeds 1..N)")
    p.add_argument(
        "--recipes",
        type=Path,
        action="append",
        default=[],
        metavar="FILE",
        help="a --tune run's recipes file; given again, the searches are pooled",
    )
    p.add_argument("--tune", action="store_true", help="run the recipe search on this corpus")
    p.add_argument(
        "--grid",
        action="append",
        default=[],
        metavar="NAME=V1,V2",
        help="a recipe field and its values (--tune; default dropout=0,0.1,0.3 lr=1e-3,2e-3)",
    )
    p.add_argument("--preset", default="small_cpu", help="the ADL preset every system follows")
    p.add_argument("--set", action="append", default=[], dest="sets", metavar="KEY=VALUE")
    p.add_argument("--out", type=Path, help="output folder (default runs/peers/CORPUS)")
    p.add_argument(
        "--results",
        type=Path,
        metavar="DIR",
        help="keep each finished run's result and translations, and the tables, in DIR too "
        "(a folder git tracks): started again elsewhere, the benchmark continues from them",
    )
    p.add_argument("--cache", type=Path, default=ROOT / "data" / "cache" / "peers")
    p.add_argument("--threads", type=int, default=1, help="threads per process")
    p.add_argument("--slots", type=int, help="processes at once (default cores / threads)")
    p.add_argument("--device", default="auto", help="auto, cpu or cuda")
    p.add_argument("--beam", type=int, default=4)
    p.add_argument(
        "--keep-checkpoints", action="store_true", help="keep every peer checkpoint file"
    )
    p.add_argument("--dry-run", action="store_true", help="print the training commands only")
    p.add_argument(
        "--update-doc",
        type=Path,
        metavar="FILE",
        help="train nothing: rewrite every '<!-- peers pairs DIR -->' block of FILE from "
        "DIR/results.json",
    )
    p.add_argument(
        "--restate",
        type=Path,
        metavar="DIR",
        help="train nothing: make the tables of the kept benchmark DIR again with today's "
        "test, from its runs' translations and --corpus's test references",
    )
    return p


def main(argv: list[str] | None = None) -> int:
    p = parser()
    args = p.parse_args(argv)
    peers = [x for x in args.peers.split(",") if x]
    unknown = [x for x in peers if x not in systems.SYSTEMS or x == "adl"]
    if unknown:
        p.error(f"unknown peer(s) {', '.join(unknown)}; peers: sockeye, fairseq, torch")
    if args.seeds < 1:
        p.error("--seeds must be at least 1")
    if args.tune and args.recipes:
        p.error("--tune searches the recipes that --recipes reads: give one of them")
    try:
        grid = tune.parse_grid(args.grid) if args.grid else dict(tune.DEFAULT_GRID)
    except ValueError as exc:
        p.error(str(exc))
    if args.update_doc:
        from peerlib.docs import update_doc

        changed = update_doc(args.update_doc, ROOT)
        print(
            f"{args.update_doc}: " + (f"updated {', '.join(changed)}" if changed else "up to date")
        )
        return 0
    if args.restate:
        if not args.corpus:
            p.error("--restate needs --corpus: the test references its runs were scored on")
        files = find_files(args.corpus, tuple(args.langs) if args.langs else None)
        done = report.restate(args.restate, read_lines(files["test"][1]), VERDICT)
        print(done.markdown)
        return 0
    device = args.device
    if device == "auto":
        import torch

        device = "cuda" if torch.cuda.is_available() else "cpu"
    slots = args.slots or max((os.cpu_count() or 1) // args.threads, 1)
    corpus = args.corpus or bible_corpus(args.cache)
    name = corpus.resolve().name + ("-tune" if args.tune else "")
    out = (args.out or ROOT / "runs" / "peers" / name).resolve()
    sets = [*args.sets, f"train.threads={args.threads}"]
    config = recipe_mod.configure(
        [str(ROOT / f) for f in recipe_mod.ARCH], preset=args.preset, sets=sets
    )
    base = recipe_mod.from_config(config, args.preset, sets)
    try:
        pooled = tune.pool(*args.recipes) if args.recipes else {}
    except (OSError, ValueError, KeyError) as exc:
        p.error(f"--recipes: {exc}")
    chosen = tune.settings(pooled)
    beams = [1, args.beam] if args.beam > 1 else [1]
    seeds = [base.seed + i for i in range(args.seeds)]
    settings = {
        "corpus": shown(corpus),
        "preset": args.preset,
        "sets": sets,
        "minutes": args.minutes,
        "peers": peers,
        "device": device,
        "slots": slots,
        "beams": beams,
        "recipes": chosen,
        "grid": grid if args.tune else None,
    }
    if not args.dry_run:
        check_settings(out, settings)
        if args.results:
            check_settings(args.results.resolve(), settings)

    files = find_files(corpus, tuple(args.langs) if args.langs else None)
    print(f"corpus {corpus}: preparing one sentencepiece model and the pieces -> {out}/data")
    data = prepare(files, out / "data", base, config.data)
    c = data.counts
    print(
        f"  train {c['train']:,} pairs ({c['dropped']:,} over the length filter dropped, "
        f"{c['dropped_tokens_percent']:g} % of the target tokens), valid {c['valid']:,} "
        f"(sample of {c['sample']:,} scored), test {c['test']:,}"
    )
    venv = {}
    for name in peers:
        if name in venvs.RECIPES:
            venv[name] = args.cache / name if args.dry_run else venvs.ensure(name, args.cache)
    f = Factory(base, chosen, data, device, venv)
    if len(args.recipes) > 1:
        labels = {n: systems.SYSTEMS[n].label for n in pooled if n in systems.SYSTEMS}
        print(f"recipes pooled over {len(args.recipes)} searches (per-corpus means → mean):")
        print("\n".join(tune.pooled_markdown(pooled, labels)))
    for name in ["adl", *peers] if chosen else []:
        found = tune.cell_name(chosen[name]) if name in chosen else "the preset's (not searched)"
        print(f"  {systems.SYSTEMS[name].label}: {found}")
    names = ["adl", *peers]
    if args.tune:
        rounds = tune_rounds(f, names, grid, seeds, out, args.minutes, slots)
    else:
        rounds = bench_rounds(
            f, plan_rounds(peers, slots), seeds, out, args.minutes, beams, args.keep_checkpoints
        )
    todo = sum(1 for jobs in rounds if any(not j.finished() for j in jobs))
    print(
        f"{len(rounds)} rounds of {args.minutes:g} minutes ({todo} to run), {slots} processes "
        f"at once, {args.threads} thread(s) each, on {device}; after its clock, each run's "
        "checkpoints are validated" + ("" if args.tune else " and its test set translated")
    )
    if args.dry_run:
        for i, jobs in enumerate(rounds, 1):
            for j in jobs:
                for step in [*j.system.prepare(), j.system.train(args.minutes)]:
                    print(f"# round {i}, {j.system.label}, seed {j.seed}, {step.name}")
                    print(shlex.join(step.argv))
        return 0
    kept = Kept(args.results.resolve(), out) if args.results else None
    if kept:
        every = [j for jobs in rounds for j in jobs]
        try:
            kept.check(every)
        except ValueError as exc:
            p.error(f"--results: {exc}")
        restored = kept.restore(every)
        if restored:
            print(f"{restored} finished runs copied back from {shown(kept.root)}")
    results = run_rounds(rounds, args.threads, on_finish=kept.keep if kept else None)
    outs = [out, *([kept.root] if kept else [])]  # where the tables go
    labels = {n: systems.SYSTEMS[n].label for n in names}
    if args.tune:
        found = tune.choose(results, grid)
        about = {
            "corpus": shown(corpus),
            "minutes": args.minutes,
            "seeds": seeds,
            "grid": grid,
            "metric": base.best_metric,
            "preset": args.preset,
        }
        for folder in outs:
            tune.write(folder / "recipes.json", found, about)
        md = "\n".join(
            [
                f"### Recipe search on {corpus.resolve().name}",
                "",
                *tune.markdown(found, labels, base.best_metric),
            ]
        )
        for folder in outs:
            (folder / "table.md").write_text(md + "\n", encoding="utf-8")
        print(md)
        print(f"-> {out / 'recipes.json'} (give it to --recipes)")
        return 0
    refs = read_lines(data.raw["test"][1])
    sig = table.signatures()
    notes = describe(base, chosen, corpus, data, args.minutes, args.threads, slots, device, sig)
    title = f"Peers on {corpus.resolve().name}"
    done = report.report(results, beams, refs, title, notes)
    picture = report.draw_curves(results, out / "curves.png", title)
    record = {
        **settings,
        "recipe": base.to_dict(),
        "seeds": seeds,
        "counts": c,
        "signatures": sig,
        **done.to_dict(),
        "runs": [{k: v for k, v in r.items() if k != "folder"} for r in results],
    }
    for folder in outs:
        (folder / "table.md").write_text(done.markdown, encoding="utf-8")
        (folder / "results.json").write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
    print(done.markdown)
    if picture:
        print(f"curves: {picture}")
    return 0


def describe(
    r: Recipe,
    chosen: dict,
    corpus: Path,
    data: Data,
    minutes: float,
    threads: int,
    slots: int,
    device: str,
    sig: dict,
) -> list[str]:
    """The notes under the tables: what was run."""
    c = data.counts
    source, target = data.positions(r)
    tuned = "; ".join(f"{n}: {tune.cell_name(s)}" for n, s in chosen.items()) or "none"
    return [
        f"corpus {corpus}: {c['train']:,} training pairs ({c['dropped']:,} dropped by the "
        f"length filter, max_len {r.max_len}: {c['dropped_tokens_percent']:g} % of the target "
        f"tokens), {c['valid']:,} validation ({c['sample']:,} in the sample every "
        f"checkpoint is scored on), {c['test']:,} test; one {r.vocab:,}-piece sentencepiece "
        "model for all",
        f"recipe of ADL's preset {r.preset}: d_model {r.d_model}, {r.layers}+{r.layers} "
        f"blocks, FFN {r.ffn}, {r.heads} heads, dropout {r.dropout:g}, batches of "
        f"{r.max_tokens:,} tokens, Adam {r.betas}, peak learning rate {r.lr:g} after "
        f"{r.warmup} warm-up updates then inverse square root, label smoothing "
        f"{r.label_smoothing:g}, clipping {r.clip_norm:g}, a checkpoint every {r.valid_every} "
        f"updates; recipe search's settings per system: {tuned}",
        f"the tested model of every run: its best checkpoint by validation {r.best_metric}, or "
        f"the average of its last 2 to {r.average_last} checkpoints when that scores higher "
        "('avg A–B' under tested); every system validates only its loss on its clock, and "
        "its checkpoints are translated and scored after the clock (not counted)",
        f"translations of at most {r.len_a:g} x source + {r.len_b} pieces; no input is cut "
        f"(the peers' models take {source} source and {target} target positions)",
        f"{minutes:g} minutes of training each from its first update, {threads} thread(s) per "
        f"process, {slots} processes at once on {device}; systems of one round ran at the "
        "same time",
        f"BLEU {sig['bleu']}; chrF {sig['chrf']}; {VERDICT}",
    ]


if __name__ == "__main__":
    sys.exit(main())
