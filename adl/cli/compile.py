"""``adl compile --check|--summary FILE...``: validate ADL files and show their layers."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .. import api
from ..check import role_from_name
from ..check.program import Program
from ..errors import ADLError, Diagnostic
from ..registry import DECODER, ENCODER, ROLES
from ..summary import model_rows, model_table, table
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
    p.add_argument("--src-vocab", type=int, metavar="N",
                   help="with --summary and an encoder and a decoder: count the whole model, "
                        "embeddings and output layer included")
    p.add_argument("--tgt-vocab", type=int, metavar="N", help="target vocabulary size")
    p.add_argument("--tie-embeddings", action="store_true", help="W_o shares E_tgt")
    p.add_argument("--share-embeddings", action="store_true", help="E_src is E_tgt")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    options = checked_model_options(args)
    role = lambda path: args.role or role_from_name(path)  # noqa: E731
    results: dict[str, Program | ADLError] = {}
    # Encoders first: a decoder given beside an encoder reads that encoder's output size.
    encoder_d: int | None = None
    for path in sorted(args.files, key=lambda f: role(f) != ENCODER):
        source_d = encoder_d if role(path) == DECODER else None
        try:
            results[path] = api.check(Path(path), role=args.role, source_d=source_d, **options)
        except ADLError as exc:
            if args.debug:
                raise
            results[path] = exc
            continue
        if ENCODER in results[path].networks:
            encoder_d = results[path].networks[ENCODER].d_out
    failed = []
    for path in args.files:  # report in the order given
        result = results[path]
        if isinstance(result, ADLError):
            failed.append(result)
            print(result.render(), file=sys.stderr)
            continue
        _warn(result.warnings)
        if args.summary:
            for net in result.networks.values():
                print(table(net, f"{path} ({net.role})"))
                print()
        else:
            print(_verdict(path, result))
    if args.summary and args.src_vocab and not failed:
        _model_summary(args, [r for r in results.values() if isinstance(r, Program)])
    if failed:
        n = sum(len(e.errors) for e in failed)
        print(f"{n} error{'s' if n != 1 else ''} in {len(failed)} file"
              f"{'s' if len(failed) != 1 else ''}", file=sys.stderr)
        return 1
    return 0


def _model_summary(args: argparse.Namespace, programs: list[Program]) -> None:
    from .common import UsageError

    nets = {role: net for p in programs for role, net in p.networks.items()}
    if ENCODER not in nets or DECODER not in nets:
        raise UsageError("--src-vocab counts a whole model: give an encoder and a decoder")
    tgt_vocab = args.tgt_vocab or args.src_vocab
    rows = model_rows(nets[ENCODER], nets[DECODER], args.src_vocab, tgt_vocab,
                      args.tie_embeddings, args.share_embeddings)
    print(model_table(rows, f"model (vocabularies {args.src_vocab:,} / {tgt_vocab:,})"))


def _verdict(path: str, program: Program) -> str:
    nets = ", ".join(f"{n.role} {n.d_in} → {n.d_out}, {n.params:,} parameters"
                     for n in program.networks.values())
    return f"{path}: ok ({nets})"


def _warn(warnings: list[Diagnostic]) -> None:
    for w in warnings:
        print(w.render(), file=sys.stderr)
