"""Syntax tree -> canonical ADL text, and the architecture signature derived from it.

Canonical text: variable defaults, then definitions, one per line, in source order, then the
network chain;
``a -> b`` with single spaces; ``name(pos, key=value)``; no comments. Printing is exact:
``parse(to_text(tree)) == tree`` for every tree the parser can produce.
"""

from __future__ import annotations

import hashlib
import json

from . import ast

_PRECEDENCE = {"+": 1, "-": 1, "*": 2, "/": 2}


def to_text(
    node: ast.File | ast.Definition | ast.Chain | ast.Call | ast.Choice | ast.Value,
) -> str:
    """Canonical text of any syntax node (a file ends with a newline)."""
    if isinstance(node, ast.File):
        lines = [f"${v.name} = {to_text(v.value)}" for v in node.variables]
        lines += [to_text(d) for d in node.definitions]
        if node.network is not None:
            lines.append(to_text(node.network))
        return "".join(line + "\n" for line in lines)
    if isinstance(node, ast.Definition):
        head = node.name
        if node.params:
            head += "(" + ", ".join(_param(p) for p in node.params) + ")"
        return f"{head} = {to_text(node.body)}"
    if isinstance(node, ast.Chain):
        return " -> ".join(to_text(c) for c in node.layers)
    if isinstance(node, ast.Choice):
        if node.range is not None:
            return f"{{{node.range[0]}..{node.range[1]}}}"
        return "{" + " | ".join(to_text(o) for o in node.options) + "}"
    if isinstance(node, ast.Call):
        if not node.args:
            return node.name
        return f"{node.name}(" + ", ".join(_argument(a) for a in node.args) + ")"
    return _expr(node, 0)


def text_hash(tree: ast.File) -> str:
    """A stable short hash of the canonical text: equal architectures, equal signatures."""
    return hashlib.sha256(to_text(tree).encode("utf-8")).hexdigest()[:16]


def _param(p: ast.Param) -> str:
    return p.name if p.default is None else f"{p.name}={to_text(p.default)}"


def _argument(a: ast.Argument) -> str:
    return to_text(a.value) if a.key is None else f"{a.key}={to_text(a.value)}"


def _expr(e: ast.Value, context: int) -> str:
    if isinstance(e, ast.Chain):
        return to_text(e)
    if isinstance(e, ast.Bool):
        return "true" if e.value else "false"
    if isinstance(e, ast.Int):
        return str(e.value)
    if isinstance(e, ast.Float):
        text = repr(e.value)
        return text if any(c in text for c in ".e") else text + ".0"
    if isinstance(e, ast.String):
        return json.dumps(e.value, ensure_ascii=False)
    if isinstance(e, ast.Var):
        return "$" + e.name
    if isinstance(e, ast.NameRef):
        return e.name
    if isinstance(e, ast.Negate):
        return "-" + _expr(e.operand, 3)
    if isinstance(e, ast.BinOp):
        prec = _PRECEDENCE[e.op]
        # Left-associative: the right operand needs parentheses at equal precedence.
        text = f"{_expr(e.left, prec)} {e.op} {_expr(e.right, prec + 1)}"
        return f"({text})" if prec < context else text
    raise TypeError(f"not an ADL syntax node: {e!r}")
