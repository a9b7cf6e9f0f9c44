"""Combinators: res, res_d, res_nd, highway, repeat, concat."""

from __future__ import annotations

import torch
from torch import Tensor, nn

from ..analysis.program import Node
from .base import Builder, Chain, Layer, implements
from .context import Context
from .dropout import Dropout


@implements("res")
class Residual(Layer):
    def __init__(self, d_in: int, chain: Chain):
        super().__init__()
        self.chain = chain

    def forward(self, x: Tensor, ctx: Context) -> Tensor:
        return x + self.chain(x, ctx)  # h + l(h)


@implements("res_d")
class ResidualDropout(Layer):
    def __init__(self, d_in: int, chain: Chain, dropout: float):
        super().__init__()
        self.chain = chain
        self.drop = Dropout(dropout)

    def forward(self, x: Tensor, ctx: Context) -> Tensor:
        return x + self.drop(self.chain(x, ctx))  # res(l -> dropout)


@implements("res_nd")
class PreNormResidual(Layer):
    def __init__(self, d_in: int, chain: Chain, dropout: float):
        super().__init__()
        self.norm = nn.LayerNorm(d_in)
        self.chain = chain
        self.drop = Dropout(dropout)

    def forward(self, x: Tensor, ctx: Context) -> Tensor:
        return x + self.drop(self.chain(self.norm(x), ctx))  # res(norm -> l -> dropout)


@implements("highway")
class Highway(Layer):
    def __init__(self, d_in: int, chain: Chain):
        super().__init__()
        self.gate = nn.Linear(d_in, d_in)
        self.chain = chain

    def forward(self, x: Tensor, ctx: Context) -> Tensor:
        g = torch.sigmoid(self.gate(x))
        return g * self.chain(x, ctx) + (1 - g) * x  # g ⊗ l(h) + (1 − g) ⊗ h


@implements("concat")
class Concat(Layer):
    def __init__(self, d_in: int, chains: list[Chain]):
        super().__init__()
        self.chains = nn.ModuleList(chains)

    def forward(self, x: Tensor, ctx: Context) -> Tensor:
        return torch.cat([c(x, ctx) for c in self.chains], dim=-1)  # [l_1(h); ...; l_p(h)]


@implements("repeat")
class Repeat(Layer):
    """n copies with separate weights. The network's top-level repeat records U^0..U^n, the
    block states an encoder offers to source attention."""

    def __init__(self, d_in: int, copies: list[Chain], record: bool = False):
        super().__init__()
        self.copies = nn.ModuleList(copies)
        self.record = record

    @classmethod
    def build(cls, node: Node, b: Builder) -> Repeat:
        top = node is b.top_repeat
        copies = []
        body = node.args["chain"]
        for i in range(node.args["count"]):
            if top:
                b.block = i + 1
            copies.append(b.subchain(body, [body], copy=i + 1))
        if top:
            b.block = None
        return cls(node.d_in, copies, record=top)

    def forward(self, x: Tensor, ctx: Context) -> Tensor:
        blocks = ctx.blocks if self.record else None
        if blocks is not None:
            blocks.append(x)  # U^0
        for chain in self.copies:
            x = chain(x, ctx)
            if blocks is not None:
                blocks.append(x)  # U^i
        return x
