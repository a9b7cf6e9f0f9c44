"""Modules for checked layers: the implementation registry and the builder.

Each layer of the language has a module class registered with ``@implements("name")``. By
default the builder calls ``cls(d_in, **arguments)`` with the layer's bound arguments (its
sub-chains already built), so a module's constructor mirrors its rule's signature in
:mod:`adl.layers`; a class that needs more (its role, the source size) overrides ``build``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from torch import Tensor, nn

from ..analysis.pairs import encoder_level
from ..analysis.program import CheckedChain, Node
from ..plugins import MODULES_GROUP, NameClash, PluginError
from ..plugins import load as load_plugins
from ..registry import LayerSpec, Refusal
from .context import Context

IMPLEMENTATIONS: dict[str, type[Layer]] = {}


def implements(name: str) -> Callable[[type[Layer]], type[Layer]]:
    """Register the module class of layer ``name`` (the layer's rule is in adl/layers/, or
    in a plugin's module of the ``adl.layers`` entry-point group)."""

    def register(cls: type[Layer]) -> type[Layer]:
        if name in IMPLEMENTATIONS:
            taken = IMPLEMENTATIONS[name]
            raise NameClash(
                f"layer '{name}' already has a module: {taken.__module__}.{taken.__qualname__}"
            )
        IMPLEMENTATIONS[name] = cls
        return cls

    return register


def implementation(spec: LayerSpec) -> type[Layer]:
    """The module class of a layer, the plugins' modules (entry-point group ``adl.nn``)
    loaded first; a plugin's layer without one is a :class:`PluginError`."""
    load_plugins(MODULES_GROUP)
    try:
        return IMPLEMENTATIONS[spec.name]
    except KeyError:
        if spec.plugin:
            raise PluginError(
                f"{spec.plugin}: layer '{spec.name}' has no module: register one with "
                f"@adl.nn.implements({spec.name!r}) in a module of the '{MODULES_GROUP}' "
                "entry-point group"
            ) from None
        raise NotImplementedError(f"no module implements layer '{spec.name}'") from None


class Layer(nn.Module):
    """A layer module: ``forward(x, ctx)`` with x of shape (B, T, D).

    A layer that attends to the source gets ``source_d`` (the encoder's output size) and
    ``level`` (which encoder state it reads, from its ``encoder_block`` argument)."""

    position: str = ""  # where it is built: "encoder 2[3].1 ffl" (set by the builder)
    # whether it reads the source (its rule's attends_source; set by the builder)
    attends_source: bool = False
    # whether a decoding step may give it the source as one row per sentence, shared by the
    # sentence's decoder rows (adl.nn.context.Memory.group): a beam's hypotheses then share
    # their sentence's source keys and values instead of each holding a copy
    shares_source: bool = False

    @classmethod
    def build(cls, node: Node, b: Builder) -> Layer:
        args = b.arguments(node)
        if node.spec.attends_source:
            args["level"] = b.encoder_level(node, args.pop("encoder_block"))
            args["source_d"] = b.source_d
        return cls(node.d_in, **args)

    def forward(self, x: Tensor, ctx: Context) -> Tensor:  # pragma: no cover - abstract
        raise NotImplementedError


class Chain(Layer):
    """``l1 -> l2 -> ... -> ln``."""

    def __init__(self, layers: list[nn.Module]):
        super().__init__()
        self.layers = nn.ModuleList(layers)

    def forward(self, x: Tensor, ctx: Context) -> Tensor:
        for layer in self.layers:
            x = layer(x, ctx)
        return x


@dataclass
class Builder:
    """Builds the modules of one checked network.

    ``block`` is the copy of the network's top-level ``repeat`` being built (1-based), which
    source attention needs for ``encoder_block=increasing/decreasing``; ``encoder_blocks`` is
    the number of copies of the encoder's top-level repeat."""

    role: str
    source_d: int
    encoder_blocks: int = 0
    blocks: int = 0
    block: int | None = None
    path: str = ""  # position of the layer being built
    length_ratio: float | None = None  # the data's mean source/target length ratio
    top_repeat: Node | None = None
    problems: list[tuple[Node, str, str | None]] = field(default_factory=list)

    def network(self, chain: CheckedChain) -> Chain:
        self.top_repeat = chain.top_repeat
        if self.top_repeat is not None:
            self.blocks = self.top_repeat.args["count"]
        self.path = ""
        return self.chain(chain)

    def chain(self, chain: CheckedChain) -> Chain:
        """The modules of a chain; each knows its position (``2[3].1.1``: layer 1 of layer 1
        of the third copy of layer 2), as ``adl compile --summary`` numbers them."""
        outer = self.path
        layers: list[nn.Module] = []
        for i, node in enumerate(chain.nodes, 1):
            self.path = f"{outer}{i}"
            layers.append(self.node(node))
        self.path = outer
        return Chain(layers)

    def node(self, node: Node) -> Layer:
        cls = implementation(node.spec)
        here = self.path
        layer = cls.build(node, self)
        layer.position = f"{self.role} {here} {node.spec.name}"
        layer.attends_source = node.spec.attends_source
        return layer

    def arguments(self, node: Node) -> dict[str, Any]:
        """The layer's arguments with its sub-chains built."""
        out = {}
        chains: list[Any] = [
            c
            for p in node.spec.params
            if p.is_chain
            for c in (node.args.get(p.name) or [] if p.variadic else [node.args.get(p.name)])
        ]
        for p in node.spec.params:
            if p.name not in node.args:
                continue
            value = node.args[p.name]
            if p.is_chain:
                value = (
                    [self.subchain(c, chains) for c in value]
                    if p.variadic
                    else self.subchain(value, chains)
                )
            out[p.name] = value
        return out

    def subchain(
        self, chain: CheckedChain, siblings: list[CheckedChain], copy: int | None = None
    ) -> Chain:
        """A sub-chain, numbered like the summary: ``2.1`` (one chain), ``2.3.1`` (the third
        of several), ``2[3].1`` (the third copy of a repeat)."""
        index = next(i for i, c in enumerate(siblings, 1) if c is chain)
        suffix = f"[{copy}]" if copy is not None else (f".{index}" if len(siblings) > 1 else "")
        outer = self.path
        self.path = f"{outer}{suffix}."
        try:
            return self.chain(chain)
        finally:
            self.path = outer

    def refuse(self, node: Node, message: str, hint: str | None = None) -> None:
        """A problem that only the whole model reveals (reported as an ADL error)."""
        self.problems.append((node, message, hint))

    def encoder_level(self, node: Node, block: int | str) -> int | None:
        """Which encoder state a source attention reads: None for the output (``top``), else the
        index into U^0 .. U^n (the input of the encoder's top-level repeat, then each copy)."""
        try:
            return encoder_level(block, self.encoder_blocks, self.block, self.blocks)
        except Refusal as exc:
            self.refuse(node, str(exc), exc.hint)
            return None
