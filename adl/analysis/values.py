"""Evaluating argument values: numbers, arithmetic, ``$vars`` and block parameters."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..errors import did_you_mean
from ..layers import REGISTRY
from ..limits import MAX_INTEGER, MAX_STEPS, MAX_VALUE_DEPTH
from ..registry import Hyper
from ..source import Span
from ..syntax import ast
from ..types import ChainRef, describe
from .variables import note_read


@dataclass(frozen=True, eq=False)
class Thunk:
    """A block argument: its text and the scope it was written in (evaluated on use)."""

    value: ast.Value
    scope: Scope


@dataclass(frozen=True, eq=False)
class Scope:
    """Block parameters visible at one place; a block body sees only its own parameters.
    ``blocks`` are the file's block names (a bare name that is no layer, block or parameter
    but names a variable stands for the variable: the paper's ``repeat(n, ...)``)."""

    params: Mapping[str, Thunk] = field(default_factory=dict)
    block: str | None = None
    blocks: frozenset[str] = frozenset()

    def inner(self, params: Mapping[str, Thunk], block: str) -> Scope:
        return Scope(params, block, self.blocks)


EMPTY = Scope()


class EvalError(Exception):
    def __init__(self, message: str, span: Span, hint: str | None = None):
        super().__init__(message)
        self.span = span
        self.hint = hint


class OverBudget(Exception):
    """A check spent more than :data:`~adl.limits.MAX_STEPS` steps (the checker reports it)."""


class Budget:
    """The steps one check may take: every layer, block use and value evaluated costs one,
    so checking time stays linear in what the limits allow."""

    def __init__(self, limit: int = MAX_STEPS):
        self.limit = limit
        self.used = 0

    def spend(self, steps: int = 1) -> None:
        self.used += steps
        if self.used > self.limit:
            raise OverBudget


def evaluate(
    value: ast.Value,
    scope: Scope,
    hyper: Hyper,
    depth: int = 0,
    budget: Budget | None = None,
    active: tuple[str, ...] = (),
) -> Any:
    """A Python value (int, float, bool, str) or a :class:`ChainRef`. ``active`` are the
    variables being evaluated (a variable that needs itself is a cycle)."""
    if budget is not None:
        budget.spend()
    if depth > MAX_VALUE_DEPTH:
        raise EvalError(
            f"values refer to values more than {MAX_VALUE_DEPTH} levels deep here "
            f"($variables and block parameters)",
            value.span,
            hint="give a variable or block parameter its value directly",
        )
    d = depth + 1
    if isinstance(value, ast.Chain):
        name = value.bare_name()
        if name is not None and name in scope.params:
            thunk = scope.params[name]
            return evaluate(thunk.value, thunk.scope, hyper, d, budget, active)
        if (
            name is not None
            and name not in scope.blocks
            and hyper.has_var(name)
            and REGISTRY.get(name) is None
        ):
            return _var(name, value, hyper, depth, budget, active)
        return ChainRef(value, scope)
    if isinstance(value, (ast.Int, ast.Float, ast.Bool, ast.String)):
        return value.value
    if isinstance(value, ast.Var):
        if not hyper.has_var(value.name):
            hint = did_you_mean(value.name, hyper.var_names())
            hint = (
                hint.replace("'", "'$", 1)
                if hint
                else f"set it with --var {value.name}=VALUE (or vars={{'{value.name}': ...}})"
            )
            raise EvalError(f"unknown variable '${value.name}'", value.span, hint)
        return _var(value.name, value, hyper, depth, budget, active)
    if isinstance(value, ast.NameRef):
        if value.name not in scope.params and hyper.has_var(value.name):
            return _number(_var(value.name, value, hyper, depth, budget, active), value)
        if value.name not in scope.params:
            hint = did_you_mean(value.name, scope.params)
            where = f"block '{scope.block}'" if scope.block else "this expression"
            raise EvalError(
                f"'{value.name}' is not a parameter of {where}",
                value.span,
                hint or "only numbers, $variables and block parameters can appear in arithmetic",
            )
        thunk = scope.params[value.name]
        v = evaluate(thunk.value, thunk.scope, hyper, d, budget, active)
        return _number(v, value)
    if isinstance(value, ast.Negate):
        return -_number(evaluate(value.operand, scope, hyper, d, budget, active), value.operand)
    if isinstance(value, ast.BinOp):
        left = _number(evaluate(value.left, scope, hyper, d, budget, active), value.left)
        right = _number(evaluate(value.right, scope, hyper, d, budget, active), value.right)
        try:
            result = _arith(value, left, right)
        except OverflowError:
            result = math.inf
        if not _representable(result):
            raise EvalError("number too large", value.span)
        return result
    raise TypeError(f"not a value: {value!r}")


def _representable(v: int | float) -> bool:
    if isinstance(v, int):
        return -MAX_INTEGER <= v <= MAX_INTEGER
    return math.isfinite(v)


def _var(
    name: str,
    where: ast.Value,
    hyper: Hyper,
    depth: int,
    budget: Budget | None,
    active: tuple[str, ...],
) -> Any:
    """A variable's value: a number, a string, a chain, or a file default's expression
    (``$ff = 4 * $d_model``), evaluated where it is used."""
    if name in active:
        cycle = " -> ".join(f"${n}" for n in (*active[active.index(name) :], name))
        raise EvalError(
            f"variable '${name}' refers to itself: {cycle}",
            where.span,
            hint="give one of them a value: a number, a name or a chain",
        )
    note_read(name)
    v = hyper.var(name)
    if isinstance(v, ast.Chain):
        return ChainRef(v, EMPTY)
    if isinstance(
        v, (ast.Int, ast.Float, ast.Bool, ast.String, ast.Var, ast.NameRef, ast.Negate, ast.BinOp)
    ):
        return evaluate(v, EMPTY, hyper, depth + 1, budget, (*active, name))
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
