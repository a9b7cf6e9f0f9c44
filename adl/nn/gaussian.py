"""Hard-coded Gaussian attention (You et al., 2020) over the value vectors.

Head h puts the fixed weight N(j; c_h(i), σ) on key j: c_h(i) = i + o_h in self-attention,
⌊γ·i + o_h⌋ in cross attention (``gauss_src_att``). The weights depend on positions only,
never on the batch, and have no gradient, so they are computed once, in the model's dtype,
and autograd keeps nothing for them but those constants (no attention probabilities are
stored for the backward pass). Three forms compute the same sum:

- dense (a full pass over at most :data:`DENSE_UNTIL` keys): the (H, T, S) matrices, cached
  per length (self-attention: exactly :func:`adl.patterns.gaussian`), applied by one einsum;
- banded (longer passes): only the keys within :data:`adl.patterns.TAIL` σ of each centre
  (:func:`adl.patterns.gaussian_taps`), K shifted (self) or gathered (cross) copies of the
  values summed: O(T·K) time and no (T, S) matrix at all;
- a decoding step: the taps of the new positions only. Self-attention caches the last K - 1
  values, cross attention computes the new rows' weights over the source: the work of a step
  never depends on how many target tokens came before it.

Beyond TAIL σ the density is below 1e-10 of its peak, so the forms agree to float rounding
(tests/test_nn_banded.py); ``layer.banded`` forces one form (``None``: by length).
"""

from __future__ import annotations

from functools import lru_cache

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from .. import patterns
from ..analysis.program import Node
from .base import Builder, Layer, implements
from .context import Context

# Full passes over at most this many keys take the dense matrices (one einsum, fastest at
# these lengths on a CPU: bench/banded.py); longer ones the banded form, whose cost grows
# with the length times the band, not the length squared.
DENSE_UNTIL = 128


def head_offsets(offsets: list, heads: int | None) -> list[int]:
    """One offset per head, repeating the given ones to fill ``heads``."""
    o = [patterns.offset_of(x) for x in offsets]
    n = heads or len(o)
    return [o[i % len(o)] for i in range(n)]


def head_blocks(heads: int, size: int) -> list[tuple[int, int]]:
    """The value channels [lo, hi) of each head: the size split as evenly as
    torch.tensor_split splits it."""
    bounds, lo = [], 0
    for part in torch.tensor_split(torch.arange(size), heads):
        bounds.append((lo, lo + len(part)))
        lo += len(part)
    return bounds


