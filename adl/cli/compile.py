"""``adl compile --check|--summary FILE...``: validate ADL files and show their layers."""
from __future__ import annotations

import argparse
import sys

from .. import api
from ..check import role_from_name
from ..check.program import Program
from ..errors import ADLError, Diagnostic
from ..registry import DECODER, ENCODER, ROLES
from ..summary import table
from .common import add_model_options, checked_model_options


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("compile", help="check ADL files and summarise their layers",
                       description="Check ADL files (every error of a file at once) and "
                                   "optionally print a table of their layers.")
    p.add_argument("files", nargs="+", metavar="FILE", help=".adl files")
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--check", action="store_true", help="check only (the default)")
    mode.add_argument("--summary", action="store_true",
                      help="print each layer's position, sizes and parameter count")
    p.add_argument("--role", choices=ROLES,
                   help="role of the files' bare chains (default: from *.enc.adl / *.dec.adl "
                        "/ *.joint.adl, or from encoder = / decoder = / joint = definitions)")
    add_model_options(p)
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    options = checked_model_options(args)
    failed: list[ADLError] = []
    encoder_d: int | None = None
    # Encoders first: a decoder given beside an encoder reads that encoder's output size.
    files = sorted(args.files, key=lambda f: (args.role or role_from_name(f)) != ENCODER)
    for path in files:
        try:
            source_d = encoder_d if (args.role or role_from_name(path)) == DECODER else None
            program = api.check(path, role=args.role, source_d=source_d, **options)
        except ADLError as exc:
            if args.debug:
                raise
            failed.append(exc)
            print(exc.render(), file=sys.stderr)
            continue
        if ENCODER in program.networks:
            encoder_d = program.networks[ENCODER].d_out
        _warn(program.warnings)
        if args.summary:
            for net in program.networks.values():
                print(table(net, f"{path} ({net.role})"))
                print()
        else:
            print(_verdict(path, program))
    if failed:
        n = sum(len(e.errors) for e in failed)
        print(f"{n} error{'s' if n != 1 else ''} in {len(failed)} file"
              f"{'s' if len(failed) != 1 else ''}", file=sys.stderr)
        return 1
    return 0


def _verdict(path: str, program: Program) -> str:
    nets = ", ".join(f"{n.role} {n.d_in} → {n.d_out}, {n.params:,} parameters"
                     for n in program.networks.values())
    return f"{path}: ok ({nets})"


def _warn(warnings: list[Diagnostic]) -> None:
    for w in warnings:
        print(w.render(), file=sys.stderr)
