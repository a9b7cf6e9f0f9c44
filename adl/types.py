"""Argument types of layers, read from the annotations of their Python signatures.

A layer declares ``num_hidden: Annotated[Size, aka("d_o")] = D_MODEL``; the registry turns
the annotation into an :class:`ArgType` that checks and converts ADL values, and the alias
and default into the language reference. Nothing here imports torch.
"""

from __future__ import annotations

import math
import types as pytypes
import typing
from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, Any, Literal

from .errors import did_you_mean
from .limits import MAX_COUNT, MAX_SIZE
from .syntax import ast
from .syntax.printer import to_text

# --- values as the checker hands them to types --------------------------------------------


@dataclass(frozen=True, eq=False)
class ChainRef:
    """An argument written as a chain (``res(norm -> ffl)``) or a bare name (``relu``), with
    the scope its block parameters resolve in. Whether ``relu`` is a symbol or a layer
    depends on the parameter it binds to."""

    chain: ast.Chain
    scope: Any

    @property
    def bare_name(self) -> str | None:
        return self.chain.bare_name()


def describe(value: Any) -> str:
    """How a value is named in messages: ``the number 2.5``, ``the chain 'a -> b'``."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return f"the integer {value}"
    if isinstance(value, float):
        return f"the number {value:g}"
    if isinstance(value, str):
        return f'the string "{value}"'
    if isinstance(value, ChainRef):
        if value.bare_name is not None:
            return f"'{value.bare_name}'"
        return f"the chain '{to_text(value.chain)}'"
    return repr(value)


class TypeMismatch(Exception):
    """A value does not fit a type; the message completes 'must be ...'."""

    def __init__(self, message: str, hint: str | None = None):
        super().__init__(message)
        self.hint = hint


# --- argument types -----------------------------------------------------------------------


class ArgType:
    """How one layer argument is checked, converted and documented."""

    label = "value"  # short name in the language reference: 'size', 'rate', 'relu|glu'
    noun = "a value"  # in messages: 'must be a size (a positive integer)'

    def accepts(self, value: Any) -> bool:
        """Whether a positional value is of this type's kind (used to skip ahead)."""
        return True

    def convert(self, value: Any) -> Any:
        return value


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _int_text(n: int) -> str:
    return f"{n:,}" if abs(n) >= 10_000 else str(n)


def _float_text(x: float) -> str:
    """``0.01``, ``10000``, ``1e6``, ``1e-12``."""
    return f"{x:g}".replace("e+0", "e").replace("e-0", "e-").replace("e+", "e")


class IntType(ArgType):
    """An integer, optionally within ``[lo, hi]`` (shown in the reference: ``size 1..1,048,576``)."""

    kind, kind_noun = "int", "an integer"

    def __init__(self, lo: int | None = None, hi: int | None = None):
        self.lo, self.hi = lo, hi
        self.label = self.kind + (
            f" {_int_text(lo)}..{_int_text(hi)}"
            if lo is not None and hi is not None
            else f" ≥ {lo}"
            if lo is not None
            else f" ≤ {hi}"
            if hi is not None
            else ""
        )
        self.noun = self.kind_noun

    def accepts(self, value: Any) -> bool:
        return _is_number(value)  # a number binds here even if it is no integer: then it fails

    def convert(self, value: Any) -> int:
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        if not (_is_number(value) and isinstance(value, int)):
            raise TypeMismatch(self.noun)
        below = self.lo is not None and value < self.lo
        above = self.hi is not None and value > self.hi
        if below and self.kind != IntType.kind:  # 'a positive integer' says it all
            raise TypeMismatch(self.noun)
        if below or above:
            if self.kind != IntType.kind or self.lo is None:
                raise TypeMismatch(f"{self.noun} no larger than {self.hi:,}")
            if self.hi is None:
                raise TypeMismatch(f"an integer of at least {self.lo:,}")
            raise TypeMismatch(f"an integer from {self.lo:,} to {self.hi:,}")
        return value


class _BoundedInt(IntType):
    """An integer from the class's ``least`` to ``hi`` (default: the class's ``most``)."""

    least, most = 1, MAX_COUNT

    def __init__(self, hi: int | None = None):
        super().__init__(self.least, self.most if hi is None else hi)


