"""The public Python API: ``adl.parse``, ``adl.check`` (and ``adl.build``, in :mod:`adl.models`)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from .analysis import check_tree
from .analysis.program import Program
from .analysis.spacecheck import MEMBERS_CHECKED, CheckedSpace
from .analysis.spacecheck import check_space as check_space_tree
from .errors import ADLError, error
from .limits import MAX_HEADS, MAX_INTEGER, MAX_SIZE
from .registry import Hyper
from .source import Source
from .syntax import ast
from .syntax.parser import parse_source
from .syntax.reader import TextOrPath, is_file_name, read_source  # noqa: F401  (adl.api's too)


def parse(text: TextOrPath | Source, name: str | None = None) -> ast.File:
    """Parse ADL text (or a file) into a syntax tree; raises :class:`ADLError`."""
    src = read_source(text)
    if name is not None:
        src = Source(src.text, name)
    return _parse(src, text)


def parse_value(text: str, name: str = "<value>") -> Any:
    """An ADL value written on its own (``1024``, ``0.1``, ``glu``, ``res(ffl)``): a Python
    number, bool or string, or a chain (for ``--var NAME=VALUE``)."""
    tree = parse_source(Source(f"v({text})", name))
    call = tree.network.layers[0] if tree.network and not tree.definitions else None
    if not isinstance(call, ast.Call) or len(call.args) != 1 or call.args[0].key is not None:
        raise error(f"not a single value: {text!r}")
    value = call.args[0].value
    if ast.holds_choice(value):
        raise error(f"a variable set from outside is one value, not a choice: {text!r}")
    if isinstance(value, (ast.Int, ast.Float, ast.Bool, ast.String)):
        return value.value
    if isinstance(value, ast.Negate) and isinstance(value.operand, (ast.Int, ast.Float)):
        return -value.operand.value
    if isinstance(value, ast.Chain):
        return value
    raise error(f"a variable must be a number, a string, true/false or a layer: {text!r}")


def check_hyper(
    d_model: int = Hyper.d_model,
    heads: int = Hyper.heads,
    dropout: float = Hyper.dropout,
    vars: Mapping[str, Any] | None = None,
) -> Hyper:
    """Validated model hyper-parameters; string variable values are read as ADL values."""
    problems = []
    if isinstance(d_model, bool) or not isinstance(d_model, int) or d_model <= 0:
        problems.append(f"d_model must be a positive integer, not {d_model!r}")
    elif d_model > MAX_SIZE:
        problems.append(f"d_model must be at most {MAX_SIZE:,}, not {d_model:,}")
    if isinstance(heads, bool) or not isinstance(heads, int) or heads <= 0:
        problems.append(f"heads must be a positive integer, not {heads!r}")
    elif heads > MAX_HEADS:
        problems.append(f"heads must be at most {MAX_HEADS:,}, not {heads:,}")
    if isinstance(dropout, bool) or not isinstance(dropout, (int, float)) or not 0 <= dropout < 1:
        problems.append(f"dropout must be in [0, 1), not {dropout!r}")
    items = []
    for k, v in (vars or {}).items():
        if k in ("d_model", "heads", "dropout"):
            problems.append(
                f"${k} is a model setting: set it with d_model=/heads=/dropout= "
                f"(--d-model, --heads, --dropout), not as a variable"
            )
            continue
        if not k.isidentifier():
            problems.append(f"variable name {k!r} is not a name")
            continue
        if isinstance(v, str):
            items.append((k, parse_value(v, f"${k}")))
        elif _plain_value(v):
            items.append((k, v))
        else:
            problems.append(
                f"${k} must be a number, true/false, or ADL text (a str), not {_short(v)}"
            )
    if problems:
        raise ADLError([error(p).diagnostics[0] for p in problems])
    return Hyper(d_model, heads, float(dropout), tuple(sorted(items)))


def _plain_value(v: Any) -> bool:
    """A variable's value given in Python: a bool, a representable number, or a chain."""
    if isinstance(v, bool) or isinstance(v, ast.Chain):
        return True
    if isinstance(v, int):
        return -MAX_INTEGER <= v <= MAX_INTEGER
    return isinstance(v, float) and math.isfinite(v)


def _short(v: Any) -> str:
    text = repr(v) if not isinstance(v, int) or abs(v) < 10**30 else "a huge integer"
    return text if len(text) <= 40 else text[:37] + "..."


def check(
    source: TextOrPath | Source,
    role: str | None = None,
    *,
    d_model: int = Hyper.d_model,
    heads: int = Hyper.heads,
    dropout: float = Hyper.dropout,
    vars: Mapping[str, Any] | None = None,
    source_d: int | None = None,
    name: str | None = None,
    max_memory: int | None = None,
) -> Program:
    """Check an ADL text or file without building anything.

    Returns the checked :class:`~adl.analysis.program.Program` (networks by role, every layer
    with its sizes and parameter count, warnings) or raises :class:`ADLError` carrying every
    error of the file. ``role`` is taken from the file name (``*.enc.adl``, ``*.dec.adl``,
    ``*.joint.adl``) or from ``encoder =`` / ``decoder =`` / ``joint =`` definitions when not
    given. ``source_d`` is the encoder's output size seen by source attention (default
    ``d_model``). ``name`` is what messages call the text (default: its path or
    ``<string>``). A network needing more than ``max_memory`` bytes for its parameters and
    fixed tensors is refused (default: ``$ADL_MAX_MEMORY``, else 16 GiB; see
    :mod:`adl.limits`). See :func:`read_source` for when a str is a file name.
    """
    src = _named(source, name)
    h = check_hyper(d_model, heads, dropout, vars)
    return check_tree(_parse(src, source), src, role, h, source_d, max_memory)


def check_space(
    source: TextOrPath | Source,
    role: str | None = None,
    *,
    limit: int = MEMBERS_CHECKED,
    **options: Any,
) -> CheckedSpace:
    """Check a space of programs (a text with choices, ``{a | b}``, ``{2..6}``) as
    :func:`check` checks a program: its size, counted exactly, and every member's sizes and
    roles (up to ``limit`` members one by one; a larger space through members that take
    every option, then a random sample). Raises :class:`ADLError` for a space with an
    option no member can take, or no valid member; members that fail only with some
    other picks are excluded (``CheckedSpace.excluded``). A text without a choice is a
    space of one program. ``options`` are :func:`check`'s (``d_model``, ``heads``,
    ``dropout``, ``vars``, ``source_d``, ``name``, ``max_memory``). See
    :mod:`adl.analysis.space`."""
    src = _named(source, options.pop("name", None))
    checks = {k: options.pop(k, None) for k in ("source_d", "max_memory")}
    h = check_hyper(**options)
    return check_space_tree(_parse(src, source), src, role, h, limit=limit, **checks)


def _named(source: TextOrPath | Source, name: str | None) -> Source:
    """The source read, called ``name`` in messages when given."""
    src = read_source(source)
    return Source(src.text, name) if name is not None else src


def _parse(src: Source, given: object) -> ast.File:
    """Parse; a one-line text ending in .adl that is no valid ADL gets a hint that it was
    read as text, not as a file name."""
    try:
        return parse_source(src)
    except ADLError as exc:
        text = given.strip() if isinstance(given, str) else ""
        if "\n" in text or not text.endswith(".adl") or not exc.diagnostics:
            raise
        first = replace(
            exc.diagnostics[0],
            hint="this str was read as ADL text, as it has ADL's punctuation; to read a "
            "file of that name pass pathlib.Path(...)",
        )
        raise ADLError([first, *exc.diagnostics[1:]]) from None
