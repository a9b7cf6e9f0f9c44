"""Fixed encoder self-attention patterns (Raganato et al., 2020)."""

from __future__ import annotations

from typing import Annotated, Literal

from ..limits import MAX_HEADS
from ..registry import ENCODER, LayerInput, LayerOutput, Refusal, layer
from ..types import DROPOUT, INPUT, NaturalType, Rate, Size, aka

Pattern = Literal["cur", "prev", "next", "left", "right", "start", "end", "last"]
SEVEN = ("cur", "prev", "next", "left", "right", "end", "start")


@layer(roles=(ENCODER,), why="its patterns look at later positions (next, right, end)")
def fixed_self_att(
    h: LayerInput,
    /,
    *patterns: Pattern,
    learned: Annotated[int, NaturalType(MAX_HEADS)] = 1,
    unit: Annotated[Literal["token", "word"], aka("level")] = "token",
    num_hidden: Size = INPUT,
    att_num_hidden: Annotated[Size | None, aka("att_size")] = None,
    dropout: Rate = DROPOUT,
) -> LayerOutput:
    """Self-attention with fixed positional heads plus ``learned`` ordinary heads. Patterns:
    ``cur``, ``prev``, ``next`` (1.0 at i, i−1, i+1), ``left`` (f over 0..i−2), ``right``
    (f over i+2..n−1), ``end`` (f over 0..n−1), ``start`` (f over n−1..0), ``last`` (1.0 at
    n−1), with f(k) = (k+1)³ normalised over its span. Padding is never attended.

    Size: ``num_hidden`` (default: the input size).

    Args:
        patterns: the fixed heads; derived: the paper's seven (cur, prev, next, left,
            right, end, start).
        learned: number of ordinary learned heads (the paper's eighth head; 0 for 8F).
        unit: ``token``, or ``word``: every piece of a word gets the same weight (word ids
            come from the tokenizer's word-start markers, supplied by the runtime).
        num_hidden: output size.
        att_num_hidden: size of the value projection, split evenly over all heads;
            derived: num_hidden.
        dropout: dropout on the learned heads' attention weights.
    """
    heads = len(patterns or SEVEN) + learned
    if heads == 0:
        raise Refusal("'fixed_self_att' needs a pattern or a learned head", at="learned")
    if heads > MAX_HEADS:
        raise Refusal(f"{heads:,} heads are more than the limit of {MAX_HEADS:,}")
    a = att_num_hidden if att_num_hidden is not None else num_hidden
    if a % heads:
        raise Refusal(
            f"{heads} heads do not divide the attention size {a}",
            hint="choose att_num_hidden divisible by the number of heads",
        )
    head = a // heads
    learned_qk = 2 * (h.d * learned * head + learned * head)
    return LayerOutput(num_hidden, (h.d * a + a) + learned_qk + (a * num_hidden + num_hidden))