def apply_heads(w: Tensor, v: Tensor, blocks: list[tuple[int, int]]) -> Tensor:
    """Per-head weights (H, T, S) applied to values (B, S, a): (B, T, a). One einsum per
    layout; autograd keeps only ``w`` (a constant), never a per-batch copy of it."""
    B, S, a = v.shape
    w = w.to(v.dtype)
    if len({hi - lo for lo, hi in blocks}) == 1:  # equal heads: one call
        H = len(blocks)
        return torch.einsum("hts,bshd->bthd", w, v.view(B, S, H, a // H)).reshape(B, -1, a)
    parts = [torch.einsum("ts,bsd->btd", w[h], v[..., lo:hi]) for h, (lo, hi) in enumerate(blocks)]
    return torch.cat(parts, -1)


def shifted_sum(v: Tensor, kernel: Tensor, left: int) -> Tensor:
    """out[:, i] = Σ_k kernel[k] · v[:, i + k - left] (zero outside the sentence), for values
    (B, T, a) and a per-channel kernel (K, a): K shifted copies, autograd keeps the kernel."""
    T, K = v.size(1), kernel.size(0)
    vp = F.pad(v, (0, 0, left, K - 1 - left))  # (B, left + T + right, a)
    out = vp[:, :T] * kernel[0]
    for k in range(1, K):
        out = torch.addcmul(out, vp[:, k : k + T], kernel[k])
    return out


def window_step(h: Tensor, kernel: Tensor, new: int) -> Tensor:
    """The causal kernel (K, a) (its last tap on the query) at the ``new`` last positions of
    ``h`` (B, n, a), which holds up to K - 1 positions before them: (B, new, a)."""
    K = kernel.size(0)
    missing = K - 1 + new - h.size(1)
    if missing > 0:  # the first steps of a sentence: nothing before position 0
        h = F.pad(h, (0, 0, missing, 0))
    if new == 1:
        return (h * kernel).sum(1, keepdim=True)
    return (h.unfold(1, K, 1) * kernel.t()).sum(-1)  # (B, new, a, K) · (a, K)


@lru_cache(maxsize=128)
def _self_matrices(
    length: int,
    offsets: tuple[int, ...],
    sigma: float,
    window: int | None,
    index: bool,
    causal: bool,
    dtype: torch.dtype,
    device: torch.device,
) -> Tensor:
    """(H, length, length) weights of every head (:func:`adl.patterns.gaussian`), in the
    model's dtype, computed once per length."""
    with torch.device("cpu"):
        w = torch.stack(
            [
                patterns.gaussian(length, o, sigma, window=window, index=index, causal=causal)
                for o in offsets
            ]
        )
    return w.to(device=device, dtype=dtype)


def _channel_kernel(taps: list[dict[int, float]], blocks: list[tuple[int, int]]):
    """(kernel (K, a) float32, left, right) of per-head taps ``{j - i: weight}``."""
    rs = [r for t in taps for r in t] or [0]
    left, right = max(0, -min(rs)), max(0, max(rs))
    kernel = torch.zeros(left + right + 1, blocks[-1][1])
    for tap, (lo, hi) in zip(taps, blocks):
        for r, w in tap.items():
            kernel[r + left, lo:hi] = w
    return kernel, left, right


@implements("gauss_att")
class GaussianSelfAttention(Layer):
    kernel: Tensor  # buffer (K, a): the weight of key i + k - left for each value channel

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
        self.blocks = head_blocks(len(self.offsets), a)
        self.banded: bool | None = None  # None: by length; True: banded; False: dense
        taps = [
            patterns.gaussian_taps(o, sigma, window=window, index=index, causal=causal)
            for o in self.offsets
        ]
        with torch.device("cpu"):  # also when the model is built on the meta device
            kernel, self.left, self.right = _channel_kernel(taps, self.blocks)
        self.register_buffer("kernel", kernel, persistent=False)

    @classmethod
    def build(cls, node: Node, b: Builder) -> GaussianSelfAttention:
        return cls(node.d_in, **b.arguments(node), causal=b.role != "encoder")

    def matrices(self, length: int, like: Tensor) -> Tensor:
        """(H, length, length): the dense weights, in ``like``'s dtype and device."""
        key = (self.sigma, self.window, self.index, self.causal, like.dtype, like.device)
        return _self_matrices(length, tuple(self.offsets), *key)

    def forward(self, x: Tensor, ctx: Context) -> Tensor:
        v = ctx.zero_padding(self.value(x))  # (B, T, a), cut at padding
        if ctx.state is not None:
            return self.out(self._step(v, ctx.state.of(self)))
        if ctx.record is not None:
            ctx.record_attention(self, "self", self._cut(self.matrices(v.size(1), v), ctx))
        return self.out(self.mix(v))  # N(j; i + o_h, σ) V

    def mix(self, v: Tensor) -> Tensor:
        """The heads' weighted sums of the values (B, T, a) of one full pass."""
        T = v.size(1)
        banded = self.banded
        if banded is None:
            banded = T > max(DENSE_UNTIL, self.kernel.size(0))
        if banded:
            return shifted_sum(v, self.kernel.to(v.dtype), self.left)
        return apply_heads(self.matrices(T, v), v, self.blocks)

    def _step(self, v: Tensor, cache: dict) -> Tensor:
        """New positions (B, T, a) of a decoder: the cache holds the last K - 1 values."""
        past = cache.get("v")
        h = v if past is None else torch.cat([past, v], 1)
        cache["v"] = h[:, max(h.size(1) - self.left, 0) :]
        return window_step(h, self.kernel.to(v.dtype), v.size(1))

    def _cut(self, w: Tensor, ctx: Context) -> Tensor:
        """The weights as applied: zero on padding keys (B, H, Tq, Tk)."""
        if ctx.pad is None:
            return w
        return w.unsqueeze(0) * (~ctx.pad)[:, None, None, :]


@implements("gauss_src_att")
class GaussianSourceAttention(Layer):
    table: Tensor  # buffer: N(d; 0, σ) at distances d = 0 .. reach, then 0 (farther)

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
        self.blocks = head_blocks(len(self.offsets), a)
        self.banded: bool | None = None  # None: by length; True: banded; False: dense
        self.taps = sorted(patterns.cross_taps(sigma).items())  # (j - centre, weight)
        self.reach = self.taps[-1][0]
        with torch.device("cpu"):
            table = torch.tensor([w for r, w in self.taps if r >= 0] + [0.0])
        self.register_buffer("table", table, persistent=False)
        self._centres: Tensor | None = None  # (H, N) ⌊γ·i + o_h⌋ for i < N, grown on demand

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

    def centres(self, start: int, stop: int, device: torch.device) -> Tensor:
        """(H, stop - start) long: ⌊γ·i + o_h⌋ for target positions start .. stop - 1,
        computed in float64 as :func:`adl.patterns.gaussian_cross` does (an index, so that
        the rounding of γ·i picks the same key), once for every length decoded so far."""
        known = self._centres
        if known is None or known.size(1) < stop or known.device != device:
            n = max(stop, 2 * known.size(1) if known is not None else 64)
            i = torch.arange(n, dtype=torch.float64, device="cpu")
            rows = [torch.floor(self.ratio * i + o) for o in self.offsets]
            known = self._centres = torch.stack(rows).long().to(device)
        return known[:, start:stop]

    def weights(self, centres: Tensor, keys: int, dtype: torch.dtype) -> Tensor:
        """(H, T, S) dense weights N(j; centre, σ) of the given rows: a table lookup by
        distance, no exponential."""
        j = torch.arange(keys, device=centres.device)
        distance = (j - centres.unsqueeze(-1)).abs().clamp_(max=self.reach + 1)
        return self.table.to(dtype)[distance]

    def forward(self, x: Tensor, ctx: Context) -> Tensor:
        if ctx.state is not None:  # the source's values once per sentence
            cache = ctx.state.of_source(self)
            if "v" not in cache:
                cache["v"] = self._values(ctx.source)
            v = cache["v"]
        else:
            v = self._values(ctx.source)
        T, S = x.size(1), v.size(1)
        c = self.centres(ctx.offset, ctx.offset + T, v.device)
        if ctx.record is not None:
            self._record(ctx, T, S)
        banded = self.banded
        if banded is None:  # a decoding step computes its rows: O(S), whatever came before
            banded = ctx.state is None and S > max(DENSE_UNTIL, len(self.taps))
        if banded:
            return self.out(self._gathered(v, c))
        return self.out(apply_heads(self.weights(c, S, v.dtype), v, self.blocks))

    def _gathered(self, v: Tensor, centres: Tensor) -> Tensor:
        """The banded form: per head and tap, the values at centre + r (a zero row where
        that falls outside the source), weighted: O(T·taps), no (T, S) matrix."""
        S = v.size(1)
        vp = F.pad(v, (0, 0, 0, 1))  # (B, S + 1, a): row S is zero
        parts = []
        for h, (lo, hi) in enumerate(self.blocks):
            vh = vp[..., lo:hi]
            out = vh.new_zeros(vh.size(0), centres.size(1), hi - lo)
            for r, w in self.taps:
                j = centres[h] + r
                j = torch.where((j >= 0) & (j < S), j, S)
                out = out.add(vh.index_select(1, j), alpha=w)
            parts.append(out)
        return torch.cat(parts, -1)

    def _record(self, ctx: Context, T: int, S: int) -> None:
        rows = [
            patterns.gaussian_cross(ctx.offset + T, S, o, self.ratio, self.sigma)[ctx.offset :]
            for o in self.offsets
        ]
        w = torch.stack(rows).to(ctx.source.top.device)
        pad = ctx.source.pad
        ctx.record_attention(
            self, "source", w if pad is None else w.unsqueeze(0) * (~pad)[:, None, None, :]
        )

    def _values(self, memory) -> Tensor:
        v = self.value(memory.level(self.level))  # (B, S, a)
        if memory.pad is not None:
            v = v.masked_fill(memory.pad.unsqueeze(-1), 0.0)  # cut at the source's padding
        return v
