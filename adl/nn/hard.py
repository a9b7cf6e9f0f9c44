"""Hard retrieval attention (Xu et al., 2020).

Training samples one key per (batch, head, query) from the attention probabilities (by the
Gumbel-max trick) and returns that key's value; the backward pass is straight-through (:class:`HardRetrieval`).
Inference skips the softmax: the argmax of the scores picks the value.

The layers share their weights' layout with the standard attention layers, so a model trained
one way decodes the other way (:func:`set_decode_attention`, Xu et al.'s Table 4).
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from ..errors import error
from .attention import DotAttention, SelfAttention, SourceAttention
from .base import implements

DECODE_MODES = ("soft", "hard")


def set_decode_attention(model: nn.Module, mode: str | None) -> None:
    """Decode ``model`` with hard retrieval (``"hard"``) or standard softmax attention
    (``"soft"``) in every dot-product attention of its decoder, self and source, whatever
    they were trained with; ``None`` decodes each as written. Training is unchanged, and so
    is the encoder (Xu et al. 2020, Table 4: soft-trained models decoded hard and the
    reverse). Raises :class:`adl.ADLError` for another mode or a joint model."""
    if mode is not None and mode not in DECODE_MODES:
        raise error(f"decode attention must be soft or hard, not {mode!r}")
    decoder = getattr(model, "decoder", None)
    if decoder is None:
        if mode is None:
            return
        raise error(
            "decode attention modes apply to encoder-decoder models (the decoder's "
            "attention); a joint model has no separate decoder"
        )
    for module in decoder.modules():
        if isinstance(module, DotAttention):
            module.decode_hard = None if mode is None else mode == "hard"


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


def retrieve(scores: Tensor, v: Tensor, mask: Tensor | None, training: bool) -> Tensor:
    """(B, H, T, S) scores -> (B, H, T, d): one value per head and query."""
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    if not training:
        idx = scores.argmax(-1)  # Eq. 11: argmax of Q K^T
        return torch.gather(v, -2, idx.unsqueeze(-1).expand(*idx.shape, v.size(-1)))
    probs = scores.softmax(-1)
    # One key per (batch, head, query) drawn from softmax(scores), by the Gumbel-max trick:
    # argmax(scores + Gumbel noise) has exactly that distribution, in one vectorised pass.
    with torch.no_grad():
        gumbel = -torch.empty_like(scores).exponential_().log()
        idx = (scores + gumbel).argmax(-1)
    return HardRetrieval.apply(probs, v, idx)


@implements("hard_self_att")
class HardSelfAttention(SelfAttention):
    hard = True  # retrieves (DotAttention.attend); the weights are SelfAttention's

    def __init__(
        self, d_in: int, heads: int, s: float | None, num_hidden: int, att_num_hidden: int | None
    ):
        super().__init__(d_in, heads, s, num_hidden, att_num_hidden, dropout=0.0)


@implements("hard_src_att")
class HardSourceAttention(SourceAttention):
    hard = True  # retrieves (DotAttention.attend); the weights are SourceAttention's

    def __init__(
        self,
        d_in: int,
        source_d: int,
        level: int | None,
        heads: int,
        s: float | None,
        num_hidden: int,
        att_num_hidden: int | None,
    ):
        super().__init__(d_in, source_d, level, heads, s, num_hidden, att_num_hidden, 0.0)