class SizeType(_BoundedInt):
    kind, kind_noun, most = "size", "a size (a positive integer)", MAX_SIZE


class CountType(_BoundedInt):
    kind, kind_noun = "count", "a positive integer"


class NaturalType(_BoundedInt):
    kind, kind_noun, least = "natural", "a non-negative integer", 0


class FloatType(ArgType):
    """A finite number, optionally within a range: ``[lo, hi]``, or open at either end."""

    kind, kind_noun = "float", "a number"

    def __init__(
        self,
        lo: float | None = None,
        hi: float | None = None,
        lo_open: bool = False,
        hi_open: bool = False,
    ):
        self.lo, self.hi, self.lo_open, self.hi_open = lo, hi, lo_open, hi_open
        self.label = self.kind + (f" {self.interval()}" if lo is not None or hi is not None else "")
        self.noun = self.kind_noun

    def interval(self) -> str:
        lo = "-∞" if self.lo is None else _float_text(self.lo)
        hi = "∞" if self.hi is None else _float_text(self.hi)
        left = "(" if self.lo_open or self.lo is None else "["
        right = ")" if self.hi_open or self.hi is None else "]"
        return f"{left}{lo}, {hi}{right}"

    def accepts(self, value: Any) -> bool:
        return _is_number(value)

    def convert(self, value: Any) -> float:
        if not self.accepts(value) or not math.isfinite(value):
            raise TypeMismatch(self.noun)
        v = float(value)
        below = self.lo is not None and (v <= self.lo if self.lo_open else v < self.lo)
        above = self.hi is not None and (v >= self.hi if self.hi_open else v > self.hi)
        if below or above:
            raise TypeMismatch(f"{self.range_noun()} in {self.interval()}")
        return v

    def range_noun(self) -> str:
        return self.kind_noun


class RateType(FloatType):
    kind, kind_noun = "rate", "a rate between 0 and 1"

    def __init__(self) -> None:
        super().__init__(0.0, 1.0, hi_open=True)

    def range_noun(self) -> str:
        return "a rate"


class PositiveFloatType(FloatType):
    kind, kind_noun = "positive", "a positive number"

    def __init__(self, lo: float | None = None, hi: float | None = None):
        if lo is None:
            super().__init__(0.0, hi, lo_open=True)
        else:
            super().__init__(lo, hi)
        if lo is None and hi is None:
            self.label = self.kind  # any positive number

    def range_noun(self) -> str:
        return "a number" if self.lo else self.kind_noun


class InstanceType(ArgType):
    """The values of one Python class, taken as they are."""

    python_type: type = object

    def accepts(self, value: Any) -> bool:
        return isinstance(value, self.python_type)

    def convert(self, value: Any) -> Any:
        if not self.accepts(value):
            raise TypeMismatch(self.noun)
        return value


class BoolType(InstanceType):
    label, noun, python_type = "bool", "true or false", bool


def _symbol(value: Any) -> str | None:
    """A string, or a bare name written for one (``glu`` for ``"glu"``); None for anything
    else."""
    if isinstance(value, ChainRef):
        return value.bare_name
    return value if isinstance(value, str) else None


class StrType(ArgType):
    label, noun = "string", "a string"

    def accepts(self, value: Any) -> bool:
        return _symbol(value) is not None

    def convert(self, value: Any) -> str:
        name = _symbol(value)
        if name is None:
            raise TypeMismatch(self.noun)
        return name


class ChoiceType(StrType):
    """One of a fixed set of symbols, written bare (``glu``) or quoted (``"glu"``)."""

    def __init__(self, choices: tuple[str, ...]):
        self.choices = choices
        self.label = " | ".join(choices)
        self.noun = _one_of(choices)

    def convert(self, value: Any) -> str:
        name = super().convert(value)
        if name not in self.choices:
            raise TypeMismatch(self.noun, hint=did_you_mean(name, self.choices))
        return name


class ChainType(InstanceType):
    """A sub-network: a layer, a block, or a chain of them."""

    label, noun, python_type = "chain", "a layer or a chain of layers", ChainRef


