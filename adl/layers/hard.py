"""Hard retrieval attention (Xu et al., 2020): each head attends to one position."""

from __future__ import annotations

from ..registry import DECODER, ENCODER, LayerInput, LayerOutput, layer
from ..types import HEADS, INPUT, Size
from .attention import AttSize, EncoderBlock, Heads, Scale, dot_att


@layer(roles=(ENCODER, DECODER), why="it is defined for one sentence at a time")
def hard_self_att(
    h: LayerInput,
    /,
    heads: Heads = HEADS,
    s: Scale = None,
    num_hidden: Size = INPUT,
    att_num_hidden: AttSize = None,
) -> LayerOutput:
    """Hard retrieval self-attention: scores ``Q K^T / √s`` as dot attention; in training each
    head samples one key from ``softmax`` and returns its value (gradients pass straight
    through to the probabilities); in inference it takes the value at ``argmax`` of the scores.

    Size: ``num_hidden`` (default: the input size).

    Args:
        heads: number of heads h.
        s: the scale; derived: the head size.
        num_hidden: output size.
        att_num_hidden: projected size of queries, keys and values; derived: num_hidden.
    """
    return dot_att(h, h.d, heads, num_hidden, att_num_hidden)


@layer(attends_source=True)
def hard_src_att(
    h: LayerInput,
    /,
    heads: Heads = HEADS,
    s: Scale = None,
    num_hidden: Size = INPUT,
    att_num_hidden: AttSize = None,
    encoder_block: EncoderBlock = "top",
) -> LayerOutput:
    """Hard retrieval attention over the source (cross attention): one source position per
    head, sampled in training, the argmax of the scores in inference.

    Size: ``num_hidden`` (default: the input size).

    Args:
        heads: number of heads h.
        s: the scale; derived: the head size.
        num_hidden: output size.
        att_num_hidden: projected size of queries, keys and values; derived: num_hidden.
        encoder_block: which encoder states to attend to (see ``mh_dot_src_att``).
    """
    return dot_att(h, h.source_d, heads, num_hidden, att_num_hidden)
