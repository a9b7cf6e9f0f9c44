"""ADL beside Sockeye 3 and fairseq: one recipe, the same minutes, at the same time, seeds
and a paired test, and a recipe search run by every system alike.

    python bench/peers.py [--corpus DIR] [--minutes 15] [--peers sockeye,fairseq]
                          [--seeds 3] [--recipes FILE] [--preset small_cpu] [--out DIR]
                          [--results DIR]
    python bench/peers.py --tune [--grid dropout=0,0.1,0.3 --grid lr=1e-3,2e-3] ...
    python bench/peers.py --protocol bench/protocols/fresh.yaml [--dry-run]
                          [--rescore-reason TEXT]

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

``--protocol FILE`` runs a protocol written and committed before any of its test sets was
scored (bench/peerlib/protocol.py, protocol_run.py): its recipe search on the tuning corpora,
then each budget on each of its corpora, with the seeds, beams, selection rules and results
folders it names; an option it fixes cannot be given beside it. Every result records the
protocol's sha256. Every benchmark that scores a test set, with or without a protocol,
appends a line per run to the ledger (``--ledger``, default docs/results/peers/ledger.jsonl,
bench/peerlib/ledger.py), and refuses to score a test set the ledger shows scored under
another protocol unless ``--rescore-reason TEXT`` says why (the ledger keeps it).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from peerlib import bench, report, systems, tune  # noqa: E402
from peerlib.base import read_lines  # noqa: E402
from peerlib.bench import (  # noqa: E402, F401  (the names the tests and callers know)
    ROOT,
    SETTINGS,
    Options,
    bible_corpus,
    check_settings,
    plan_rounds,
    shown,
)
from peerlib.ledger import Ledger, Refused, Scoring  # noqa: E402
from peerlib.prepare import find_files  # noqa: E402
from peerlib.protocol import FIXED, sha256_of  # noqa: E402
from peerlib.stats import VERDICT  # noqa: E402

LEDGER = ROOT / "docs" / "results" / "peers" / "ledger.jsonl"


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
        "--own-practice",
        action="store_true",
        help="also test each peer's own choice of model (its averaging, its best checkpoint)",
    )
    p.add_argument(
        "--keep-checkpoints", action="store_true", help="keep every peer checkpoint file"
    )
    p.add_argument("--dry-run", action="store_true", help="print the training commands only")
    p.add_argument(
        "--protocol",
        type=Path,
        metavar="FILE",
        help="run a protocol file (bench/protocols/): every stage it names, nothing else",
    )
    p.add_argument(
        "--rescore-reason",
        metavar="TEXT",
        help="score a test set the ledger shows scored under another protocol; kept in it",
    )
    p.add_argument("--ledger", type=Path, default=LEDGER, help="the ledger of test-set scorings")
    p.add_argument(
        "--update-doc",
        type=Path,
        metavar="FILE",
        help="train nothing: rewrite every '<!-- peers ... -->' block of FILE from the "
        "committed results and the ledger",
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
    if args.protocol:
        return protocol(p, args)
    if args.update_doc:
        from peerlib.docs import update_doc

        changed = update_doc(args.update_doc, ROOT)
        print(
            f"{args.update_doc}: " + (f"updated {', '.join(changed)}" if changed else "up to date")
        )
        return 0
    if args.restate:
        return restate(p, args)
    device = args.device
    if device == "auto":
        import torch

        device = "cuda" if torch.cuda.is_available() else "cpu"
    corpus = args.corpus or bible_corpus(args.cache)
    name = corpus.resolve().name + ("-tune" if args.tune else "")
    o = Options(
        corpus=corpus,
        out=(args.out or ROOT / "runs" / "peers" / name).resolve(),
        langs=tuple(args.langs) if args.langs else None,
        minutes=args.minutes,
        peers=peers,
        seeds=args.seeds,
        recipes=args.recipes,
        tune=args.tune,
        grid=grid,
        preset=args.preset,
        sets=[*args.sets, f"train.threads={args.threads}"],
        results=args.results,
        cache=args.cache,
        threads=args.threads,
        slots=args.slots or bench.default_slots(args.threads),
        device=device,
        beams=[1, args.beam] if args.beam > 1 else [1],
        own=args.own_practice,
        keep_checkpoints=args.keep_checkpoints,
        dry_run=args.dry_run,
        ledger=args.ledger,
        rescore_reason=args.rescore_reason,
    )
    try:
        done = bench.run(o)
    except (OSError, KeyError) as exc:
        p.error(f"--recipes: {exc}")
    except Refused as exc:
        p.error(str(exc))
    except ValueError as exc:
        p.error(str(exc))
    if done is None or not args.tune:
        return 0
    write_search(o, done, corpus)
    return 0


def write_search(o: Options, done: dict, corpus: Path) -> None:
    """A grid search's recipes file and table, in ``out`` and the kept folder."""
    names = ["adl", *o.peers]
    labels = {n: systems.SYSTEMS[n].label for n in names}
    base = done["base"]
    found = tune.choose(done["results"], o.grid)
    about = {
        "corpus": shown(corpus),
        "minutes": o.minutes,
        "seeds": done["seeds"],
        "grid": o.grid,
        "metric": base.best_metric,
        "preset": o.preset,
    }
    md = "\n".join(
        [
            f"### Recipe search on {corpus.resolve().name}",
            "",
            *tune.markdown(found, labels, base.best_metric),
        ]
    )
    for folder in [o.out, *([o.results.resolve()] if o.results else [])]:
        tune.write(folder / "recipes.json", found, about)
        (folder / "table.md").write_text(md + "\n", encoding="utf-8")
    print(md)
    print(f"-> {o.out / 'recipes.json'} (give it to --recipes)")


