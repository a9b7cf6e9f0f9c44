"""Position-wise layers: dropout, id, linear, ff, ffl, act, norm (Domhan 2018, §2.3)."""

from __future__ import annotations

from typing import Annotated, Literal

from ..registry import LayerInput, LayerOutput, Refusal, layer
from ..types import D_MODEL, DROPOUT, PositiveFloatType, Rate, Size, aka

Activation = Literal["relu", "gelu", "glu", "tanh", "sigmoid", "swish", "none"]
ActivationArg = Annotated[Activation, aka("act", "v", "activation")]


def pre_activation(size: int, act: str) -> int:
    """A GLU halves its input: a layer of output size n with a GLU projects to 2n first."""
    return 2 * size if act == "glu" else size


@layer()
def dropout(h: LayerInput, /, dropout: Annotated[Rate, aka("p", "rate")] = DROPOUT) -> LayerOutput:
    """Dropout on the hidden states: ``dropout(h_t)``.

    Size: unchanged.

    Args:
        dropout: probability of zeroing a unit during training.
    """
    return LayerOutput(h.d)


@layer()
def id_(h: LayerInput, /) -> LayerOutput:
    """Identity: ``id(h_t) = h_t``; useful inside ``concat(id, ...)``.

    Size: unchanged.
    """
    return LayerOutput(h.d)


@layer()
def linear(
    h: LayerInput,
    /,
    num_hidden: Annotated[Size, aka("d_o")] = D_MODEL,
    dropout: Rate = 0.0,
    no_bias: bool = False,
) -> LayerOutput:
    """Linear projection: ``linear(h_t, d_o) = W h_t + b``.

    Size: ``num_hidden`` (bare ``linear`` projects to the model size, as in Sockeye).

    Args:
        num_hidden: output size d_o.
        dropout: dropout on the output (Sockeye's ``linear`` has one; the paper's has none).
        no_bias: leave out the bias b.
    """
    return LayerOutput(num_hidden, h.d * num_hidden + (0 if no_bias else num_hidden))


@layer()
def ff(
    h: LayerInput,
    /,
    num_hidden: Annotated[Size, aka("d_o")] = D_MODEL,
    act_type: ActivationArg = "relu",
    dropout: Rate = DROPOUT,
) -> LayerOutput:
    """Feed-forward layer: ``ff(h_t, d_o) = dropout(act(W h_t + b))``.

    Size: ``num_hidden`` (bare ``ff`` gives the model size). With ``glu`` the projection
    is 2·num_hidden wide and the gate halves it back to num_hidden.

    Args:
        num_hidden: output size d_o.
        act_type: the non-linearity.
        dropout: dropout after the non-linearity.
    """
    pre = pre_activation(num_hidden, act_type)
    return LayerOutput(num_hidden, h.d * pre + pre)


@layer()
def ffl(
    h: LayerInput,
    /,
    num_hidden: Annotated[Size | None, aka("d_ff", "inner")] = None,
    act_type: ActivationArg = "relu",
    dropout: Rate = DROPOUT,
) -> LayerOutput:
    """Up-scaling feed-forward block of the Transformer: ``ff(4·d_in) -> linear(d_in)``.

    Size: unchanged.

    Args:
        num_hidden: the inner size; derived: 4 × the input size.
        act_type: the non-linearity of the inner ``ff``.
        dropout: dropout after the non-linearity.
    """
    inner = num_hidden if num_hidden is not None else 4 * h.d
    pre = pre_activation(inner, act_type)
    return LayerOutput(h.d, h.d * pre + pre + inner * h.d + h.d)


@layer()
def act(h: LayerInput, /, act_type: ActivationArg = "relu") -> LayerOutput:
    """A non-linearity on its own (Sockeye's ``act``).

    Size: unchanged, except ``glu``, which halves it.

    Args:
        act_type: the non-linearity.
    """
    if act_type == "glu":
        if h.d % 2:
            raise Refusal(f"a GLU halves its input, but the size {h.d} is odd", at="act_type")
        return LayerOutput(h.d // 2)
    return LayerOutput(h.d)


@layer()
def norm(
    h: LayerInput, /, eps: Annotated[float, PositiveFloatType(1e-12, 1.0)] = 1e-5
) -> LayerOutput:
    """Layer normalisation: ``g / σ_t ⊗ (h_t − μ_t) + b``.

    Size: unchanged.

    Args:
        eps: added to the variance for numerical stability (at least 1e-12, so that it
            stays above zero in float32 and bfloat16).
    """
    return LayerOutput(h.d, 2 * h.d)
