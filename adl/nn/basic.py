"""Position-wise modules: dropout, id, linear, ff, ffl, act, norm."""

from __future__ import annotations

import torch.nn.functional as F
from torch import Tensor, nn

from .base import Layer, implements
from .context import Context
from .dropout import Dropout


def activation(name: str):
    """The non-linearity of ``ff``/``act``/``cnn``; ``glu`` halves the last dimension."""
    return {
        "relu": F.relu,
        "gelu": F.gelu,
        "glu": lambda x: F.glu(x, dim=-1),
        "tanh": lambda x: x.tanh(),
        "sigmoid": lambda x: x.sigmoid(),
        "swish": F.silu,
        "none": lambda x: x,
    }[name]


@implements("dropout")
class DropoutLayer(Layer):
    def __init__(self, d_in: int, dropout: float):
        super().__init__()
        self.drop = Dropout(dropout)

    def forward(self, x: Tensor, ctx: Context) -> Tensor:
        return self.drop(x)


@implements("id")
class Identity(Layer):
    def __init__(self, d_in: int):
        super().__init__()

    def forward(self, x: Tensor, ctx: Context) -> Tensor:
        return x


@implements("linear")
class Linear(Layer):
    def __init__(self, d_in: int, num_hidden: int, dropout: float, no_bias: bool):
        super().__init__()
        self.proj = nn.Linear(d_in, num_hidden, bias=not no_bias)
        self.drop = Dropout(dropout)

    def forward(self, x: Tensor, ctx: Context) -> Tensor:
        return self.drop(self.proj(x))  # W h + b


@implements("ff")
class FeedForward(Layer):
    def __init__(self, d_in: int, num_hidden: int, act_type: str, dropout: float):
        super().__init__()
        self.proj = nn.Linear(d_in, 2 * num_hidden if act_type == "glu" else num_hidden)
        self.act = activation(act_type)
        self.drop = Dropout(dropout)

    def forward(self, x: Tensor, ctx: Context) -> Tensor:
        return self.drop(self.act(self.proj(x)))  # dropout(act(W h + b))


@implements("ffl")
class FeedForwardBlock(Layer):
    def __init__(self, d_in: int, num_hidden: int | None, act_type: str, dropout: float):
        super().__init__()
        inner = num_hidden if num_hidden is not None else 4 * d_in
        self.ff = FeedForward(d_in, inner, act_type, dropout)
        self.out = nn.Linear(inner, d_in)

    def forward(self, x: Tensor, ctx: Context) -> Tensor:
        return self.out(self.ff(x, ctx))  # ff(4 d_in) -> linear(d_in)


@implements("act")
class Activation(Layer):
    def __init__(self, d_in: int, act_type: str):
        super().__init__()
        self.act = activation(act_type)

    def forward(self, x: Tensor, ctx: Context) -> Tensor:
        return self.act(x)


@implements("norm")
class Norm(Layer):
    def __init__(self, d_in: int, eps: float):
        super().__init__()
        self.norm = nn.LayerNorm(d_in, eps=eps)

    def forward(self, x: Tensor, ctx: Context) -> Tensor:
        return self.norm(x)  # g/σ ⊗ (h − μ) + b
