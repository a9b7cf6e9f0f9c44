"""Every name of a parsed ADL file, where it is and what it stands for: the index behind
hover, go to definition, find references and document symbols.

A name is a choice of a space (``{a | b}``: its braces and bars; hover shows the space's
size), a layer of the registry, a named block (its definition or a use), a block's
parameter (declared in the block's head, used in its body, or given as ``key=`` where the
block is used), a layer's keyword argument, or a ``$variable`` (its default or a use). Names
resolve as the checker resolves them: inside a block its parameters hide blocks and layers
of the same name; a parameter's default is read outside the block.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Literal

from ..registry import REGISTRY
from ..source import Span
from ..syntax import ast

Kind = Literal["layer", "block", "param", "keyword", "var", "unknown", "choice"]


@dataclass(frozen=True)
class Occurrence:
    kind: Kind
    name: str  # a $variable's name without the '$'
    span: Span  # the name's span ('$' included for a variable)
    declares: bool = False  # the definition itself: a block's head, a parameter, `$x = ...`
    owner: str | None = None  # a parameter's block (kind "param", or "keyword" of a block use)
    call: ast.Call | None = None  # the layer or block use, or the call a keyword belongs to
    callee: str | None = None  # a keyword's layer or block (the name of ``call``)

    def key(self) -> tuple[str, str, str | None]:
        """What the name refers to: occurrences with equal keys are the same thing."""
        kind = "param" if self.kind == "keyword" and self.owner is not None else self.kind
        return kind, self.name, self.owner if kind in ("param", "keyword") else None


def occurrences(tree: ast.File) -> list[Occurrence]:
    """All names of the file, in the order of the text."""
    blocks = {d.name: d for d in tree.definitions}
    walker = _Walker(blocks)
    found: list[Occurrence] = []
    for v in tree.variables:
        found.append(Occurrence("var", v.name, v.name_span, declares=True))
        found += walker.value(v.value, None, frozenset())
    for d in tree.definitions:
        found.append(Occurrence("block", d.name, d.name_span, declares=True, owner=None))
        params = frozenset(p.name for p in d.params)
        for p in d.params:
            name_span = Span(p.span.start, p.span.start + len(p.name))
            found.append(Occurrence("param", p.name, name_span, declares=True, owner=d.name))
            if p.default is not None:
                found += walker.value(p.default, None, frozenset())
        found += walker.chain(d.body, d.name, params)
    if tree.network is not None:
        found += walker.chain(tree.network, None, frozenset())
    return sorted(found, key=lambda o: o.span.start)


def at(found: list[Occurrence], offset: int) -> Occurrence | None:
    """The name at an offset (a cursor right after a name is on it)."""
    hits = [o for o in found if o.span.start <= offset <= o.span.end]
    return min(hits, key=lambda o: o.span.end - o.span.start) if hits else None


def declaration(found: list[Occurrence], name: Occurrence) -> Occurrence | None:
    """Where the name is defined (a block's head, a parameter, a variable's default)."""
    return next((o for o in found if o.declares and o.key() == name.key()), None)


def references(
    found: list[Occurrence], name: Occurrence, with_declaration: bool
) -> list[Occurrence]:
    """Every occurrence of what ``name`` refers to, in text order (none for a layer's
    keyword argument, which refers to nothing of the file)."""
    if name.kind == "keyword" and name.owner is None:
        return []
    return [o for o in found if o.key() == name.key() and (with_declaration or not o.declares)]


class _Walker:
    def __init__(self, blocks: dict[str, ast.Definition]):
        self.blocks = blocks

    def chain(
        self, chain: ast.Chain, block: str | None, params: frozenset[str]
    ) -> Iterator[Occurrence]:
        for call in chain.layers:
            if isinstance(call, ast.Choice):
                yield Occurrence("choice", call.name, call.span)
                for option in call.options:
                    yield from self.value(option, block, params)
                continue
            yield Occurrence(
                self._kind(call.name, params),
                call.name,
                call.name_span,
                owner=block if call.name in params else None,
                call=call,
            )
            used = self.blocks.get(call.name) if call.name not in params else None
            for arg in call.args:
                if arg.key is not None:
                    yield Occurrence(
                        "keyword",
                        arg.key,
                        arg.key_span,
                        owner=used.name if used is not None else None,
                        call=call,
                        callee=call.name,
                    )
                yield from self.value(arg.value, block, params)

    def value(
        self, value: ast.Value, block: str | None, params: frozenset[str]
    ) -> Iterator[Occurrence]:
        if isinstance(value, ast.Chain):
            yield from self.chain(value, block, params)
        elif isinstance(value, ast.Var):
            yield Occurrence("var", value.name, value.span)
        elif isinstance(value, ast.NameRef):
            kind: Kind = "param" if value.name in params else "unknown"
            yield Occurrence(kind, value.name, value.span, owner=block if kind == "param" else None)
        elif isinstance(value, ast.Negate):
            yield from self.value(value.operand, block, params)
        elif isinstance(value, ast.BinOp):
            yield from self.value(value.left, block, params)
            yield from self.value(value.right, block, params)

    def _kind(self, name: str, params: frozenset[str]) -> Kind:
        if name in params:
            return "param"
        if name in self.blocks:
            return "block"
        return "layer" if name in REGISTRY else "unknown"
