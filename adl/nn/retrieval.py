"""Hard retrieval (Xu et al., 2020): one value per head and query instead of a weighted sum.

Training samples one key per (batch, head, query) from the attention probabilities (by the
Gumbel-max trick) and returns that key's value; the backward pass is straight-through
(:class:`HardRetrieval`). Inference skips the softmax: the largest score picks the value
(:func:`pick`), found with one reduction and one row lookup, so that a decoding step costs
little more than its scores.
"""

from __future__ import annotations

from functools import lru_cache

import torch
from torch import Tensor


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
        grad_probs = grad @ v.transpose(-1, -2)  # G V^T
        grad_v = torch.zeros_like(v).scatter_add_(
            -2, idx.unsqueeze(-1).expand(*idx.shape, v.size(-1)), grad
        )  # to sampled rows
        return grad_probs, grad_v, None


@lru_cache(maxsize=64)
def _starts(batch: int, heads: int, keys: int, device: torch.device) -> Tensor:
    """(B, H, 1): where each head's keys start in the (B·H·S, d) rows of its values."""
    return torch.arange(0, batch * heads * keys, keys, device=device).view(batch, heads, 1)


def pick(scores: Tensor, v: Tensor) -> Tensor:
    """Eq. 11: the value of the largest score (the first of equal ones, as ``argmax``), per
    head and query. scores (B, H, T, S), v (B, H, S, d) -> (B, H, T, d)."""
    B, H, T, S = scores.shape
    index = scores.argmax(-1)  # (B, H, T); no values tensor, as max(-1) makes
    index += _starts(B, H, S, v.device)
    found = v.reshape(B * H * S, v.size(-1)).index_select(0, index.view(-1))
    return found.view(B, H, T, -1)


def retrieve(scores: Tensor, v: Tensor, mask: Tensor | None, training: bool) -> Tensor:
    """(B, H, T, S) scores -> (B, H, T, d): one value per head and query."""
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    if not training:
        return pick(scores, v)
    probs = scores.softmax(-1)
    # One key per (batch, head, query) drawn from softmax(scores), by the Gumbel-max trick:
    # argmax(scores + Gumbel noise) has exactly that distribution, in one vectorised pass.
    with torch.no_grad():
        gumbel = -torch.empty_like(scores).exponential_().log()
        idx = (scores + gumbel).argmax(-1)
    return HardRetrieval.apply(probs, v, idx)
