"""Hard-coded Gaussian attention (You et al., 2020) over the value vectors.

Every form of ``gauss_att`` is a depthwise convolution over time with a fixed kernel per
head (a banded form: it never builds an n × n matrix, and a decoder's cache keeps only the
last values the kernel reaches). The windowed and index forms are their own kernels; the full
form's kernel is the density within ``TAIL`` σ of the centre i + o_h: beyond it the density
is below 1e-10 of its peak (N(7σ) / N(0) = e^-24.5), far below float32's resolution, so the
banded and the dense form (the matrices of :func:`adl.patterns.gaussian`; ``banded = False``
computes it, as the reference the tests and bench/banded.py compare with) agree to float
rounding. Cross attention (``gauss_src_att``) multiplies by its (H, T, S) weights, which do
not depend on the batch.
"""

from __future__ import annotations

import math
from functools import lru_cache

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from .. import patterns
from ..analysis.program import Node
from .base import Builder, Layer, implements
from .context import Context

TAIL = 6.0  # the banded full form keeps the density within TAIL σ of the centre


def head_offsets(offsets: list, heads: int | None) -> list[int]:
    """One offset per head, repeating the given ones to fill ``heads``."""
    o = [patterns.offset_of(x) for x in offsets]
    n = heads or len(o)
    return [o[i % len(o)] for i in range(n)]


def head_channels(heads: int, size: int) -> Tensor:
    """The head of every value channel: the size split as evenly as torch.tensor_split."""
    return torch.cat(
        [
            torch.full((len(c),), h, dtype=torch.long)
            for h, c in enumerate(torch.tensor_split(torch.arange(size), heads))
        ]
    )


@lru_cache(maxsize=64)
def gaussian_heads(length: int, offsets: tuple[int, ...], sigma: float, causal: bool) -> Tensor:
    """(H, length, length) weights of every head, cached by length."""
    return torch.stack([patterns.gaussian(length, o, sigma, causal=causal) for o in offsets])


def mix_heads(weights: Tensor, v: Tensor, channels: Tensor) -> Tensor:
    """Per-head weights (H, Tq, Tk) or (B, H, Tq, Tk) applied to values (B, Tk, a)."""
    if weights.dim() == 3:
        weights = weights.unsqueeze(0)
    out = torch.empty(v.size(0), weights.size(2), v.size(2), dtype=v.dtype, device=v.device)
    for h in range(weights.size(1)):
        cols = channels == h
        out[:, :, cols] = weights[:, h].to(v.dtype) @ v[:, :, cols]
    return out


