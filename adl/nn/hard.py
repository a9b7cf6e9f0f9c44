"""Hard retrieval attention (Xu et al., 2020).

Training samples one key per (batch, head, query) from the attention probabilities and
returns that key's value; the backward pass is straight-through (:class:`HardRetrieval`).
Inference skips the softmax: the argmax of the scores picks the value.
"""
from __future__ import annotations

import torch
from torch import Tensor, nn

from ..check.program import Node
from .attention import SelfAttention, SourceAttention, causal_mask, encoder_level, merge_heads, split_heads
from .base import Builder, implements
from .context import Context


class HardRetrieval(torch.autograd.Function):
    """out[i] = V[idx[i]]; backward as if out = P V with P one-hot:
    grad P = G V^T (straight through to the probabilities), grad V[j] = Σ_{i: idx_i = j} G[i]."""

    @staticmethod
    def forward(ctx, probs: Tensor, v: Tensor, idx: Tensor) -> Tensor:
        ctx.save_for_backward(v, idx)
        ctx.keys = probs.size(-1)
        return torch.gather(v, -2, idx.unsqueeze(-1).expand(*idx.shape, v.size(-1)))

    @staticmethod
    def backward(ctx, grad: Tensor):
        v, idx = ctx.saved_tensors
        grad_probs = grad @ v.transpose(-1, -2)                              # G V^T
        grad_v = torch.zeros_like(v).scatter_add_(
            -2, idx.unsqueeze(-1).expand(*idx.shape, v.size(-1)), grad)      # to sampled rows
        return grad_probs, grad_v, None


def retrieve(scores: Tensor, v: Tensor, mask: Tensor | None, training: bool) -> Tensor:
    """(B, H, T, S) scores -> (B, H, T, d): one value per head and query."""
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    if not training:
        idx = scores.argmax(-1)                                # Eq. 11: argmax of Q K^T
        return torch.gather(v, -2, idx.unsqueeze(-1).expand(*idx.shape, v.size(-1)))
    probs = scores.softmax(-1)
    idx = torch.multinomial(probs.detach().reshape(-1, probs.size(-1)), 1).view(probs.shape[:-1])
    return HardRetrieval.apply(probs, v, idx)


@implements("hard_self_att")
class HardSelfAttention(SelfAttention):
    def __init__(self, d_in: int, heads: int, s: float | None, num_hidden: int,
                 att_num_hidden: int | None):
        super().__init__(d_in, heads, s, num_hidden, att_num_hidden, dropout=0.0)

    def attend(self, q: Tensor, k: Tensor, v: Tensor, mask: Tensor | None = None,
               causal: bool = False) -> Tensor:
        if causal:
            mask = causal_mask(q.size(2), k.size(2), k.size(2) - q.size(2), q.device)
        scores = (q @ k.transpose(-1, -2)) * self.scale        # Q K^T / √s
        return self.out(merge_heads(retrieve(scores, v, mask, self.training)))


@implements("hard_src_att")
class HardSourceAttention(SourceAttention):
    def __init__(self, d_in: int, source_d: int, level: int | None, heads: int,
                 s: float | None, num_hidden: int, att_num_hidden: int | None):
        super().__init__(d_in, source_d, level, heads, s, num_hidden, att_num_hidden, 0.0)

    @classmethod
    def build(cls, node: Node, b: Builder) -> "HardSourceAttention":
        args = b.arguments(node)
        level = encoder_level(node, b, args.pop("encoder_block"))
        return cls(node.d_in, b.source_d, level, **args)

    def attend(self, q: Tensor, k: Tensor, v: Tensor, mask: Tensor | None = None,
               causal: bool = False) -> Tensor:
        scores = (q @ k.transpose(-1, -2)) * self.scale
        return self.out(merge_heads(retrieve(scores, v, mask, self.training)))
