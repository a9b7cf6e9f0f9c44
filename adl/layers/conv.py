"""Convolutions over time (Domhan 2018, §2.3): centred in an encoder, causal in a decoder."""

from __future__ import annotations

from typing import Annotated, Literal

from ..limits import MAX_WINDOW
from ..registry import DECODER, ENCODER, LayerInput, LayerOutput, Refusal, layer
from ..types import INPUT, CountType, Rate, Size, aka
from .basic import pre_activation

JOINT_WHY = (
    "a joint stream pads each source in its middle, so a window over neighbouring "
    "positions would read padding where a shorter source has real tokens"
)


@layer(roles=(ENCODER, DECODER), why=JOINT_WHY)
def cnn(
    h: LayerInput,
    /,
    num_hidden: Size = INPUT,
    kernel_width: Annotated[int, CountType(MAX_WINDOW), aka("k", "kernel", "kernel_size")] = 3,
    act_type: Annotated[Literal["relu", "glu"], aka("act", "v")] = "relu",
    dropout: Rate = 0.0,
    dilation: Annotated[int, CountType(MAX_WINDOW), aka("dilate")] = 1,
) -> LayerOutput:
    """Convolution: ``v(W [h_{i−⌊k/2⌋}; …; h_{i+⌊k/2⌋}] + b)``; in a decoder the window is
    ``[h_{t−k+1}; …; h_t]`` with zero padding on the left.

    Size: ``num_hidden`` (default: the input size). With ``glu`` the convolution makes
    2·num_hidden channels and the gate halves them (paper: d_i = 2d).

    Args:
        num_hidden: output size (Sockeye's first positional argument).
        kernel_width: kernel size k.
        act_type: the non-linearity v.
        dropout: dropout on the output.
        dilation: spacing between the kernel's taps; the window reaches
            (kernel_width − 1) · dilation positions, at most 4096.
    """
    reach = (kernel_width - 1) * dilation
    if reach > MAX_WINDOW:
        raise Refusal(
            f"the window reaches (kernel_width - 1) * dilation = {reach:,} positions, "
            f"more than the limit of {MAX_WINDOW:,}",
            at="dilation" if dilation > 1 else "kernel_width",
        )
    pre = pre_activation(num_hidden, act_type)
    return LayerOutput(num_hidden, kernel_width * h.d * pre + pre)
