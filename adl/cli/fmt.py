"""``adl fmt [--check] FILE...``: format ADL files with the printer (the language server's
"format document" does the same; :mod:`adl.lsp.formatting` says how)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .. import api
from ..errors import ADLError
from ..lsp.formatting import format_text


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "fmt",
        help="format ADL files",
        description="Rewrite ADL files in the printer's layout, keeping their comments "
        "(the file - reads standard input and writes standard output).",
    )
    p.add_argument("files", nargs="+", metavar="FILE", help=".adl files, or - for stdin")
    p.add_argument(
        "--check",
        action="store_true",
        help="change nothing; list the files that would change and exit 1 if any would",
    )
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    failed = changed = 0
    for name in args.files:
        try:
            source = api.read_source(Path(name)) if name != "-" else None
            text = source.text if source is not None else sys.stdin.read()
            formatted = format_text(text, name if name != "-" else "<stdin>")
        except ADLError as exc:
            print(exc.render(), file=sys.stderr)
            failed += 1
            continue
        if name == "-":
            sys.stdout.write(formatted)
        elif formatted != text:
            changed += 1
            if args.check:
                print(f"{name}: would be reformatted")
            else:
                Path(name).write_text(formatted, encoding="utf-8")
                print(f"{name}: reformatted")
    if failed:
        print(f"{failed} file{'s' if failed != 1 else ''} not formatted", file=sys.stderr)
        return 1
    return 1 if args.check and changed else 0
