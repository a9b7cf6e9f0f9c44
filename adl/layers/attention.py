"""Attention layers of Domhan 2018 §2.3: dot-product (multi-head) and MLP attention.

Self-attention is always spelled ``*_self_att``; ``mh_dot_src_att``, ``dot_src_att`` and
``mlp_src_att`` attend to the encoder states U. Sockeye's ``mh_dot_att`` and the paper's
chain spelling ``mlp_att`` are the source attentions too.
"""

from __future__ import annotations

from typing import Annotated, Literal

from ..limits import MAX_HEADS, MAX_LAYERS
from ..registry import LayerInput, LayerOutput, Refusal, layer
from ..types import (
    DROPOUT,
    HEADS,
    INPUT,
    Count,
    CountType,
    IntType,
    PositiveFloatType,
    Rate,
    Size,
    aka,
)

EncoderBlock = Annotated[
    Annotated[int, IntType(-MAX_LAYERS, MAX_LAYERS)] | Literal["top", "increasing", "decreasing"],
    aka("block", "encoder_layer"),
]
Heads = Annotated[int, CountType(MAX_HEADS), aka("h", "num_heads")]
# softmax(Q K^T / √s): a scale outside this range makes the scores overflow or vanish
Scale = Annotated[Annotated[float, PositiveFloatType(0.01, 1e6)] | None, aka("scale")]
AttSize = Annotated[Size | None, aka("d_p", "att_size")]
AttDropout = Annotated[Rate, aka("dropout_attention")]


def att_size(h: LayerInput, heads: int, num_hidden: int, att_num_hidden: int | None) -> int:
    """The projected size d_p, split over the heads."""
    a = att_num_hidden if att_num_hidden is not None else num_hidden
    if a % heads:
        at = "att_num_hidden" if att_num_hidden is not None else "heads"
        raise Refusal(
            f"{heads} heads do not divide the attention size {a}",
            at=at,
            hint=f"choose a number of heads that divides {a}",
        )
    return a


def dot_att_params(d_q: int, d_kv: int, a: int, out: int) -> int:
    """Q, K, V projections to size a (with biases) and the output projection a -> out."""
    return (d_q * a + a) + 2 * (d_kv * a + a) + (a * out + out)


def dot_att(
    h: LayerInput, d_kv: int, heads: int, num_hidden: int, att_num_hidden: int | None
) -> LayerOutput:
    """The rule of every dot-product attention, soft or hard: queries from the input, keys
    and values of size ``d_kv`` (the input's for self-attention, the source's otherwise)."""
    a = att_size(h, heads, num_hidden, att_num_hidden)
    return LayerOutput(num_hidden, dot_att_params(h.d, d_kv, a, num_hidden))


Window = Annotated[Count | None, aka("local")]


@layer()
def mh_dot_self_att(
    h: LayerInput,
    /,
    heads: Heads = HEADS,
    s: Scale = None,
    num_hidden: Size = INPUT,
    att_num_hidden: AttSize = None,
    dropout: AttDropout = DROPOUT,
    window: Window = None,
) -> LayerOutput:
    """Multi-head scaled dot-product self-attention: ``softmax(Q K^T / √s) V`` per head over
    ``H W^Q, H W^K, H W^V``, heads concatenated and projected. Masked in a decoder; in a
    joint network source positions see the source and target positions are causal.

    Size: ``num_hidden`` (default: the input size).

    Args:
        heads: number of heads h.
        s: the scale; derived: the head size d_p/h.
        num_hidden: output size.
        att_num_hidden: projected size d_p of queries, keys and values; derived: num_hidden.
        dropout: dropout on the attention weights.
        window: local attention (Fonollosa et al. 2019): a band of k positions, centred in
            an encoder (and on the source of a joint network), the previous k positions
            (the query included) in a decoder; derived: no band.
    """
    return dot_att(h, h.d, heads, num_hidden, att_num_hidden)


@layer(aliases=("mh_dot_att",), attends_source=True)
def mh_dot_src_att(
    h: LayerInput,
    /,
    heads: Heads = HEADS,
    s: Scale = None,
    num_hidden: Size = INPUT,
    att_num_hidden: AttSize = None,
    dropout: AttDropout = DROPOUT,
    encoder_block: EncoderBlock = "top",
) -> LayerOutput:
    """Multi-head dot-product attention over the source: ``mh_dot_att(H, U, U, h, s)``.

    Size: ``num_hidden`` (default: the input size).

    Args:
        heads: number of heads h.
        s: the scale; derived: the head size d_p/h.
        num_hidden: output size.
        att_num_hidden: projected size d_p; derived: num_hidden.
        dropout: dropout on the attention weights.
        encoder_block: which encoder states U to attend to: ``top`` (the encoder's output),
            an encoder block index, ``increasing`` (the block at this decoder block's level)
            or ``decreasing`` (top block first, then lower ones).
    """
    return dot_att(h, h.source_d, heads, num_hidden, att_num_hidden)


@layer(attends_source=True)
def dot_src_att(
    h: LayerInput,
    /,
    s: Scale = None,
    num_hidden: Size = INPUT,
    dropout: AttDropout = DROPOUT,
    encoder_block: EncoderBlock = "top",
) -> LayerOutput:
    """Single-head dot-product attention over the source: ``mh_dot_att(H, U, U, 1, s)``;
    ``s=1`` is ConvS2S's unscaled attention.

    Size: ``num_hidden`` (default: the input size).

    Args:
        s: the scale; derived: the attention size.
        num_hidden: output size (and projected size).
        dropout: dropout on the attention weights.
        encoder_block: which encoder states to attend to (see ``mh_dot_src_att``).
    """
    return dot_att(h, h.source_d, 1, num_hidden, None)


@layer(aliases=("mlp_att",), attends_source=True)
def mlp_src_att(
    h: LayerInput,
    /,
    num_hidden: Annotated[Size | None, aka("att_num_hidden")] = None,
    dropout: AttDropout = 0.0,
    encoder_block: EncoderBlock = "top",
) -> LayerOutput:
    """MLP (Bahdanau) attention over the source: ``softmax(S) U`` with
    ``S_ij = w_o^T tanh(W_q q_i + W_k k_j)``.

    Size: the encoder's output size (the context is a mix of source states).

    Args:
        num_hidden: size of the scoring layer; derived: the input size.
        dropout: dropout on the attention weights.
        encoder_block: which encoder states to attend to (see ``mh_dot_src_att``).
    """
    a = num_hidden if num_hidden is not None else h.d
    return LayerOutput(h.source_d, (h.d * a + a) + h.source_d * a + a)
