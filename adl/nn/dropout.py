"""Dropout with a faster mask on the CPU.

torch draws a CPU dropout mask one float at a time (``bernoulli_``), which costs about as
much as a third of the matrix products of a training step on two cores. Here each mask
element takes 16 random bits: one ``random_`` over the whole int64 range gives four uniform
16-bit draws per word. The keep probability is quantised to 1/65536 and the scale uses the
quantised value, so the output's expectation equals the input's exactly. On other devices
torch's own dropout is used.
bench/train_step.py measures the difference.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor, nn


def dropout(x: Tensor, p: float, training: bool) -> Tensor:
    if not training or p == 0.0:
        return x
    drop = round(p * 65536)  # dropped draws out of 65536
    if x.device.type != "cpu" or drop >= 65536:
        return F.dropout(x, p, True)  # a rate within 2^-17 of 1 has no 16-bit quantum
    n = x.numel()
    words = torch.empty(-(-n // 4), dtype=torch.int64).random_(-(2**63), 2**63 - 1)
    draws = words.view(torch.int16)[:n].view(x.shape)  # four uniform 16-bit draws a word
    keep = draws >= drop - 32768  # P(keep) = (65536 - drop) / 65536
    return x * keep.to(x.dtype).mul_(65536.0 / (65536 - drop))


class Dropout(nn.Module):
    """``nn.Dropout`` with the faster CPU mask."""

    def __init__(self, p: float = 0.5):
        super().__init__()
        self.p = p

    def forward(self, x: Tensor) -> Tensor:
        return dropout(x, self.p, self.training)

    def extra_repr(self) -> str:
        return f"p={self.p}"
