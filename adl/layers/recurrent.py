"""Recurrent layers: ``rnn`` (causal, allowed everywhere) and ``birnn`` (encoder only)."""

from __future__ import annotations

from typing import Annotated, Literal

from ..registry import DECODER, ENCODER, LayerInput, LayerOutput, Refusal, layer
from ..types import INPUT, Size, aka
from .conv import JOINT_WHY

Cell = Annotated[Literal["lstm", "gru"], aka("cell", "cell_type")]
_GATES = {"lstm": 4, "gru": 3}


def cell_params(d_in: int, n: int, cell: str) -> int:
    """Weights and both biases of one LSTM/GRU direction, as ``torch.nn.LSTM``/``GRU``."""
    g = _GATES[cell]
    return g * n * (d_in + n) + 2 * g * n


@layer(
    roles=(ENCODER, DECODER),
    why=JOINT_WHY.replace("a window over neighbouring positions", "its state"),
)
def rnn(h: LayerInput, /, num_hidden: Size = INPUT, cell_type: Cell = "lstm") -> LayerOutput:
    """A unidirectional RNN: ``s_t = f(h_t, s_{t−1})``, output ``f_o(h_t, s_{t−1})``.

    Size: ``num_hidden`` (default: the input size).

    Args:
        num_hidden: size of the state and the output.
        cell_type: the cell, LSTM or GRU.
    """
    return LayerOutput(num_hidden, cell_params(h.d, num_hidden, cell_type))


@layer(
    roles=(ENCODER,),
    why="a bidirectional RNN reads later positions, which a causal network must not see",
)
def birnn(h: LayerInput, /, num_hidden: Size = INPUT, cell_type: Cell = "lstm") -> LayerOutput:
    """A bidirectional RNN: a forward and a backward RNN, their outputs concatenated.

    Size: ``num_hidden`` (default: the input size), num_hidden/2 per direction.

    Args:
        num_hidden: output size, split evenly between the two directions.
        cell_type: the cell, LSTM or GRU.
    """
    if num_hidden % 2:
        raise Refusal(
            f"a bidirectional RNN splits its size between two directions; {num_hidden} is odd",
            at="num_hidden",
        )
    half = num_hidden // 2
    return LayerOutput(num_hidden, 2 * cell_params(h.d, half, cell_type))
