"""``adl search``: search a pair of spaces of programs with Optuna (the runtime does the work).

adl search ENC.space.adl DEC.space.adl --train data/train --valid data/valid --langs en fr
           --out runs/search/s1 --trials 40 [--hours 8] [--study-hours 16] [--workers 2]
           [--objective bleu --objective params] [--pruner halving|hyperband|none]
           [--storage postgresql://...] [--executor slurm --slurm partition=gpu]
adl search ENC DEC ... --out runs/search/s1       the same again: continue the study
adl search report runs/search/s1 [--top 5]         the best programs (or the front), a picture
adl search report --update-doc docs/search.md      the document's blocks of reports, regenerated
adl search confirm runs/search/s1 --test data/test [--top 3] [--seeds 3]   retrain with seeds

Search the programs of an encoder space and a decoder space (ADL files with choices, such as
{mh_dot_self_att | rnn} and repeat({2..6}, ...)) for the best validation BLEU, or a Pareto
front of BLEU and a cost; every trial is a run folder, the study an Optuna storage shared
by the workers (docs/search.md). Needs Optuna: pip install 'adl[search]'.
"""

from __future__ import annotations

import argparse

from .common import UsageError, add_langs_option, add_set_option
from .sweep import ENGINES
from .sweep import _slurm as slurm_options  # the sweep's reading of --slurm KEY=VALUE

HELP = "search spaces of architectures with Optuna (pip install 'adl[search]')"


# The options, one a line: FLAG METAVAR [TYPE DEFAULT] | help
OPTIONS = """
--out DIR | the search folder (default runs/search/NAME)
--train PREFIX | training data PREFIX.SRC, PREFIX.TGT
--valid PREFIX | validation data (BLEU during training)
--test PREFIX | confirm: the test data
--preset NAME|FILE str demo | run preset (demo)
--steps N int 0 | updates a trial at most (default: the preset's)
--valid-every N int 0 | updates between validations, the pruner's rungs
--trials N int 0 | trials that train, in the whole study
--hours H float 0 | no trial starts after this many hours of this command
--study-hours H float 0 | no trial starts once the study's trials have taken H hours in all, over every command and worker (the report's hours)
--workers N int 1 | workers at once (1)
--threads N int 0 | CPU threads of a worker (default: the CPUs / workers)
--storage URL | an Optuna storage URL (default FOLDER/study.db)
--study NAME str search | the study's name
--seed N int 1 | the trials' training seed
--top N int 0 | report/confirm: how many programs
--seeds N int 3 | confirm: seeds a program
--jobs N int 1 | confirm: runs at once
--update-doc FILE | report: rewrite every '<!-- adl search report FOLDER -->' block of FILE (FOLDER relative to FILE)
"""
WORDS = "ENC DEC | report FOLDER | confirm FOLDER"
WORDS_HELP = (
    "the encoder and decoder spaces (.adl files with choices); 'report FOLDER': the best "
    "programs and a picture; 'confirm FOLDER': retrain the best with seeds (adl sweep)"
)
KINDS = {"int": int, "float": float, "str": str}


def arguments(p: argparse.ArgumentParser) -> None:
    """The arguments of ``adl search``."""
    p.add_argument("words", nargs="+", metavar=WORDS, help=WORDS_HELP)
    for line in OPTIONS.strip().splitlines():
        head, _, text = line.partition(" | ")
        flag, metavar, *typed = head.split()
        kind = KINDS[typed[0]] if typed else str
        default = kind(typed[1]) if typed else None
        p.add_argument(flag, type=kind, default=default, metavar=metavar, help=text)
    add_langs_option(p, "the data files")
    p.add_argument("--baseline", nargs=2, metavar=("ENC", "DEC"), help="confirm: its baseline")
    p.add_argument("--check", action="store_true", help="confirm: write and check only")
    p.add_argument("--executor", choices=ENGINES, default="local", help="where workers run")
    p.add_argument("--slurm", action="append", default=[], metavar="KEY=VALUE", help="submitit")
    p.add_argument("--pruner", choices=("halving", "hyperband", "none"), default="halving")
    p.add_argument("--objective", action="append", metavar="NAME", help=OBJECTIVE_HELP)
    add_set_option(p, "a run setting of every trial (repeatable), e.g. --set optim.lr=1e-3")


OBJECTIVE_HELP = (
    "bleu (default), and optionally one cost for a Pareto front: params, speed (greedy "
    "decoding, against the space's first program), memory (training peak)"
)


def run(args: argparse.Namespace) -> int:
    from pathlib import Path

    from adl.runtime import search

    words = args.words
    if words == ["report"] and args.update_doc:
        return _update_doc(args.update_doc)
    if words[0] in ("report", "confirm"):
        if len(words) != 2:
            raise UsageError(f"adl search {words[0]} takes one FOLDER")
        if words[0] == "report":
            found = search.report(words[1], storage=args.storage, top=args.top or 5)
            print(found.text, end="")
            print("\n".join(f"wrote {p}" for p in found.files))
            return _update_doc(args.update_doc) if args.update_doc else 0
        if not args.test or not args.langs:
            raise UsageError("adl search confirm needs --test PREFIX and --langs SRC TGT")
        search.confirm(
            words[1],
            test=args.test,
            top=args.top or 3,
            seeds=args.seeds,
            baseline=tuple(args.baseline) if args.baseline else None,
            jobs=args.jobs,
            executor=args.executor,
            storage=args.storage,
            check=args.check,
        )
        return 0
    if len(words) != 2:
        raise UsageError("give the encoder and the decoder spaces: adl search ENC DEC")
    if not (args.train and args.valid and args.langs):
        raise UsageError("a search trains: give --train PREFIX --valid PREFIX --langs SRC TGT")
    settings = {"preset": args.preset, "sets": list(args.sets), "pruner": args.pruner}
    settings |= {"steps": args.steps, "valid_every": args.valid_every, "seed": args.seed}
    settings |= {"objectives": args.objective or ["bleu"], "study": args.study}
    data = {
        s: [f"{prefix}.{lang}" for lang in args.langs]
        for s, prefix in (("train", args.train), ("valid", args.valid))
    }
    spec = search.Spec.of(words[0], words[1], **data, **settings)
    out = Path(args.out) if args.out else Path("runs") / "search" / args.study
    budget = {"trials": args.trials, "hours": args.hours, "study_hours": args.study_hours}
    budget["workers"] = args.workers
    where = {"executor": args.executor, "storage": args.storage, "threads": args.threads}
    done = search.run(spec, out, **budget, **where, slurm=slurm_options(args.slurm))
    trained, finished, size = done["trials"], done["programs"], done["size"]
    print(f"{out}: {trained} trials trained, {finished} of {size:,} programs finished")
    return 0


def _update_doc(path: str) -> int:
    from adl.runtime.search.report import update_doc

    changed = update_doc(path)
    print(f"{path}: " + (f"updated {', '.join(changed)}" if changed else "up to date"))
    return 0
