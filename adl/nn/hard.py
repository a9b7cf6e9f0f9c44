"""Hard retrieval attention (Xu et al., 2020).

Training samples one key per (batch, head, query) from the attention probabilities (by the
Gumbel-max trick) and returns that key's value; the backward pass is straight-through (:class:`HardRetrieval`).
Inference skips the softmax: the argmax of the scores picks the value.
"""
from __future__ import annotations

import torch
from torch import Tensor

from .attention import SelfAttention, SourceAttention, causal_mask, merge_heads
from .base import implements


class Retrieving:
    """What a hard layer records: the one position each head takes (one-hot) in inference."""

    def probabilities(self, q: Tensor, k: Tensor, mask: Tensor | None = None,
                      causal: bool = False) -> Tensor:
        p = super().probabilities(q, k, mask, causal)
        if self.training:
            return p
        return torch.nn.functional.one_hot(p.argmax(-1), p.size(-1)).to(p.dtype)


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
    # One key per (batch, head, query) drawn from softmax(scores), by the Gumbel-max trick:
    # argmax(scores + Gumbel noise) has exactly that distribution, in one vectorised pass.
    with torch.no_grad():
        gumbel = -torch.empty_like(scores).exponential_().log()
        idx = (scores + gumbel).argmax(-1)
    return HardRetrieval.apply(probs, v, idx)


@implements("hard_self_att")
class HardSelfAttention(Retrieving, SelfAttention):
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
class HardSourceAttention(Retrieving, SourceAttention):
    def __init__(self, d_in: int, source_d: int, level: int | None, heads: int,
                 s: float | None, num_hidden: int, att_num_hidden: int | None):
        super().__init__(d_in, source_d, level, heads, s, num_hidden, att_num_hidden, 0.0)

    def attend(self, q: Tensor, k: Tensor, v: Tensor, mask: Tensor | None = None,
               causal: bool = False) -> Tensor:
        scores = (q @ k.transpose(-1, -2)) * self.scale
        return self.out(merge_heads(retrieve(scores, v, mask, self.training)))
