"""Fixed encoder self-attention patterns (Raganato et al., 2020) plus learned heads."""

from __future__ import annotations

from functools import lru_cache

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from .. import patterns
from ..errors import InputError
from ..layers.fixed import SEVEN
from .attention import merge_heads, split_heads
from .base import Layer, implements
from .context import Context


@lru_cache(maxsize=256)
def _token_patterns(names: tuple[str, ...], length: int) -> Tensor:
    return torch.stack([patterns.fixed(p, length) for p in names])


@lru_cache(maxsize=4096)
def _word_patterns(names: tuple[str, ...], words: tuple[int, ...]) -> Tensor:
    return torch.stack([patterns.fixed_words(p, words) for p in names])


@implements("fixed_self_att")
class FixedSelfAttention(Layer):
    reads_src_words = False

    def __init__(
        self,
        d_in: int,
        patterns: list,
        learned: int,
        unit: str,
        num_hidden: int,
        att_num_hidden: int | None,
        dropout: float,
    ):
        super().__init__()
        self.names = tuple(patterns) or SEVEN
        self.learned, self.unit, self.dropout = learned, unit, dropout
        a = att_num_hidden if att_num_hidden is not None else num_hidden
        self.heads = len(self.names) + learned
        self.head = a // self.heads
        self.value = nn.Linear(d_in, a)
        if learned:
            self.qk = nn.Linear(d_in, 2 * learned * self.head)
        self.out = nn.Linear(a, num_hidden)
        self.reads_src_words = unit == "word"

    def weights(self, batch: int, length: int, pad: Tensor | None, words: Tensor | None) -> Tensor:
        """(B, P, T, T) fixed weights for each sentence of the batch (zero over padding)."""
        lengths = [length] * batch if pad is None else (~pad).sum(1).tolist()
        out = torch.zeros(len(lengths), len(self.names), length, length)
        for b, n in enumerate(lengths):
            if self.unit == "word":
                if words is None:
                    raise InputError(
                        "fixed_self_att(unit=word) needs the source's word ids: "
                        "pass src_words= to the model"
                    )
                w = _word_patterns(self.names, tuple(words[b, :n].tolist()))
            else:
                w = _token_patterns(self.names, n)
            out[b, :, :n, :n] = w
        return out

    def forward(self, x: Tensor, ctx: Context) -> Tensor:
        B, T, _ = x.shape
        v = split_heads(self.value(x), self.heads)  # (B, H, T, d)
        P = len(self.names)
        w = self.weights(B, T, ctx.pad, ctx.extra.get("words")).to(x.device, x.dtype)
        fixed = w @ v[:, :P]  # fixed weights times values
        parts, heads = [fixed], [w]
        if self.learned:
            q, k = (split_heads(t, self.learned) for t in self.qk(x).chunk(2, dim=-1))
            p = self.dropout if self.training else 0.0
            mask = ctx.key_padding()
            if ctx.record is not None:
                scores = (q @ k.transpose(-1, -2)) / q.size(-1) ** 0.5
                if mask is not None:
                    scores = scores.masked_fill(~mask, float("-inf"))
                heads.append(scores.softmax(-1))
            parts.append(
                F.scaled_dot_product_attention(q, k, v[:, P:], attn_mask=mask, dropout_p=p)
            )
        if ctx.record is not None:  # fixed heads, then learned
            ctx.record_attention(self, "self", torch.cat(heads, dim=1))
        return self.out(merge_heads(torch.cat(parts, dim=1)))
