"""The checked program: every layer resolved, bound, sized and counted.

``adl.check`` returns a :class:`Program`; ``adl.build`` turns its networks into modules.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from ..errors import Diagnostic
from ..registry import Hyper, LayerSpec
from ..source import Source
from ..syntax import ast
from ..syntax.printer import text_hash, to_text

BYTES_PER_PARAMETER = 4  # float32


@dataclass
class Node:
    """One layer in a checked network."""

    spec: LayerSpec
    args: dict[str, Any]  # bound values, defaults filled; chains are CheckedChains
    call: ast.Call
    d_in: int
    d_out: int
    own_params: int = 0
    repeat: int = 1  # copies of the sub-chains (repeat's count)
    own_buffer_bytes: int = 0  # fixed tensors besides the parameters (e.g. a kernel)
    blocks: tuple[str, ...] = ()  # the blocks this layer was expanded from, outermost first
    given: tuple[str, ...] = ()  # the arguments written out (the rest are defaults)
    sure: bool = True  # false: sizes are a guess after an error

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def children(self) -> list[CheckedChain]:
        out: list[Any] = []
        for p in self.spec.params:
            if p.is_chain:
                value = self.args.get(p.name)
                out.extend(value if isinstance(value, (list, tuple)) else [value])
        return [c for c in out if isinstance(c, CheckedChain)]

    @property
    def params(self) -> int:
        """Parameters of this layer and everything inside it."""
        return self.own_params + self.repeat * sum(c.params for c in self.children)

    @property
    def bytes(self) -> int:
        """Memory estimate of this layer and everything inside it: float32 parameters and
        fixed tensors."""
        return (
            BYTES_PER_PARAMETER * self.own_params
            + self.own_buffer_bytes
            + self.repeat * sum(c.bytes for c in self.children)
        )

    @property
    def layers(self) -> int:
        """Modules built for this layer and everything inside it (repeat copies counted)."""
        return 1 + self.repeat * sum(c.layers for c in self.children)

    def label(self) -> str:
        """The layer with the arguments written for it, evaluated: ``ff(num_hidden=2048)``."""
        parts = []
        for p in self.spec.params:
            if p.name not in self.given or p.is_chain:
                continue
            v = self.args[p.name]
            text = _value(v)
            parts.append(text if p.required else f"{p.name}={text}")
        return f"{self.name}({', '.join(parts)})" if parts else self.name

    def plain_args(self) -> dict[str, Any]:
        """The non-chain arguments (what a module needs besides its sub-chains)."""
        return {
            p.name: self.args[p.name]
            for p in self.spec.params
            if not p.is_chain and p.name in self.args
        }


def _value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (list, tuple)):
        return ", ".join(_value(x) for x in v)
    if isinstance(v, float):
        return f"{v:g}"
    return str(v)


@dataclass
class CheckedChain:
    nodes: list[Node]
    d_in: int
    d_out: int
    span: Any = None

    @property
    def sure(self) -> bool:
        return all(n.sure for n in self.nodes)

    @property
    def params(self) -> int:
        return sum(n.params for n in self.nodes)

    @property
    def bytes(self) -> int:
        return sum(n.bytes for n in self.nodes)

    @property
    def layers(self) -> int:
        return sum(n.layers for n in self.nodes)

    def walk(self) -> Iterator[tuple[str, int, Node]]:
        """Every node with its position in the tree (``2.1.1``) and its depth."""
        yield from _walk(self, "", 0)

    def find(self, name: str) -> list[Node]:
        return [n for _, _, n in self.walk() if n.spec.name == name]

    @property
    def top_repeat(self) -> Node | None:
        """The chain's first ``repeat`` at the top level: its copies are the network's
        blocks (what ``encoder_block=`` counts)."""
        return next((n for n in self.nodes if n.spec.name == "repeat"), None)


def _walk(chain: CheckedChain, prefix: str, depth: int) -> Iterator[tuple[str, int, Node]]:
    for i, node in enumerate(chain.nodes, 1):
        pos = f"{prefix}{i}"
        yield pos, depth, node
        children = node.children
        for j, child in enumerate(children, 1):
            # Several sub-chains (concat) get their own level: 3.1.2 is layer 2 of chain 1.
            sub = f"{pos}.{j}." if len(children) > 1 else f"{pos}."
            yield from _walk(child, sub, depth + 1)


@dataclass
class CheckedNetwork:
    """One checked network: an encoder, a decoder or a joint network."""

    role: str
    chain: CheckedChain
    hyper: Hyper
    source_d: int
    name: str = ""  # the file's name, or the definition it came from

    @property
    def d_in(self) -> int:
        return self.hyper.d_model

    @property
    def d_out(self) -> int:
        return self.chain.d_out

    @property
    def params(self) -> int:
        return self.chain.params

    @property
    def bytes(self) -> int:
        """Memory estimate: float32 parameters and fixed tensors (embeddings not included)."""
        return self.chain.bytes

    @property
    def layers(self) -> int:
        """Layers built (every repeat copy counted)."""
        return self.chain.layers

    @property
    def attends_source(self) -> bool:
        return any(n.spec.attends_source for _, _, n in self.chain.walk())

    @property
    def blocks(self) -> int:
        """Copies of the network's top-level ``repeat``: the blocks an encoder offers to
        ``encoder_block=`` (0 without one)."""
        top = self.chain.top_repeat
        return top.args.get("count", 0) if top is not None else 0  # none: an earlier error

    @property
    def max_length(self) -> int | None:
        """The longest sequence the network takes (``learn_pos(max_seq_len=...)``), or None
        when nothing limits it."""
        limits = [n.args["max_seq_len"] for n in self.chain.find("learn_pos")]
        return min(limits) if limits else None


@dataclass
class Program:
    """A checked ADL file: its networks by role, its warnings and its canonical text."""

    source: Source
    tree: ast.File
    networks: dict[str, CheckedNetwork]
    warnings: list[Diagnostic] = field(default_factory=list)
    variables_read: frozenset[str] = frozenset()  # every $variable the check evaluated

    @property
    def canonical(self) -> str:
        return to_text(self.tree)

    @property
    def signature(self) -> str:
        return text_hash(self.tree)

    @property
    def network(self) -> CheckedNetwork:
        """The only network of a one-role file."""
        if len(self.networks) != 1:
            raise ValueError(
                f"{self.source.name} holds {len(self.networks)} networks: "
                f"{', '.join(self.networks)}; pick one from .networks"
            )
        return next(iter(self.networks.values()))

    def __getattr__(self, role: str) -> CheckedNetwork:
        if role in ("encoder", "decoder", "joint"):
            try:
                return self.networks[role]
            except KeyError:
                raise AttributeError(f"{self.source.name} defines no {role}") from None
        raise AttributeError(role)

    @property
    def params(self) -> int:
        return sum(n.params for n in self.networks.values())
