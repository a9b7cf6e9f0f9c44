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
def _starts(batch: int, heads: int, per_row: int, per_head: int, device: torch.device) -> Tensor:
    """(B, H, 1): where each head's keys start, counted in value rows of the storage."""
    b = torch.arange(batch, device=device) * per_row
    h = torch.arange(heads, device=device) * per_head
    return (b.view(batch, 1, 1) + h.view(1, heads, 1)).contiguous()


def pick(scores: Tensor, v: Tensor) -> Tensor:
    """Eq. 11: the value of the largest score (the first of equal ones, as ``argmax``), per
    head and query. scores (B, H, T, S), v (B, H, S, d) -> (B, H, T, d). ``v`` may be a view
    of a larger buffer (a decoding cache, :class:`adl.nn.context.Prefix`): its rows are
    looked up where they lie, with no copy."""
    B, H, T, S = scores.shape
    index = scores.argmax(-1)  # (B, H, T); no values tensor, as max(-1) makes
    d = v.size(-1)
    rows = [v.stride(0) if B > 1 else 0, v.stride(1) if H > 1 else 0]
    if v.stride(-1) != 1 or (S > 1 and v.stride(-2) != d) or any(r % d for r in rows):
        v = v.contiguous()
        rows = [H * S * d, S * d]
    per_row, per_head = rows[0] // d, rows[1] // d
    index += _starts(B, H, per_row, per_head, v.device)
    flat = v.as_strided(((B - 1) * per_row + (H - 1) * per_head + S, d), (d, 1))
    return flat.index_select(0, index.view(-1)).view(B, H, T, d)


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