class UnionType(ArgType):
    def __init__(self, members: tuple[ArgType, ...]):
        self.members = members
        self.label = " | ".join(m.label for m in members)
        self.noun = " or ".join(m.noun for m in members)

    def accepts(self, value: Any) -> bool:
        return any(m.accepts(value) for m in self.members)

    def convert(self, value: Any) -> Any:
        failed: list[tuple[ArgType, TypeMismatch]] = []
        for m in self.members:
            if m.accepts(value):
                try:
                    return m.convert(value)
                except TypeMismatch as exc:
                    failed.append((m, exc))
        if len(failed) == 1 and str(failed[0][1]) != failed[0][0].noun:
            raise failed[0][1]  # of the one kind that takes it, but out of that kind's range
        raise TypeMismatch(self.noun, hint=next((e.hint for _, e in failed if e.hint), None))


class OptionalType(ArgType):
    """``T | None``: the default ``None`` means 'derived' (documented on the parameter)."""

    def __init__(self, inner: ArgType):
        self.inner = inner
        self.label = inner.label
        self.noun = inner.noun

    def accepts(self, value: Any) -> bool:
        return self.inner.accepts(value)

    def convert(self, value: Any) -> Any:
        return self.inner.convert(value)


def _one_of(choices: tuple[str, ...]) -> str:
    quoted = [f"'{c}'" for c in choices]
    if len(quoted) == 1:
        return quoted[0]
    return "one of " + ", ".join(quoted[:-1]) + " or " + quoted[-1]


# --- markers used in layer signatures ------------------------------------------------------


class Chain:
    """Annotation marker: the parameter takes a sub-network. The rule receives it checked
    (an :class:`adl.analysis.program.CheckedChain`), with these sizes."""

    d_in: int
    d_out: int


Size = Annotated[int, SizeType()]
Count = Annotated[int, CountType()]
Natural = Annotated[int, NaturalType()]
Rate = Annotated[float, RateType()]
Positive = Annotated[float, PositiveFloatType()]


@dataclass(frozen=True)
class aka:
    """Other spellings of a keyword: ``Annotated[Size, aka("d_o")]`` (paper, Sockeye)."""

    names: tuple[str, ...]

    def __init__(self, *names: str):
        object.__setattr__(self, "names", names)


@dataclass(frozen=True)
class ModelDefault:
    """A default taken from the model or the layer's input: ``D_MODEL``, ``INPUT``..."""

    label: str
    resolve: Callable[[Any], Any]

    def __repr__(self) -> str:
        return self.label


# Defaults of rule parameters typed as the value they stand for (``num_hidden: Size =
# D_MODEL``): the checker replaces them before a rule runs, so a rule only sees numbers.
INPUT: Any = ModelDefault("input size", lambda h: h.d)
D_MODEL: Any = ModelDefault("$d_model", lambda h: h.hyper.d_model)
HEADS: Any = ModelDefault("$heads", lambda h: h.hyper.heads)
DROPOUT: Any = ModelDefault("$dropout", lambda h: h.hyper.dropout)


def arg_type(annotation: Any) -> tuple[ArgType, tuple[str, ...]]:
    """The :class:`ArgType` and keyword aliases of one parameter annotation."""
    aliases: tuple[str, ...] = ()
    explicit: ArgType | None = None
    if typing.get_origin(annotation) is Annotated:
        base, *meta = typing.get_args(annotation)
        for m in meta:
            if isinstance(m, aka):
                aliases += m.names
            elif isinstance(m, ArgType):
                explicit = m
        if explicit is None:
            explicit, more = arg_type(base)
            aliases += more
        return explicit, aliases
    origin = typing.get_origin(annotation)
    if origin is Literal:
        return ChoiceType(tuple(str(a) for a in typing.get_args(annotation))), ()
    if origin in (typing.Union, pytypes.UnionType):
        members = [a for a in typing.get_args(annotation) if a is not type(None)]
        parts = []
        for m in members:
            t, more = arg_type(m)
            parts.append(t)
            aliases += more
        inner = parts[0] if len(parts) == 1 else UnionType(tuple(parts))
        if len(members) < len(typing.get_args(annotation)):
            return OptionalType(inner), aliases
        return inner, aliases
    simple = {int: IntType, float: FloatType, bool: BoolType, str: StrType, Chain: ChainType}
    if annotation in simple:
        return simple[annotation](), ()
    raise TypeError(f"no ADL argument type for annotation {annotation!r}")
