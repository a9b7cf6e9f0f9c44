"""``cnn``: centred over time in an encoder, causal (left-padded) in a decoder or joint network."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from ..analysis.program import Node
from .base import Builder, Layer, implements
from .basic import activation
from .context import Context
from .dropout import Dropout


@implements("cnn")
class Convolution(Layer):
    def __init__(
        self,
        d_in: int,
        num_hidden: int,
        kernel_width: int,
        act_type: str,
        dropout: float,
        dilation: int,
        causal: bool = False,
    ):
        super().__init__()
        pre = 2 * num_hidden if act_type == "glu" else num_hidden
        self.conv = nn.Conv1d(d_in, pre, kernel_width, dilation=dilation)
        self.act = activation(act_type)
        self.drop = Dropout(dropout)
        self.causal = causal
        span = (kernel_width - 1) * dilation  # inputs a window reaches back
        # centred: h_{i-⌊k/2⌋} .. h_{i+⌊k/2⌋} (even k: one more on the left); causal: k-1 left
        self.left = span if causal else span - span // 2
        self.right = 0 if causal else span // 2

    @classmethod
    def build(cls, node: Node, b: Builder) -> Convolution:
        return cls(node.d_in, **b.arguments(node), causal=b.role != "encoder")

    def forward(self, x: Tensor, ctx: Context) -> Tensor:
        x = ctx.zero_padding(x)  # (B, T, D)
        if ctx.state is not None and self.left:
            cache = ctx.state.of(self)
            past = cache.get("inputs")
            if past is None:
                past = x.new_zeros(x.size(0), self.left, x.size(2))
            x = torch.cat([past, x], dim=1)  # the last k-1 inputs, then new
            cache["inputs"] = x[:, -self.left :]
            h = x.transpose(1, 2)
        else:
            h = F.pad(x.transpose(1, 2), (self.left, self.right))  # (B, D, T + k - 1)
        y = self.conv(h).transpose(1, 2)  # (B, T, pre)
        return self.drop(self.act(y))  # v(W [h_{t-k+1}; ...; h_t] + b)
