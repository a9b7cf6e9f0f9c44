"""``adl lsp``: the language server for .adl files, over stdin and stdout (docs/editors.md).

Serve the Language Server Protocol over stdin and stdout: diagnostics as adl compile --check
gives them, hover, completion, definitions, references, symbols and formatting for .adl
files. Editors start it (docs/editors.md).
"""

from __future__ import annotations

import argparse

from ..errors import UserError

HELP = "the language server for editors (stdio)"


def arguments(p: argparse.ArgumentParser) -> None:
    """The arguments of ``adl lsp``."""
    p.add_argument(
        "--stdio", action="store_true", help="talk over stdin and stdout (the only way; accepted)"
    )
    p.add_argument("--log-file", metavar="FILE", help="write the server's log to FILE")


def run(args: argparse.Namespace) -> int:
    try:
        from adl.lsp.server import serve
    except ImportError as exc:
        raise UserError(
            f"the language server needs pygls ({exc.name} is missing): pip install 'adl[lsp]'"
        ) from None
    serve(args.log_file)
    return 0
