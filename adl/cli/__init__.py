"""The ``adl`` command: a thin layer over the Python API.

Exit status: 0 success, 1 invalid input (an ADL error, bad data), 2 a usage error.
A user error prints one clear message and no traceback; ``--debug`` shows the traceback.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence

from ..errors import UserError, report
from . import average as average_cmd
from . import compile as compile_cmd
from . import data as data_cmd
from . import demo as demo_cmd
from . import eval as eval_cmd
from . import export as export_cmd
from . import fmt as fmt_cmd
from . import lsp as lsp_cmd
from . import score as score_cmd
from . import search as search_cmd
from . import sweep as sweep_cmd
from . import train as train_cmd
from . import translate as translate_cmd
from . import viz as viz_cmd
from .common import UsageError

# Each command module is one command, named as the module: the last paragraph of its
# docstring is the command's description (the paragraphs before it are for the reader);
# HELP is its line in `adl --help`, arguments(parser) adds its options, run(args) -> int
# runs it (a command of subcommands sets run on each of them instead).
COMMANDS = [
    demo_cmd,
    compile_cmd,
    data_cmd,
    train_cmd,
    translate_cmd,
    eval_cmd,
    score_cmd,
    average_cmd,
    export_cmd,
    viz_cmd,
    sweep_cmd,
    search_cmd,
    fmt_cmd,
    lsp_cmd,
]


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="adl",
        description="ADL: architecture definition language for neural machine translation.",
    )
    p.add_argument("--debug", action="store_true", help="show tracebacks of errors")
    sub = p.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for cmd in COMMANDS:
        name = cmd.__name__.rsplit(".", 1)[1]
        description = (cmd.__doc__ or "").strip().rsplit("\n\n", 1)[1]
        command = sub.add_parser(name, help=cmd.HELP, description=description)
        cmd.arguments(command)
        if hasattr(cmd, "run"):
            command.set_defaults(run=cmd.run)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    p = parser()
    try:
        args = p.parse_args(argv)
    except SystemExit as exc:  # argparse: usage errors exit 2, --help exits 0
        return int(exc.code or 0)
    run: Callable[[argparse.Namespace], int] = args.run
    try:
        return run(args)
    except (UserError, UsageError) as exc:  # ADL errors, the runtime's (data, settings...)
        if args.debug:
            raise
        print(report(exc, _name(args)), file=sys.stderr)
        return 2 if isinstance(exc, UsageError) else 1
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0


def _name(args: argparse.Namespace) -> str:
    """The command as typed: ``train``, ``viz curves``, ``data bible``."""
    sub = getattr(args, "picture", None) or getattr(args, "corpus", None)
    return f"{args.command} {sub}" if sub else args.command


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
