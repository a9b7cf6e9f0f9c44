"""``adl train``: train a model from .adl files on parallel text (the runtime does the work).

adl train ENC.adl DEC.adl --train data/train --langs en de --valid data/valid --out RUN
adl train ENC.adl DEC.adl --train corpus.tsv --valid valid.jsonl.gz --out RUN
adl train MODEL.adl ...          (one file defining encoder = and decoder =)
adl train JOINT.adl ...          (a joint model: *.joint.adl, or a file defining joint =)
adl train --resume --out RUN     (continue exactly where RUN stopped)
adl train --nproc 2 ...          (torchrun: 2 processes, DDP)
adl train --init-from RUN --train in-domain ... --out RUN2   (fine-tune RUN's model)

Train an ADL model on parallel data (two line-aligned text files, or one TSV or JSONL file;
gzip too), on CPU or GPU, with checkpoints in a run directory (docs/runtime.md).
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from ..roles import stem
from .common import UsageError, add_langs_option, add_set_option

HELP = "train a model on parallel text"


def arguments(p: argparse.ArgumentParser) -> None:
    """The arguments of ``adl train``."""
    from adl.runtime.config import presets  # yaml, not torch: --help lists them

    p.add_argument(
        "files",
        nargs="*",
        metavar="FILE.adl",
        help="ENC.adl DEC.adl, or MODEL.adl (encoder = and decoder =), or JOINT.adl",
    )
    p.add_argument(
        "--train",
        metavar="PREFIX|FILE",
        help="training data PREFIX.SRC / PREFIX.TGT (with --langs), or one file of pairs: "
        "FILE.tsv (source<TAB>target) or FILE.jsonl (.gz too)",
    )
    add_langs_option(p, "the data files")
    p.add_argument("--train-src", metavar="FILE", help="training source file")
    p.add_argument("--train-tgt", metavar="FILE", help="training target file")
    p.add_argument(
        "--valid",
        metavar="PREFIX|FILE",
        help="validation data PREFIX.SRC / PREFIX.TGT, or FILE.tsv / FILE.jsonl",
    )
    p.add_argument("--valid-src", metavar="FILE", help="validation source file")
    p.add_argument("--valid-tgt", metavar="FILE", help="validation target file")
    p.add_argument(
        "--preset",
        metavar="NAME|FILE",
        help=f"a preset of adl/runtime/presets ({', '.join(presets())}) or a YAML file",
    )
    add_set_option(
        p,
        "change a setting (repeatable), e.g. --set optim.lr=1e-3 "
        "--set max_steps=5000 --set model.vars.FF=1024",
    )
    p.add_argument("--out", metavar="DIR", help="run directory (default: runs/NAME)")
    p.add_argument(
        "--resume", action="store_true", help="continue the run in --out from checkpoints/last.pt"
    )
    p.add_argument(
        "--init-from",
        metavar="RUN|CHECKPOINT",
        help="start from the weights of a run (its best.pt) or a checkpoint file, with a fresh "
        "optimizer and schedule (fine-tuning); the .adl files, when given, must describe the "
        "same architecture",
    )
    p.add_argument(
        "--new-tokenizer",
        action="store_true",
        help="with --init-from: make a tokenizer (train one, or data.spm_model) instead of "
        "reusing the source run's",
    )
    p.add_argument("--compile", action="store_true", help="train through torch.compile")
    p.add_argument(
        "--nproc",
        type=int,
        default=1,
        metavar="N",
        help="train in N processes on this machine (torchrun, DDP)",
    )


def _out(args: argparse.Namespace) -> str:
    if args.out:
        return args.out
    if args.resume:
        raise UsageError("--resume needs --out RUN (the run to continue)")
    if not args.files and args.init_from:
        raise UsageError("--init-from without .adl files needs --out RUN (the new run)")
    if not args.files:
        raise UsageError("give the model's .adl files")
    return str(Path("runs") / stem(args.files[0]))


def run(args: argparse.Namespace) -> int:
    out = _out(args)
    if args.nproc < 1:
        raise UsageError("--nproc must be at least 1")
    from adl.runtime.run.configure import start_conflict

    conflict = start_conflict(args.resume, args.init_from, args.new_tokenizer)
    if conflict:
        raise UsageError(conflict)
    if not args.resume and not args.files and not args.init_from:
        raise UsageError("give the model's .adl files (or --resume --out RUN)")
    if len(args.files) > 2:
        raise UsageError("give at most two .adl files: ENC.adl DEC.adl")

    from adl import runtime
    from adl.runtime.run.configure import data_files

    train = data_files(args.train, args.langs, args.train_src, args.train_tgt, "train")
    valid = data_files(args.valid, args.langs, args.valid_src, args.valid_tgt, "valid")
    config = runtime.configure(
        args.files,
        preset=args.preset,
        sets=args.sets,
        train=train,
        valid=valid,
        resume_from=out if args.resume else None,
        compile=args.compile,
        init_from=args.init_from,
        new_tokenizer=args.new_tokenizer,
    )
    if args.nproc > 1 and "WORLD_SIZE" not in os.environ:
        return _launch(args.nproc, config, out, args.resume)
    try:
        summary = runtime.train(config, out, resume=args.resume)
    finally:
        from adl.runtime.training.distributed import teardown

        teardown()
    if os.environ.get("RANK", "0") == "0":  # one line, from the first of several processes
        print(summary.describe(config.train.best_metric))
    return 130 if summary.interrupted else 0


def _launch(nproc: int, config, out: str, resume: bool) -> int:
    """The checked configuration, trained in ``nproc`` processes (torchrun). This process
    holds the run's lock for them while they train (the workers see ADL_RUN_LOCK_PID)."""
    import tempfile

    from adl.runtime.rundir import LOCK_ENV, RunDir, RunLock
    from adl.runtime.training.distributed import launch

    run = RunDir(Path(out))
    if resume:
        run.require_checkpoints()
    with RunLock(run).acquire(create=not resume):
        os.environ[LOCK_ENV] = str(os.getpid())
        try:
            with tempfile.TemporaryDirectory(prefix="adl-train-") as tmp:
                path = Path(tmp) / "config.yaml"
                path.write_text(config.to_yaml(), encoding="utf-8")
                return launch(nproc, path, out, resume)
        finally:
            os.environ.pop(LOCK_ENV, None)
