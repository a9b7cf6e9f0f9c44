"""``adl compile --check|--summary [--preset NAME] FILE...``: validate ADL files and show their
layers. A file with choices (``{a | b}``) is a space of programs: it prints the number of
programs in it and checks them (:func:`adl.check_space`). ``--preset`` checks with a run preset's model size, heads, dropout and variables (and
without FILEs, checks every file the preset names); a variable that no file reads is a
warning, with the nearest name the files do read.

Check ADL files (every error of a file at once) and optionally print a table of their
layers.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .. import api
from ..analysis.program import Program
from ..analysis.space import is_space
from ..analysis.spacecheck import CheckedSpace
from ..analysis.variables import unused_variables
from ..batch import check_files
from ..errors import ADLError, Diagnostic
from ..registry import DECODER, ENCODER, ROLES
from ..summary import model_rows, model_table, table
from .common import add_model_options, checked_model_options

HELP = "check ADL files and summarise their layers"


def arguments(p: argparse.ArgumentParser) -> None:
    """The arguments of ``adl compile``."""
    p.add_argument(
        "files", nargs="*", metavar="FILE", help=".adl files (default: the files --preset names)"
    )
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--check", action="store_true", help="check only (the default)")
    mode.add_argument(
        "--summary",
        action="store_true",
        help="print each layer's position, sizes and parameter count",
    )
    p.add_argument(
        "--role",
        choices=ROLES,
        help="role of the files' bare chains (default: from *.enc.adl / *.dec.adl "
        "/ *.joint.adl, or from encoder = / decoder = / joint = definitions)",
    )
    add_model_options(p)
    p.add_argument(
        "--preset",
        metavar="NAME|FILE",
        help="check with a run preset's d_model, heads, dropout and model.vars "
        "(the options above override them)",
    )
    p.add_argument(
        "--src-vocab",
        type=int,
        metavar="N",
        help="with --summary and an encoder and a decoder: count the whole model, "
        "embeddings and output layer included",
    )
    p.add_argument("--tgt-vocab", type=int, metavar="N", help="target vocabulary size")
    p.add_argument("--tie-embeddings", action="store_true", help="W_o shares E_tgt")
    p.add_argument("--share-embeddings", action="store_true", help="E_src is E_tgt")


def run(args: argparse.Namespace) -> int:
    options, origins = _settings(args)
    spaces = {i: f for i, f in enumerate(args.files) if _is_space(Path(f))}
    programs = iter(
        check_files(
            [Path(f) for i, f in enumerate(args.files) if i not in spaces], args.role, **options
        )
    )
    checked: list[Program | CheckedSpace | ADLError] = []
    for i, f in enumerate(args.files):
        if i in spaces:
            try:
                checked.append(api.check_space(Path(f), args.role, **options))
            except ADLError as exc:
                checked.append(exc)
        else:
            checked.append(next(programs))
    if args.debug:  # the traceback of the first error
        for result in checked:
            if isinstance(result, ADLError):
                raise result
    failed = []
    for path, result in zip(args.files, checked):  # reported in the order given
        if isinstance(result, ADLError):
            failed.append(result)
            print(result.render(), file=sys.stderr)
            continue
        if isinstance(result, CheckedSpace):  # a space of programs: its size, what failed
            _warn(result.diagnostics())
            print(f"{path}: {result.describe()}")
            continue
        _warn(result.warnings)
        if args.summary:
            for net in result.networks.values():
                print(table(net, f"{path} ({net.role})"))
                print()
        else:
            print(_verdict(path, result))
    if args.summary and args.src_vocab and not failed:
        _model_summary(args, [r for r in checked if isinstance(r, Program)])
    if not failed:  # a file with errors may read more than the checker got to
        read = [r.example if isinstance(r, CheckedSpace) else r for r in checked]
        for origin in dict.fromkeys(origins.values()):
            names = [n for n, o in origins.items() if o == origin]
            _warn(unused_variables(names, [r for r in read if isinstance(r, Program)], origin))
    if failed:
        n = sum(len(e.errors) for e in failed)
        print(
            f"{n} error{'s' if n != 1 else ''} in {len(failed)} file"
            f"{'s' if len(failed) != 1 else ''}",
            file=sys.stderr,
        )
        return 1
    return 0


def _is_space(path: Path) -> bool:
    """Whether a file is a space of programs (it parses and has a choice)."""
    try:
        return is_space(api.parse(path))
    except ADLError:
        return False  # check_files reports it


def _settings(args: argparse.Namespace) -> tuple[dict, dict[str, str]]:
    """The model options (a preset's, then the command line's) and where each variable was
    set. Without FILEs, ``args.files`` becomes the files the preset names."""
    from .common import DEFAULTS, UsageError

    preset_vars: dict = {}
    if args.preset:
        from adl.runtime.config import load_config, preset_files  # yaml, and torch: only here

        model = load_config(args.preset).model
        for key in DEFAULTS:
            if getattr(args, key) is None:
                setattr(args, key, getattr(model, key))
        preset_vars = dict(model.vars)
        if not args.files:
            args.files = [str(p) for p in preset_files(args.preset)]
            if not args.files:
                raise UsageError(
                    f"preset {args.preset} names no files (architectures:): give FILEs"
                )
    elif not args.files:
        raise UsageError("give the .adl files to check (or --preset NAME)")
    options = checked_model_options(args)
    given = {k: "--var" for k in options["vars"]}
    options["vars"] = {**preset_vars, **options["vars"]}
    origins = {k: f"preset {args.preset}" for k in preset_vars if k not in given} | given
    return options, origins


def _model_summary(args: argparse.Namespace, programs: list[Program]) -> None:
    from .common import UsageError

    nets = {role: net for p in programs for role, net in p.networks.items()}
    if ENCODER not in nets or DECODER not in nets:
        raise UsageError("--src-vocab counts a whole model: give an encoder and a decoder")
    tgt_vocab = args.tgt_vocab or args.src_vocab
    rows = model_rows(
        nets[ENCODER],
        nets[DECODER],
        args.src_vocab,
        tgt_vocab,
        args.tie_embeddings,
        args.share_embeddings,
    )
    print(model_table(rows, f"model (vocabularies {args.src_vocab:,} / {tgt_vocab:,})"))


def _verdict(path: str, program: Program) -> str:
    nets = ", ".join(
        f"{n.role} {n.d_in} → {n.d_out}, {n.params:,} parameters" for n in program.networks.values()
    )
    return f"{path}: ok ({nets})"


def _warn(warnings: list[Diagnostic]) -> None:
    for w in warnings:
        print(w.render(), file=sys.stderr)