def protocol(p: argparse.ArgumentParser, args: argparse.Namespace) -> int:
    """``--protocol FILE``: refuse what contradicts it, then run it."""
    from peerlib.protocol import load
    from peerlib.protocol_run import run_protocol

    given = sorted(d for d in FIXED if getattr(args, d) != p.get_default(d))
    given += ["--ledger"] if args.ledger != LEDGER else []
    given += ["--update-doc"] if args.update_doc else []
    if given:
        flags = ", ".join(g if g.startswith("--") else "--" + g.replace("_", "-") for g in given)
        p.error(f"--protocol fixes what {flags} would set: run it alone (or with --dry-run)")
    try:
        found = load(args.protocol, ROOT)
    except (OSError, ValueError, KeyError) as exc:
        p.error(f"--protocol {args.protocol}: {exc}")
    try:
        return run_protocol(found, args.cache, args.dry_run, args.rescore_reason)
    except (Refused, ValueError) as exc:
        p.error(str(exc))


def restate(p: argparse.ArgumentParser, args: argparse.Namespace) -> int:
    """``--restate DIR``: the tables again from the kept translations; a ledger line."""
    if not args.corpus:
        p.error("--restate needs --corpus: the test references its runs were scored on")
    files = find_files(args.corpus, tuple(args.langs) if args.langs else None)
    record = json.loads((args.restate / "results.json").read_text(encoding="utf-8"))
    found = Scoring(
        corpus=Path(record["corpus"]).name,
        test_sha256=sha256_of(files["test"][1]),
        protocol=(record.get("protocol") or {}).get("file"),
        protocol_sha256=(record.get("protocol") or {}).get("sha256"),
        stage=(record.get("protocol") or {}).get("stage"),
        reason=args.rescore_reason,
    )
    ledger = Ledger(args.ledger, ROOT)
    try:
        ledger.check(found)
    except Refused as exc:
        p.error(str(exc))
    done = report.restate(args.restate, read_lines(files["test"][1]), VERDICT)
    ledger.record(found, f"restated from the kept translations ({shown(args.restate)})")
    print(done.markdown)
    return 0


if __name__ == "__main__":
    sys.exit(main())
