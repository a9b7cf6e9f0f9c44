"""Formatting an ADL text with the printer (``adl fmt`` and the editor's "format document").

Each statement (``$x = ...``, a definition, the network chain) is printed as the printer
prints it (:func:`adl.to_text`): ``a -> b`` with single spaces, ``name(pos, key=value)``. A
statement keeps the line breaks it has between its top-level layers (with their
indentation), and a line longer than :data:`WIDTH` columns is broken before the top-level
layer that does not fit, indented by the width of the definition's head. Everything between
statements stays: comments, and blank lines (at most one in a row). A statement with a
comment inside it is kept as written, since the printer has no place for the comment, and
so is one that the printer could only lay out with a line longer than WIDTH where the
text has none (a call broken inside its arguments).
Formatting never changes the syntax tree: ``parse(format_text(t)) == parse(t)``.

This module needs nothing of the language server (no pygls), so the CLI imports it too.
"""

from __future__ import annotations

import re

from ..api import parse
from ..source import Source
from ..syntax import ast
from ..syntax.printer import to_text
from .symbols import block_head

WIDTH = 100  # columns of a formatted line, as the project's Python
_BLANK_LINES = re.compile(r"\n[ \t]*\n(?:[ \t]*\n)+")
_TRAILING_SPACE = re.compile(r"[ \t]+$", re.MULTILINE)

Statement = ast.Variable | ast.Definition | ast.Chain


def format_text(text: str, name: str = "<string>") -> str:
    """The formatted text; raises :class:`adl.ADLError` when it does not parse."""
    tree = parse(Source(text, name))
    statements: list[Statement] = [*tree.variables, *tree.definitions]
    if tree.network is not None:
        statements.append(tree.network)
    statements.sort(key=lambda s: s.span.start)
    out: list[str] = []
    end = 0
    for statement in statements:
        gap = text[end : statement.span.start]
        if out and "\n" not in gap:
            gap = "\n" + gap.lstrip(" \t")  # one statement per line
        out.append(gap)
        written = text[statement.span.start : statement.span.end]
        printed = written if _has_comment(written) else _print(statement, text)
        out.append(written if _longest(printed) > max(WIDTH, _longest(written)) else printed)
        end = statement.span.end
    out.append(text[end:])
    result = _TRAILING_SPACE.sub("", "".join(out))
    result = _BLANK_LINES.sub("\n\n", result).strip("\n")
    return result + "\n" if result else ""


def _print(statement: Statement, text: str) -> str:
    if isinstance(statement, ast.Variable):
        return f"${statement.name} = {to_text(statement.value)}"
    if isinstance(statement, ast.Definition):
        head = block_head(statement)
        return _chain(f"{head} = ", statement.body, len(head), text)
    return _chain("", statement, 4, text)


def _chain(head: str, chain: ast.Chain, indent: int, text: str) -> str:
    """``head`` and the chain's layers joined by `` -> ``: a line break the text has
    between two layers stays (with its indentation), and a line longer than
    :data:`WIDTH` breaks before the layer that does not fit, indented by ``indent``."""
    lines = [head + to_text(chain.layers[0])]
    for before, call in zip(chain.layers, chain.layers[1:]):
        layer = to_text(call)
        if "\n" in text[before.span.end : call.span.start]:
            line_start = text.rfind("\n", 0, call.span.start) + 1
            written = text[line_start : call.span.start]
            lines.append(f"{' ' * (len(written) - len(written.lstrip()))}-> {layer}")
        elif len(f"{lines[-1]} -> {layer}") <= WIDTH:
            lines[-1] = f"{lines[-1]} -> {layer}"
        else:
            lines.append(f"{' ' * indent}-> {layer}")
    return "\n".join(lines)


def _longest(text: str) -> int:
    return max(len(line) for line in text.split("\n"))


def _has_comment(text: str) -> bool:
    """Whether a '#' outside a string starts a comment in ``text``."""
    quote = None
    escaped = False
    for ch in text:
        if quote:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == quote:
                quote = None
        elif ch in "\"'":
            quote = ch
        elif ch == "#":
            return True
    return False
