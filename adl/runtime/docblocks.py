"""Generated blocks of a document: a region between two HTML comments that code rewrites
from committed results, so that no number and no verdict word in it is written by hand::

    <!-- adl sweep report you2020 -->
    ...written by code...
    <!-- end of adl sweep report -->

``adl sweep report --update-doc`` (docs/experiments.md) and the benchmarks' ``--update-doc``
(docs/performance.md) rewrite their blocks through :func:`rewrite`; their tests check the
blocks with ``write=False``.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

from adl.runtime.errors import UserError


def pattern(start: str, arguments: str, end: str | None = None) -> re.Pattern[str]:
    """The blocks that open with ``<!-- START ARGUMENTS -->`` and close with ``<!-- end of
    END -->`` (``end``: ``start`` unless given); ``start``, ``arguments`` and ``end`` are
    regular expressions, ``arguments`` a group named ``args``."""
    return re.compile(
        rf"(?P<head><!-- {start} (?P<args>{arguments}) -->\n)(?P<body>.*?)"
        rf"(?P<tail><!-- end of {start if end is None else end} -->)",
        re.S,
    )


def rewrite(
    path: str | Path,
    blocks: re.Pattern[str],
    fill: Callable[[re.Match[str]], str],
    write: bool = True,
) -> list[str]:
    """Give every block of ``blocks`` in the document at ``path`` the body ``fill(match)``;
    returns the arguments of the blocks that changed (``write=False``: a check, nothing
    written)."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise UserError(f"{path}: cannot read: {exc.strerror}") from None
    changed: list[str] = []

    def one(m: re.Match[str]) -> str:
        body = fill(m)
        if body != m["body"]:
            changed.append(m["args"])
        return m["head"] + body + m["tail"]

    new = blocks.sub(one, text)
    if write and new != text:
        path.write_text(new, encoding="utf-8")
    return changed
