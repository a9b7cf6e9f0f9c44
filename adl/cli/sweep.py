"""``adl sweep``: a paper's comparison as one command (the runtime does the work).

adl sweep SPEC.yaml [--out DIR] [--jobs N]      train what is not finished, write the table
adl sweep you2020                                a bundled spec (adl/runtime/sweeps/)
adl sweep SPEC.yaml --check                      check the spec, say what would run
adl sweep fonollosa2019 --systems TRANSFORMER,LOCAL-JOINT   only these systems' runs
adl sweep SPEC.yaml --status  (or a sweep folder)  which runs are done, running, failed, why
adl sweep SPEC.yaml --executor slurm --slurm partition=dev --slurm gpus_per_node=1
adl sweep you2020 --preset paper --data DIR       the paper's scale on your corpus
adl sweep report SPEC [--results DIR]            the table from the committed result files
adl sweep report SPEC --pictures DIR             and its pictures, drawn into DIR
adl sweep report --update-doc docs/experiments.md   rewrite a document's report blocks
adl sweep curves SPEC [--results DIR]            the validations during training, from those files

Train every (system, seed) of a sweep spec that is not finished yet, then write the table
(results.md, .csv, .json) with BLEU and chrF over seeds, a paired significance test against
the baseline and the cost columns, and pictures (docs/experiments.md).
"""

from __future__ import annotations

import argparse

from .common import UsageError, add_langs_option

HELP = "train and compare several systems over seeds (a paper's table)"

ENGINES = ("local", "slurm", "submitit-local")


def arguments(p: argparse.ArgumentParser) -> None:
    """The arguments of ``adl sweep``."""
    p.add_argument(
        "spec",
        metavar="SPEC",
        nargs="*",
        help="a spec file, a bundled spec's name (you2020, xu2020, ...), or a sweep folder; "
        "'report SPEC': the table from the result files alone; 'curves SPEC': the "
        "validations during training, from the same files",
    )
    p.add_argument(
        "--results",
        metavar="DIR",
        help="where the result files are kept (default: docs/results of the source tree for "
        "a bundled spec, else OUT/results)",
    )
    p.add_argument(
        "--update-doc",
        metavar="FILE",
        help="with report: rewrite every '<!-- adl sweep report SPEC -->' block of FILE",
    )
    p.add_argument(
        "--pictures",
        metavar="DIR",
        help="with report SPEC: also draw the sweep's pictures (bleu.png, bleu_speed.png, a "
        "regime's regime-SYSTEM.png) from the result files into DIR",
    )
    p.add_argument("--out", metavar="DIR", help="the sweep folder (default runs/sweeps/NAME)")
    p.add_argument("--jobs", type=int, default=1, metavar="N", help="runs at once (default 1)")
    p.add_argument(
        "--systems",
        metavar="A,B",
        help="train only these systems' runs (the seeds each gets decided as for the whole "
        "spec), or a regime's rows (BASE@1405); the table is the whole spec's",
    )
    p.add_argument(
        "--executor",
        choices=ENGINES,
        default="local",
        help="local processes (default), Slurm through submitit, or submitit's local executor",
    )
    p.add_argument(
        "--slurm",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a submitit/Slurm option (repeatable), e.g. partition=dev, gpus_per_node=1, "
        "timeout_min=600",
    )
    p.add_argument(
        "--preset",
        metavar="NAME",
        help="train at another scale: 'paper' (the spec's paper_scale: the paper's preset, "
        "updates and depths) or a preset's name",
    )
    p.add_argument(
        "--data",
        metavar="DIR",
        help="train on your corpus instead of the spec's: DIR/{train,valid,test}.{SRC,TGT} "
        "(adl data files writes one from fairseq's prepare-iwslt14.sh output)",
    )
    add_langs_option(p, "the --data folder's files")
    what = p.add_mutually_exclusive_group()
    what.add_argument(
        "--status", action="store_true", help="show which runs are done, running, failed, why"
    )
    what.add_argument(
        "--check", action="store_true", help="check the spec and say what would run; train nothing"
    )


def _slurm(items: list[str]) -> dict:
    import yaml

    options = {}
    for item in items:
        key, eq, value = item.partition("=")
        if not eq or not key.strip():
            raise UsageError(f"--slurm takes KEY=VALUE, not {item!r}")
        try:
            options[key.strip()] = yaml.safe_load(value)
        except yaml.YAMLError:
            options[key.strip()] = value
    return options


def run(args: argparse.Namespace) -> int:
    from adl.runtime import sweep

    words = list(args.spec)
    if words[:1] == ["report"]:
        return _report(words[1:], args)
    if args.update_doc or args.pictures:
        raise UsageError("--update-doc and --pictures go with 'adl sweep report'")
    if words[:1] == ["curves"]:
        return _curves(words[1:], args.results)
    if len(words) != 1:
        raise UsageError("give one SPEC (or: adl sweep report SPEC, adl sweep curves SPEC)")
    if args.preset or args.data:
        from pathlib import Path

        from adl.runtime.sweep.variant import derive

        where = Path(args.out) if args.out else Path("runs") / "sweeps" / "variants"
        langs = tuple(args.langs) if args.langs else None
        derived = derive(words[0], where, args.preset, args.data, langs)
        print(
            f"{derived}: {words[0]} at preset {args.preset or 'its own'} on {args.data or 'its data'}"
        )
        words = [str(derived)]
    if args.status:
        print(sweep.status(words[0], args.out, args.results).render(), end="")
        return 0
    sweep.sweep(
        words[0],
        args.out,
        jobs=args.jobs,
        executor=args.executor,
        slurm=_slurm(args.slurm),
        check=args.check,
        results=args.results,
        systems=[n.strip() for n in args.systems.split(",")] if args.systems is not None else None,
    )
    return 0


def _report(specs: list[str], args: argparse.Namespace) -> int:
    from adl.runtime.sweep.report import report, update_doc

    if args.update_doc:
        if specs or args.pictures:
            raise UsageError(
                "--update-doc rewrites every block of the file: give no SPEC (nor --pictures)"
            )
        changed = update_doc(args.update_doc, args.results)
        print(
            f"{args.update_doc}: " + (f"updated {', '.join(changed)}" if changed else "up to date")
        )
        return 0
    if len(specs) != 1:
        raise UsageError("adl sweep report takes one SPEC")
    if not args.pictures:
        print(report(specs[0], args.results), end="")
        return 0
    from adl.runtime.sweep.report import report_and_pictures

    text, drawn = report_and_pictures(specs[0], args.pictures, args.results)
    print(text, end="")
    for path in drawn:
        print(f"picture: {path}")
    return 0


def _curves(specs: list[str], results: str | None) -> int:
    from adl.runtime.sweep.curves import curves

    if len(specs) != 1:
        raise UsageError("adl sweep curves takes one SPEC")
    print(curves(specs[0], results), end="")
    return 0
