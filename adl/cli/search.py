"""``adl search``: search a pair of spaces of programs with Optuna (the runtime does the work).

adl search ENC.space.adl DEC.space.adl --train data/train --valid data/valid --langs en fr
           --out runs/search/s1 --trials 40 [--hours 8] [--workers 2]
           [--objective bleu --objective params] [--pruner halving|hyperband|none]
           [--storage postgresql://...] [--executor slurm --slurm partition=gpu]
adl search ENC DEC ... --out runs/search/s1       the same again: continue the study
adl search report runs/search/s1 [--top 5]         the best programs (or the front), a picture
adl search confirm runs/search/s1 --test data/test [--top 3] [--seeds 3]   retrain with seeds

Search the programs of an encoder space and a decoder space (ADL files with choices, such as
{mh_dot_self_att | rnn} and repeat({2..6}, ...)) for the best validation BLEU, or a Pareto
front of BLEU and a cost; every trial is a run folder, the study an Optuna storage shared
by the workers (docs/search.md). Needs Optuna: pip install 'adl[search]'.
"""

from __future__ import annotations

import argparse

from .common import UsageError, add_set_option
from .sweep import ENGINES
from .sweep import _slurm as slurm_options  # the sweep's reading of --slurm KEY=VALUE

HELP = "search spaces of architectures with Optuna (pip install 'adl[search]')"


def arguments(p: argparse.ArgumentParser) -> None:
    """The arguments of ``adl search``."""
    p.add_argument(
        "words",
        nargs="+",
        metavar="ENC DEC | report FOLDER | confirm FOLDER",
        help="the encoder and decoder spaces (.adl files with choices); 'report FOLDER': the "
        "best programs and a picture; 'confirm FOLDER': retrain the best with seeds (adl sweep)",
    )
    p.add_argument("--out", metavar="DIR", help="the search folder (default runs/search/NAME)")
    p.add_argument("--train", metavar="PREFIX", help="training data PREFIX.SRC, PREFIX.TGT")
    p.add_argument("--valid", metavar="PREFIX", help="validation data (BLEU during training)")
    p.add_argument("--test", metavar="PREFIX", help="confirm: the test data")
    p.add_argument("--langs", nargs=2, metavar=("SRC", "TGT"), help="the data's suffixes")
    p.add_argument("--preset", default="demo", metavar="NAME|FILE", help="run preset (demo)")
    add_set_option(p, "a run setting of every trial (repeatable), e.g. --set optim.lr=1e-3")
    p.add_argument(
        "--objective",
        action="append",
        metavar="NAME",
        help="bleu (default), and optionally one cost for a Pareto front: params, speed "
        "(greedy decoding, against the space's first program), memory (training peak)",
    )
    p.add_argument("--steps", type=int, default=0, metavar="N", help="updates a trial at most")
    p.add_argument(
        "--valid-every", type=int, default=0, metavar="N", help="updates between validations"
    )
    p.add_argument(
        "--pruner", choices=("halving", "hyperband", "none"), default="halving", help="(halving)"
    )
    p.add_argument("--trials", type=int, default=0, metavar="N", help="trials that train")
    p.add_argument("--hours", type=float, default=0.0, metavar="H", help="stop starting trials")
    p.add_argument("--workers", type=int, default=1, metavar="N", help="workers at once (1)")
    p.add_argument("--threads", type=int, default=0, metavar="N", help="CPU threads a worker")
    p.add_argument("--executor", choices=ENGINES, default="local", help="where workers run")
    p.add_argument("--slurm", action="append", default=[], metavar="KEY=VALUE", help="submitit")
    p.add_argument(
        "--storage", metavar="URL", help="an Optuna storage URL (default: FOLDER/study.db)"
    )
    p.add_argument("--study", default="search", metavar="NAME", help="the study's name")
    p.add_argument("--seed", type=int, default=1, metavar="N", help="the trials' training seed")
    p.add_argument("--top", type=int, default=0, metavar="N", help="report/confirm: how many")
    p.add_argument("--seeds", type=int, default=3, metavar="N", help="confirm: seeds a program")
    p.add_argument("--jobs", type=int, default=1, metavar="N", help="confirm: runs at once")
    p.add_argument(
        "--baseline", nargs=2, metavar=("ENC", "DEC"), help="confirm: the baseline's files"
    )
    p.add_argument("--check", action="store_true", help="confirm: write and check, train nothing")


def run(args: argparse.Namespace) -> int:
    from pathlib import Path

    from adl.runtime import search

    words = args.words
    if words[0] in ("report", "confirm"):
        if len(words) != 2:
            raise UsageError(f"adl search {words[0]} takes one FOLDER")
        if words[0] == "report":
            found = search.report(words[1], storage=args.storage, top=args.top or 5)
            print(found.text, end="")
            print("\n".join(f"wrote {p}" for p in found.files))
            return 0
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
    spec = search.Spec.of(
        words[0],
        words[1],
        train=[f"{args.train}.{lang}" for lang in args.langs],
        valid=[f"{args.valid}.{lang}" for lang in args.langs],
        preset=args.preset,
        sets=list(args.sets),
        objectives=args.objective or ["bleu"],
        steps=args.steps,
        valid_every=args.valid_every,
        pruner=args.pruner,
        seed=args.seed,
        study=args.study,
    )
    out = Path(args.out) if args.out else Path("runs") / "search" / args.study
    done = search.run(
        spec,
        out,
        trials=args.trials,
        hours=args.hours,
        workers=args.workers,
        executor=args.executor,
        slurm=slurm_options(args.slurm),
        storage=args.storage,
        threads=args.threads,
    )
    print(
        f"{out}: {done['trials']} trials trained, {done['programs']} programs of "
        f"{done['size']:,} finished; adl search report {out}"
    )
    return 0
