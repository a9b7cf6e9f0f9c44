"""``adl fmt [--check] FILE...``: format ADL files with the printer (the language server's
"format document" does the same; :mod:`adl.lsp.formatting` says how).

Rewrite ADL files in the printer's layout, keeping their comments (the file - reads standard
input and writes standard output).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .. import api
from ..errors import ADLError
from ..lsp.formatting import format_text

HELP = "format ADL files"


def arguments(p: argparse.ArgumentParser) -> None:
    """The arguments of ``adl fmt``."""
    p.add_argument("files", nargs="+", metavar="FILE", help=".adl files, or - for stdin")
    p.add_argument(
        "--check",
        action="store_true",
        help="change nothing; list the files that would change and exit 1 if any would",
    )


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