@implements("gauss_att")
class GaussianSelfAttention(Layer):
    channels: Tensor  # buffers: each value channel's head
    kernel: Tensor  # the depthwise kernel of a windowed or index= attention

    def __init__(
        self,
        d_in: int,
        offsets: list,
        sigma: float,
        window: int | None,
        index: bool,
        heads: int | None,
        num_hidden: int,
        att_num_hidden: int | None,
        causal: bool = False,
    ):
        super().__init__()
        a = att_num_hidden if att_num_hidden is not None else num_hidden
        self.offsets = head_offsets(offsets, heads)
        self.sigma, self.window, self.index, self.causal = sigma, window, index, causal
        self.value = nn.Linear(d_in, a)
        self.out = nn.Linear(a, num_hidden)
        self.register_buffer("channels", head_channels(len(self.offsets), a), persistent=False)
        self.banded = True  # False: the dense full form (the reference; not for the index form)
        self._build_kernel(a)

    @classmethod
    def build(cls, node: Node, b: Builder) -> GaussianSelfAttention:
        return cls(node.d_in, **b.arguments(node), causal=b.role != "encoder")

    def _build_kernel(self, a: int) -> None:
        """Depthwise kernel (a, 1, K) over relative positions r = j - i in [-left, right]
        (computed on the CPU, also when the model is built on the meta device)."""
        with torch.device("cpu"):
            self._make_kernel(a)

    def _make_kernel(self, a: int) -> None:
        taps = {}
        for h, o in enumerate(self.offsets):
            if self.index:
                taps[h] = {o: 1.0}  # the value at i + o
            else:  # N(r; o, σ), r - o in (-dl, du): the window, or TAIL σ (the full form)
                if self.window is None:
                    dl = du = math.ceil(TAIL * self.sigma) + 1
                else:
                    dl, du = patterns.band_limits(self.window)
                r = torch.arange(o - dl + 1, o + du, dtype=torch.float64)
                w = patterns.normal_pdf(r - o, self.sigma)
                taps[h] = {int(ri): float(wi) for ri, wi in zip(r, w)}
            if self.causal:  # a decoder never sees j > i
                taps[h] = {j: p for j, p in taps[h].items() if j <= 0}
        rs = [r for t in taps.values() for r in t] or [0]
        self.left, self.right = max(0, -min(rs)), max(0, max(rs))
        rows = torch.zeros(len(self.offsets), self.left + self.right + 1)  # one per head
        for h, tap in taps.items():
            for j, p in tap.items():
                rows[h, j + self.left] = p
        channels = head_channels(len(self.offsets), a)
        kernel = rows[channels].unsqueeze(1)  # (a, 1, K): each channel its head's row
        self.register_buffer("kernel", kernel, persistent=False)

    def forward(self, x: Tensor, ctx: Context) -> Tensor:
        v = ctx.zero_padding(self.value(x))  # (B, T, a), cut at padding
        if self.banded or self.index or self.window is not None:
            return self.out(self._convolve(v, ctx))
        if ctx.state is not None:
            cache = ctx.state.of(self)
            if "v" in cache:
                v = torch.cat([cache["v"], v], dim=1)
            cache["v"] = v
        offset = v.size(1) - x.size(1)
        w = gaussian_heads(v.size(1), tuple(self.offsets), self.sigma, self.causal)
        w = w.to(v.device)[:, offset:]  # (H, Tq, Tk)
        ctx.record_attention(self, "self", self._cut(w, ctx))
        return self.out(mix_heads(w, v, self.channels))  # N(j; i + o_h, σ) V

    def _cut(self, w: Tensor, ctx: Context) -> Tensor:
        """The weights as applied: zero on padding keys (B, H, Tq, Tk)."""
        if ctx.pad is None or ctx.state is not None:
            return w
        return w.unsqueeze(0) * (~ctx.pad)[:, None, None, :]

    def _convolve(self, v: Tensor, ctx: Context) -> Tensor:
        if ctx.record is not None and ctx.state is None:  # the kernels as a matrix
            n = v.size(1)
            w = torch.stack(
                [
                    patterns.gaussian(
                        n, o, self.sigma, window=self.window, index=self.index, causal=self.causal
                    )
                    for o in self.offsets
                ]
            ).to(v.device)
            ctx.record_attention(self, "self", self._cut(w, ctx))
        h = v.transpose(1, 2)  # (B, a, T)
        if ctx.state is not None:
            cache = ctx.state.of(self)
            past = cache.get("v")
            if past is None:
                past = h.new_zeros(h.size(0), h.size(1), self.left)
            h = torch.cat([past, h], dim=2)
            cache["v"] = h[:, :, h.size(2) - self.left :]
            h = F.pad(h, (0, self.right))
        else:
            h = F.pad(h, (self.left, self.right))
        return F.conv1d(h, self.kernel.to(h.dtype), groups=h.size(1)).transpose(1, 2)


@implements("gauss_src_att")
class GaussianSourceAttention(Layer):
    channels: Tensor  # buffer: each value channel's head

    def __init__(
        self,
        d_in: int,
        source_d: int,
        level: int | None,
        offsets: list,
        sigma: float,
        ratio: float,
        heads: int | None,
        num_hidden: int,
        att_num_hidden: int | None,
    ):
        super().__init__()
        a = att_num_hidden if att_num_hidden is not None else num_hidden
        self.offsets = head_offsets(offsets, heads)
        self.sigma, self.ratio, self.level = sigma, ratio, level
        self.value = nn.Linear(source_d, a)
        self.out = nn.Linear(a, num_hidden)
        self.register_buffer("channels", head_channels(len(self.offsets), a), persistent=False)

    @classmethod
    def build(cls, node: Node, b: Builder) -> GaussianSourceAttention:
        args = b.arguments(node)
        args["level"] = b.encoder_level(node, args.pop("encoder_block"))
        if args["ratio"] is None:
            if b.length_ratio is None:
                b.refuse(
                    node,
                    "gauss_src_att needs ratio=, or the training data's mean "
                    "source/target length ratio",
                    "adl train supplies it; in Python pass adl.build(length_ratio=...)",
                )
            args["ratio"] = b.length_ratio or 1.0
        return cls(node.d_in, b.source_d, **args)

    def forward(self, x: Tensor, ctx: Context) -> Tensor:
        memory = ctx.memory
        if ctx.state is not None:
            cache = ctx.state.of(self)
            if "v" not in cache:
                cache["v"] = self._values(memory)
            v = cache["v"]
        else:
            v = self._values(memory)
        T, S = x.size(1), v.size(1)
        w = torch.stack(
            [
                patterns.gaussian_cross(ctx.offset + T, S, o, self.ratio, self.sigma)
                for o in self.offsets
            ]
        ).to(v.device)[:, ctx.offset :]
        if ctx.record is not None:
            pad = ctx.source.pad
            ctx.record_attention(
                self, "source", w if pad is None else w.unsqueeze(0) * (~pad)[:, None, None, :]
            )
        return self.out(mix_heads(w, v, self.channels))  # N(j; ⌊γ i + o⌋, σ) V

    def _values(self, memory) -> Tensor:
        v = self.value(memory.level(self.level))  # (B, S, a)
        if memory.pad is not None:
            v = v.masked_fill(memory.pad.unsqueeze(-1), 0.0)  # cut at the source's padding
        return v
