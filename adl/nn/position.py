"""Positional embeddings: ``pos`` (fixed sinusoids) and ``learn_pos``."""

from __future__ import annotations

import math

import torch
from torch import Tensor, nn

from ..errors import InputError
from .base import Layer, implements
from .context import Context
from .dropout import Dropout


def sinusoids(positions: Tensor, d: int) -> Tensor:
    """p_{t,2j} = sin(t / 10000^{2j/d}), p_{t,2j+1} = cos(t / 10000^{2j/d}); shape (..., d)."""
    j = torch.arange(0, d, 2, device=positions.device, dtype=torch.float32)
    angle = positions.to(torch.float32).unsqueeze(-1) / torch.pow(10000.0, j / d)
    out = torch.empty(*positions.shape, d, device=positions.device)
    out[..., 0::2] = torch.sin(angle)
    out[..., 1::2] = torch.cos(angle)
    return out


@implements("pos")
class SinusoidalPositions(Layer):
    def __init__(self, d_in: int, dropout: float, scale_inputs: bool, num_embed: int | None):
        super().__init__()
        self.d = d_in
        self.scale = math.sqrt(d_in) if scale_inputs else 1.0
        self.drop = Dropout(dropout)
        # decoding: the sinusoids of each step, made once (see ``steps``)
        self.made: dict[tuple[int, int, torch.device, torch.dtype], Tensor] = {}
        # a static cache's steps: the sinusoids of every position up to its capacity
        self.tables: dict[tuple[torch.device, torch.dtype], Tensor] = {}

    def forward(self, x: Tensor, ctx: Context) -> Tensor:
        state = ctx.state
        if state is not None and ctx.positions is None and not state.static:
            p = self.steps(ctx, x)  # (1, T, D)
        elif state is not None and ctx.positions is None and state.capacity is not None:
            table = self.table(state.capacity, x)  # a static cache's steps: rows of a table
            p = table[ctx.position_ids(x.size(1), x.device)]  # (1, T, D)
        else:
            p = sinusoids(ctx.position_ids(x.size(1), x.device), self.d).to(x.dtype)  # (B|1, T, D)
        return self.drop(self.scale * x + p)  # dropout(√d · h_t + p_t)

    def table(self, positions: int, x: Tensor) -> Tensor:
        """The sinusoids of positions 0 .. at least ``positions`` - 1, (N, D), for a step of
        a static cache (:mod:`adl.runtime.decode.compiled`), whose position is a tensor: one
        row a position, made as :meth:`steps` makes it (the same values, bit for bit), so
        that a compiled step indexes a table where it computed a power, a sine and a cosine
        of every row at every step. N grows by doubling; the table is made outside the
        compiled graph, at a batch's first step, which runs eagerly; it has
        :data:`TABLE_ROWS` rows at least, as its length is a shape the graph is made for
        (a longer table: another graph)."""
        key = (x.device, x.dtype)
        found = self.tables.get(key)
        if found is None or found.size(0) < positions:
            rows = max(TABLE_ROWS, 1 << (positions - 1).bit_length())
            made = [sinusoids(torch.tensor([[i]], device=x.device), self.d) for i in range(rows)]
            found = torch.cat(made, 1)[0].to(x.dtype)
            self.tables[key] = found
        return found

    def steps(self, ctx: Context, x: Tensor) -> Tensor:
        """The sinusoids of a decoding step's positions, computed by the same operations as
        a step computed them before (so the same values, bit for bit) but once per position
        for the module's life rather than at every step of every batch (a dozen small
        operators a step: bench/decode_profile.py)."""
        key = (ctx.offset, x.size(1), x.device, x.dtype)
        found = self.made.get(key)
        if found is None:
            if len(self.made) >= STEPS_KEPT:
                self.made.clear()
            found = sinusoids(ctx.position_ids(x.size(1), x.device), self.d).to(x.dtype)
            self.made[key] = found
        return found


STEPS_KEPT = 4096  # decoding steps' sinusoids a layer keeps (a few MB at d_model 512)
# a static cache's table of sinusoids has this many positions at least (2 MB at d_model
# 512): every translation of a source of up to a few hundred tokens, one graph for all
TABLE_ROWS = 1024


@implements("learn_pos")
class LearnedPositions(Layer):
    def __init__(self, d_in: int, max_seq_len: int, dropout: float, num_embed: int | None):
        super().__init__()
        self.embed = nn.Embedding(max_seq_len, d_in)
        self.drop = Dropout(dropout)

    def forward(self, x: Tensor, ctx: Context) -> Tensor:
        positions = ctx.position_ids(x.size(1), x.device)
        limit = self.embed.num_embeddings
        if ctx.state is not None and ctx.state.static:
            return self.drop(x + self.embed(positions))  # the compiled step checks the reach
        if ctx.positions is None:  # offset + t: known on the host (no device read a step)
            reach = ctx.offset + x.size(1)
        else:
            reach = int(positions.max()) + 1 if positions.numel() else 0
        if reach > limit:
            raise InputError(
                f"learn_pos(max_seq_len={limit}) embeds sequences of at most {limit} "
                f"positions; this input has {reach} (filter longer lines or raise max_seq_len)",
                limit=limit,
                length=reach,
            )
        return self.drop(x + self.embed(positions))  # dropout(h_t + P_t)


def learned_limit(module: nn.Module) -> int | None:
    """The most positions the ``learn_pos`` layers in ``module`` embed (the least of them),
    or None where none limits it."""
    sizes = [m.embed.num_embeddings for m in module.modules() if isinstance(m, LearnedPositions)]
    return min(sizes) if sizes else None
