"""The public Python API: ``adl.parse``, ``adl.check`` (and ``adl.build``, in :mod:`adl.build`)."""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Mapping, Union

from .check import check_tree
from .check.program import Program
from .errors import ADLError, error
from .registry import Hyper
from .source import Source
from .syntax import ast
from .syntax.parser import parse_source

TextOrPath = Union[str, "os.PathLike[str]"]


def load(source: TextOrPath | Source) -> Source:
    """A :class:`Source` from ADL text, a path, or a ``*.adl`` file name."""
    if isinstance(source, Source):
        return source
    if isinstance(source, os.PathLike) or (
            isinstance(source, str) and source.endswith(".adl") and "\n" not in source):
        path = Path(source)
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            raise error(f"{path}: no such file") from None
        except OSError as exc:
            raise error(f"{path}: cannot read: {exc.strerror}") from None
        try:
            return Source(data.decode("utf-8"), str(path))
        except UnicodeDecodeError as exc:
            raise error(f"{path}: not UTF-8 text (byte {exc.start})") from None
    if not isinstance(source, str):
        raise TypeError(f"expected ADL text or a path, got {type(source).__name__}")
    return Source(source)


def parse(text: TextOrPath | Source, name: str | None = None) -> ast.File:
    """Parse ADL text (or a file) into a syntax tree; raises :class:`ADLError`."""
    src = load(text)
    if name is not None:
        src = Source(src.text, name)
    return parse_source(src)


def parse_value(text: str, name: str = "<value>") -> Any:
    """An ADL value written on its own (``1024``, ``0.1``, ``glu``, ``res(ffl)``): a Python
    number, bool or string, or a chain (for ``--var NAME=VALUE``)."""
    tree = parse_source(Source(f"v({text})", name))
    call = tree.network.layers[0] if tree.network and not tree.definitions else None
    if call is None or len(call.args) != 1 or call.args[0].key is not None:
        raise error(f"not a single value: {text!r}")
    value = call.args[0].value
    if isinstance(value, (ast.Int, ast.Float, ast.Bool, ast.String)):
        return value.value
    if isinstance(value, ast.Negate) and isinstance(value.operand, (ast.Int, ast.Float)):
        return -value.operand.value
    if isinstance(value, ast.Chain):
        return value
    raise error(f"a variable must be a number, a string, true/false or a layer: {text!r}")


def hyper(d_model: int = 512, heads: int = 8, dropout: float = 0.1,
          vars: Mapping[str, Any] | None = None) -> Hyper:
    """Validated model hyper-parameters; string variable values are read as ADL values."""
    problems = []
    if not isinstance(d_model, int) or d_model <= 0:
        problems.append(f"d_model must be a positive integer, not {d_model!r}")
    if not isinstance(heads, int) or heads <= 0:
        problems.append(f"heads must be a positive integer, not {heads!r}")
    if not isinstance(dropout, (int, float)) or not 0 <= dropout < 1:
        problems.append(f"dropout must be in [0, 1), not {dropout!r}")
    items = []
    for k, v in (vars or {}).items():
        if k in ("d_model", "heads", "dropout"):
            problems.append(f"${k} is a model setting: set it with d_model=/heads=/dropout= "
                            f"(--d-model, --heads, --dropout), not as a variable")
            continue
        if not k.isidentifier():
            problems.append(f"variable name {k!r} is not a name")
            continue
        items.append((k, parse_value(v, f"${k}") if isinstance(v, str) else v))
    if problems:
        raise ADLError([error(p).diagnostics[0] for p in problems])
    return Hyper(d_model, heads, float(dropout), tuple(sorted(items)))


def check(source: TextOrPath | Source, role: str | None = None, *, d_model: int = 512,
          heads: int = 8, dropout: float = 0.1, vars: Mapping[str, Any] | None = None,
          source_d: int | None = None, name: str | None = None) -> Program:
    """Check an ADL text or file without building anything.

    Returns the checked :class:`~adl.check.program.Program` (networks by role, every layer
    with its sizes and parameter count, warnings) or raises :class:`ADLError` carrying every
    error of the file. ``role`` is taken from the file name (``*.enc.adl``, ``*.dec.adl``,
    ``*.joint.adl``) or from ``encoder =`` / ``decoder =`` / ``joint =`` definitions when not
    given. ``source_d`` is the encoder's output size seen by source attention (default
    ``d_model``). ``name`` is what messages call the text (default: its path or
    ``<string>``).
    """
    src = load(source)
    if name is not None:
        src = Source(src.text, name)
    return check_tree(parse_source(src), src, role, hyper(d_model, heads, dropout, vars),
                      source_d)
