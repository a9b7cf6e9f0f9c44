"""Positional embeddings: fixed sinusoids (``pos``) and learned (``learn_pos``)."""

from __future__ import annotations

from typing import Annotated

from ..registry import LayerInput, LayerOutput, Refusal, layer
from ..types import DROPOUT, Rate, Size, aka


def _same_size(h: LayerInput, num_embed: int | None) -> None:
    if num_embed is not None and num_embed != h.d:
        raise Refusal(
            f"num_embed={num_embed} differs from the input size {h.d}",
            at="num_embed",
            hint="leave num_embed out: it is the input size",
        )


@layer()
def pos(
    h: LayerInput,
    /,
    dropout: Rate = DROPOUT,
    scale_inputs: bool = True,
    num_embed: Size | None = None,
) -> LayerOutput:
    """Fixed positional embeddings: ``dropout(√d · h_t + p_t)``, ``p_{t,2j} = sin(t/10000^{2j/d})``,
    ``p_{t,2j+1} = cos(t/10000^{2j/d})``.

    Size: unchanged (must be even).

    Args:
        dropout: dropout after adding the positions.
        scale_inputs: multiply the input by √d (the Transformer's convention).
        num_embed: Sockeye's spelling of the size; must equal the input size.
    """
    _same_size(h, num_embed)
    if h.d % 2:
        raise Refusal(f"sinusoidal positions need an even size, not {h.d}")
    return LayerOutput(h.d)


@layer()
def learn_pos(
    h: LayerInput,
    /,
    max_seq_len: Annotated[Size, aka("max_len")] = 1024,
    dropout: Rate = DROPOUT,
    num_embed: Size | None = None,
) -> LayerOutput:
    """Learned positional embeddings: ``dropout(h_t + P_t)``, one vector per position.

    Size: unchanged.

    Args:
        max_seq_len: the longest sequence it can embed.
        dropout: dropout after adding the positions.
        num_embed: Sockeye's spelling of the size; must equal the input size.
    """
    _same_size(h, num_embed)
    return LayerOutput(h.d, max_seq_len * h.d)
