"""Evaluating argument values: numbers, arithmetic, ``$vars`` and block parameters."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

from ..errors import did_you_mean
from ..registry import REGISTRY, Hyper
from ..source import Span
from ..syntax import ast
from ..types import ChainRef, describe


@dataclass(frozen=True, eq=False)
class Thunk:
    """A block argument: its text and the scope it was written in (evaluated on use)."""

    value: ast.Value
    scope: "Scope"


@dataclass(frozen=True, eq=False)
class Scope:
    """Block parameters visible at one place; a block body sees only its own parameters.
    ``blocks`` are the file's block names (a bare name that is no layer, block or parameter
    but names a variable stands for the variable: the paper's ``repeat(n, ...)``)."""

    params: Mapping[str, Thunk] = field(default_factory=dict)
    block: str | None = None
    blocks: frozenset[str] = frozenset()

    def inner(self, params: Mapping[str, Thunk], block: str) -> "Scope":
        return Scope(params, block, self.blocks)


EMPTY = Scope()


class EvalError(Exception):
    def __init__(self, message: str, span: Span, hint: str | None = None):
        super().__init__(message)
        self.span = span
        self.hint = hint


def evaluate(value: ast.Value, scope: Scope, hyper: Hyper, depth: int = 0) -> Any:
    """A Python value (int, float, bool, str) or a :class:`ChainRef`."""
    if depth > 200:
        raise EvalError("block parameters or variables refer to each other too deeply "
                        "(a cycle?)", value.span)
    if isinstance(value, ast.Chain):
        name = value.bare_name()
        if name is not None and name in scope.params:
            thunk = scope.params[name]
            return evaluate(thunk.value, thunk.scope, hyper, depth + 1)
        if (name is not None and name not in scope.blocks and name in hyper.var_names()
                and REGISTRY.get(name) is None):
            return _var(name, hyper)
        return ChainRef(value, scope)
    if isinstance(value, (ast.Int, ast.Float, ast.Bool, ast.String)):
        return value.value
    if isinstance(value, ast.Var):
        if value.name not in hyper.var_names():
            hint = did_you_mean(value.name, hyper.var_names())
            hint = hint.replace("'", "'$", 1) if hint else \
                f"set it with --var {value.name}=VALUE (or vars={{'{value.name}': ...}})"
            raise EvalError(f"unknown variable '${value.name}'", value.span, hint)
        return _var(value.name, hyper, depth)
    if isinstance(value, ast.NameRef):
        if value.name not in scope.params and value.name in hyper.var_names():
            return _number(_var(value.name, hyper, depth), value)
        if value.name not in scope.params:
            hint = did_you_mean(value.name, scope.params)
            where = f"block '{scope.block}'" if scope.block else "this expression"
            raise EvalError(f"'{value.name}' is not a parameter of {where}", value.span,
                            hint or "only numbers, $variables and block parameters can "
                                    "appear in arithmetic")
        thunk = scope.params[value.name]
        return _number(evaluate(thunk.value, thunk.scope, hyper, depth + 1), value)
    if isinstance(value, ast.Negate):
        return -_number(evaluate(value.operand, scope, hyper, depth + 1), value.operand)
    if isinstance(value, ast.BinOp):
        left = _number(evaluate(value.left, scope, hyper, depth + 1), value.left)
        right = _number(evaluate(value.right, scope, hyper, depth + 1), value.right)
        try:
            return _arith(value, left, right)
        except OverflowError:
            raise EvalError("number too large", value.span) from None
    raise TypeError(f"not a value: {value!r}")


def _var(name: str, hyper: Hyper, depth: int = 0) -> Any:
    """A variable's value: a number, a string, a chain, or a file default's expression
    (``$ff = 4 * $d_model``), evaluated where it is used."""
    v = hyper.var(name)
    if isinstance(v, ast.Chain):
        return ChainRef(v, EMPTY)
    if isinstance(v, (ast.Int, ast.Float, ast.Bool, ast.String, ast.Var, ast.NameRef,
                      ast.Negate, ast.BinOp)):
        return evaluate(v, EMPTY, hyper, depth + 1)
    return v


def _number(v: Any, where: ast.Value) -> int | float:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise EvalError(f"arithmetic needs numbers, not {describe(v)}", where.span)
    return v


def _arith(node: ast.BinOp, a: int | float, b: int | float) -> int | float:
    if node.op == "+":
        return a + b
    if node.op == "-":
        return a - b
    if node.op == "*":
        return a * b
    if b == 0:
        raise EvalError("division by zero", node.span)
    if isinstance(a, int) and isinstance(b, int) and a % b == 0:
        return a // b  # exact integer division stays an integer: $d_model / 2 is a size
    return a / b
