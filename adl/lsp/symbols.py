"""The outline of a file (document symbols): its variables' defaults, its named blocks and
networks (``encoder =``, ``decoder =``, ``joint =``), and its bare network chain under the
role its file name gives."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from ..registry import ROLES
from ..roles import role_from_name
from ..source import Span
from ..syntax import ast
from ..syntax.printer import to_text

SymbolKind = Literal["variable", "block", "network"]


@dataclass(frozen=True)
class Symbol:
    name: str
    kind: SymbolKind
    span: Span  # the whole statement
    name_span: Span  # what the editor selects
    detail: str = ""


def block_head(d: ast.Definition) -> str:
    """A definition's left side as the printer writes it: ``name`` or ``name(x, n=2)``."""
    return to_text(ast.Definition(d.name, d.params, ast.Chain(()))).rstrip(" =")


def outline(tree: ast.File, file_name: str) -> list[Symbol]:
    """The file's symbols in the order of the text."""
    symbols = [
        Symbol(f"${v.name}", "variable", v.span, v.name_span, to_text(v.value))
        for v in tree.variables
    ]
    for d in tree.definitions:
        kind: SymbolKind = "network" if d.name in ROLES else "block"
        symbols.append(Symbol(d.name, kind, d.span, d.name_span, block_head(d)))
    if tree.network is not None:
        role = role_from_name(file_name) or "network"
        first = tree.network.layers[0].name_span
        symbols.append(Symbol(role, "network", tree.network.span, first))
    return sorted(symbols, key=lambda s: s.span.start)
