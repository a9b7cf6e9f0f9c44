"""Binding a call's arguments to a layer's parameters.

Keywords bind by name or alias. Positional arguments bind in signature order; one whose
kind does not fit the next parameter skips ahead to the first later parameter that takes
it, so both spellings work: the paper's ``cnn(glu)`` and Sockeye's ``cnn(256, 3, relu)``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..errors import did_you_mean
from ..registry import LayerSpec, ParamSpec
from ..source import Span
from ..syntax import ast
from ..types import TypeMismatch, describe
from .values import EvalError

_FAILED = object()


@dataclass
class Problem:
    message: str
    span: Span
    hint: str | None = None


def bind(
    spec: LayerSpec, call: ast.Call, evaluate: Callable[[ast.Value], Any], problems: list[Problem]
) -> dict[str, Any] | None:
    """Converted values by parameter name (without defaults), or ``None`` on any problem."""
    bound: dict[str, Any] = {}
    spans: dict[str, Any] = {}  # a Span, or a list of them for a variadic parameter
    ok = True

    def value_of(arg: ast.Argument) -> tuple[bool, Any]:
        try:
            return True, evaluate(arg.value)
        except EvalError as exc:
            problems.append(Problem(str(exc), exc.span, exc.hint))
            return False, None

    for arg in call.keywords:
        param = spec.param(arg.keyword)
        if param is None or param.variadic:
            hint = did_you_mean(arg.keyword, spec.keyword_names())
            if hint is None:
                hint = f"'{spec.name}' takes {_takes(spec)}"
            problems.append(
                Problem(f"'{spec.name}' has no argument '{arg.key}'", arg.key_span, hint)
            )
            ok = False
            continue
        if param.name in bound:
            problems.append(
                Problem(f"argument '{param.name}' of '{spec.name}' is given twice", arg.span)
            )
            ok = False
            continue
        good, value = value_of(arg)
        ok &= good
        bound[param.name] = value if good else _FAILED  # reported: no second message
        spans[param.name] = arg.value.span

    cursor = 0
    params = spec.params
    for index, arg in enumerate(call.positional, 1):
        if cursor >= len(params):
            problems.append(
                Problem(
                    f"too many arguments: '{spec.name}' takes {_positional_count(spec)}",
                    arg.span,
                    hint=f"usage: {spec.usage()}",
                )
            )
            ok = False
            break
        good, value = value_of(arg)
        if not good:
            ok = False
            continue
        free = [
            i
            for i in range(cursor, len(params))
            if params[i].variadic or params[i].name not in bound
        ]
        # Skip ahead over optional parameters only: a required one must get this value.
        target = None
        for i in free:
            if params[i].type.accepts(value):
                target = i
                break
            if params[i].required:
                break
        if target is None:
            ok = False
            if not free:
                problems.append(
                    Problem(
                        f"too many arguments: '{spec.name}' takes {_positional_count(spec)}",
                        arg.span,
                        hint=f"usage: {spec.usage()}",
                    )
                )
                break
            else:
                nxt = params[free[0]]
                problems.append(
                    Problem(
                        f"argument {index} of '{spec.name}' ({nxt.name}) must be {nxt.type.noun}, "
                        f"not {describe(value)}",
                        arg.span,
                        hint=f"usage: {spec.usage()}",
                    )
                )
                if not nxt.variadic:  # the slot is taken: later arguments move on
                    bound[nxt.name] = _FAILED
                    cursor = free[0] + 1
            continue
        p = params[target]
        if p.variadic:
            bound.setdefault(p.name, []).append(value)
            spans.setdefault(p.name, []).append(arg.value.span)
            cursor = target
        else:
            bound[p.name] = value
            spans[p.name] = arg.value.span
            cursor = target + 1

    converted: dict[str, Any] = {}
    for param in params:
        if param.name not in bound:
            if param.required:
                problems.append(
                    Problem(
                        f"'{spec.name}' needs the argument '{param.name}'",
                        call.span,
                        hint=f"usage: {spec.usage()}",
                    )
                )
                ok = False
            continue
        if bound[param.name] is _FAILED:
            continue
        if param.variadic:
            items = []
            for v, span in zip(bound[param.name], spans[param.name]):
                good, c = _convert(spec, param, v, span, problems)
                ok &= good
                items.append(c)
            converted[param.name] = items
        else:
            good, c = _convert(spec, param, bound[param.name], spans[param.name], problems)
            ok &= good
            converted[param.name] = c
    return converted if ok else None


def _convert(
    spec: LayerSpec, param: ParamSpec, value: Any, span: Span, problems: list[Problem]
) -> tuple[bool, Any]:
    try:
        return True, param.type.convert(value)
    except TypeMismatch as exc:
        problems.append(
            Problem(
                f"argument '{param.name}' of '{spec.name}' must be {exc}, not {describe(value)}",
                span,
                exc.hint,
            )
        )
        return False, None


def _takes(spec: LayerSpec) -> str:
    names = [p.name for p in spec.params if not p.variadic]
    if not names:
        return "no keyword arguments"
    return "the arguments " + ", ".join(f"'{n}'" for n in names)


def _positional_count(spec: LayerSpec) -> str:
    n = len(spec.params)
    return "no arguments" if n == 0 else f"at most {n} argument{'s' if n > 1 else ''}"
