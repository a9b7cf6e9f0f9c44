"""The ADL syntax tree: frozen dataclasses, each node with its source span.

Spans never take part in equality, so ``parse(print(tree)) == tree`` compares structure.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Generic, TypeVar

from ..source import Span

NO_SPAN = Span(0, 0)
T = TypeVar("T")


def _span() -> Span:
    return field(default=NO_SPAN, compare=False, repr=False)


# --- values -------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Literal(Generic[T]):
    """A value written in the text, and where."""

    value: T
    span: Span = _span()


class Int(_Literal[int]):
    """An integer: ``6``."""


class Float(_Literal[float]):
    """A number with a point or an exponent: ``0.1``, ``1e-3``."""


class Bool(_Literal[bool]):
    """``true`` or ``false`` (or ``True``, ``False``)."""


class String(_Literal[str]):
    """A quoted string: ``"top"``."""


@dataclass(frozen=True)
class _Name:
    name: str
    span: Span = _span()


class Var(_Name):
    """``$name``: a model hyper-parameter (``$d_model``) or a value set with ``--var``."""


class NameRef(_Name):
    """A bare name used as a number inside arithmetic, e.g. the ``n`` of ``repeat(n - 1, ...)``."""


@dataclass(frozen=True)
class Negate:
    operand: Expr
    span: Span = _span()


@dataclass(frozen=True)
class BinOp:
    op: str  # one of + - * /
    left: Expr
    right: Expr
    span: Span = _span()


Expr = Int | Float | Bool | String | Var | NameRef | Negate | BinOp


# --- layers and chains --------------------------------------------------------------------


@dataclass(frozen=True)
class Argument:
    """One argument of a call; ``key`` is ``None`` for a positional argument."""

    value: Value
    key: str | None = None
    span: Span = _span()
    key_span: Span = _span()

    @property
    def keyword(self) -> str:
        """The key of a keyword argument (one of :attr:`Call.keywords`)."""
        if self.key is None:
            raise ValueError("a positional argument has no key")
        return self.key


@dataclass(frozen=True)
class Call:
    """``name`` or ``name(arg, ..., key=value)``: one layer, block use or block parameter."""

    name: str
    args: tuple[Argument, ...] = ()
    span: Span = _span()
    name_span: Span = _span()

    @property
    def positional(self) -> tuple[Argument, ...]:
        return tuple(a for a in self.args if a.key is None)

    @property
    def keywords(self) -> tuple[Argument, ...]:
        return tuple(a for a in self.args if a.key is not None)


@dataclass(frozen=True)
class Choice:
    """``{a | b -> c | d}``: one of several layers or chains, or in a value's place one of
    several values (``{256 | 512}``; ``{2..6}`` is the integers 2 to 6). A text with a
    choice is a *space* of programs (:mod:`adl.analysis.space`): each of its programs
    picks one option of every choice it reaches."""

    options: tuple[Value, ...]
    span: Span = _span()
    range: tuple[int, int] | None = None  # written as {low..high}

    @property
    def name(self) -> str:
        """What stands for the choice where a layer's name is shown: ``{...}``."""
        return "{...}"

    @property
    def name_span(self) -> Span:
        return self.span


Layer = Call | Choice


@dataclass(frozen=True)
class Chain:
    """``l1 -> l2 -> ... -> ln`` (n >= 1); a layer is a call or, in a space, a choice."""

    layers: tuple[Layer, ...]
    span: Span = _span()

    def bare_name(self) -> str | None:
        """The name if this chain is a single call without arguments (``relu``, ``ffl``)."""
        if len(self.layers) == 1:
            first = self.layers[0]
            if isinstance(first, Call) and not first.args:
                return first.name
        return None

    @property
    def calls(self) -> tuple[Call, ...]:
        """The layers of a chain that holds no choice (a program's; see :class:`Choice`)."""
        for layer in self.layers:
            if not isinstance(layer, Call):
                raise TypeError("a choice {...} where a program has a layer")
        return self.layers  # type: ignore[return-value]  # every one is a Call


Value = Chain | Expr


def holds_choice(value: Value) -> bool:
    """Whether a value holds a choice anywhere inside it (arithmetic holds none)."""
    if isinstance(value, Chain):
        for layer in value.layers:
            if isinstance(layer, Choice) or any(holds_choice(a.value) for a in layer.args):
                return True
    return False


# --- files --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Param:
    """A block parameter, optionally with a default value: the ``n=2`` of ``b(x, n=2) = ...``."""

    name: str
    default: Value | None = None
    span: Span = _span()


@dataclass(frozen=True)
class Definition:
    """``name = chain`` or ``name(p, ...) = chain``."""

    name: str
    params: tuple[Param, ...]
    body: Chain
    span: Span = _span()
    name_span: Span = _span()


@dataclass(frozen=True)
class Variable:
    """``$name = value``: the value of ``$name`` unless the user sets it (``--var``)."""

    name: str
    value: Value
    span: Span = _span()
    name_span: Span = _span()


@dataclass(frozen=True)
class File:
    """A whole ADL text: variable defaults, block definitions and at most one bare network
    chain."""

    definitions: tuple[Definition, ...] = ()
    network: Chain | None = None
    span: Span = _span()
    variables: tuple[Variable, ...] = ()

    def definition(self, name: str) -> Definition | None:
        for d in self.definitions:
            if d.name == name:
                return d
        return None
