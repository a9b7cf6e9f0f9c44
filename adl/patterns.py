"""The weight matrices of hard-coded attention heads, as public functions.

Each function returns the (queries × keys) matrix a head applies to the value vectors, for
one sentence of a given length, exactly as the layer computes it. They serve the layers
themselves, the tests (against the papers' numbers) and pictures (``adl viz``).

- :func:`gaussian`: You et al. (2020) hard-coded self-attention, N(j; i + o, σ), raw density.
- :func:`gaussian_cross`: their hard-coded cross attention, centred on ⌊γ·i + o⌋.
- :func:`fixed`: Raganato et al. (2020) fixed encoder patterns.
- :func:`band`: the local attention band of Fonollosa et al. (2019) (1 = may attend).
- :func:`joint_band`: the same over a joint [source; target] stream.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch
from torch import Tensor

from .bands import OFFSETS, TAIL, band_limits, cross_taps, gaussian_taps, offset_of

__all__ = [
    "OFFSETS",
    "PATTERNS",
    "TAIL",
    "band",
    "band_limits",
    "cross_taps",
    "fixed",
    "fixed_words",
    "gaussian",
    "gaussian_cross",
    "gaussian_taps",
    "joint_allowed",
    "joint_band",
    "normal_pdf",
    "offset_of",
]

PATTERNS = ("cur", "prev", "next", "left", "right", "start", "end", "last")


def normal_pdf(x: Tensor, sigma: float = 1.0) -> Tensor:
    """exp(-x² / 2σ²) / (σ √(2π))."""
    return torch.exp(-0.5 * (x / sigma) ** 2) / (sigma * math.sqrt(2 * math.pi))


def gaussian(
    length: int,
    offset: int | str = 0,
    sigma: float = 1.0,
    *,
    window: int | None = None,
    index: bool = False,
    causal: bool = False,
    keys: int | None = None,
) -> Tensor:
    """(length, keys) weights of one hard-coded Gaussian self-attention head.

    Row i holds N(j; i + o, σ) for key positions j: the raw density, cut at the sentence's
    borders, not renormalised. ``window=k`` keeps only the k keys centred on i + o (the
    convolution form); ``index`` puts 1 on key i + o alone. ``causal`` zeroes j > i."""
    o = offset_of(offset)
    i = torch.arange(length, dtype=torch.float64).unsqueeze(1)
    j = torch.arange(length if keys is None else keys, dtype=torch.float64).unsqueeze(0)
    d = j - i - o
    if index:
        w = (d == 0).to(torch.float64)
    else:
        w = normal_pdf(d, sigma)
        if window is not None:
            dl, du = band_limits(window)  # k taps centred on i + o
            w = w * ((d > -dl) & (d < du))
    if causal:
        w = w * (j <= i)
    return w.to(torch.float32)


def gaussian_cross(
    target_length: int,
    source_length: int,
    offset: int | str = 0,
    ratio: float = 1.0,
    sigma: float = 1.0,
) -> Tensor:
    """(target, source) weights of hard-coded cross attention: N(j; ⌊γ·i + o⌋, σ)."""
    o = offset_of(offset)
    i = torch.arange(target_length, dtype=torch.float64).unsqueeze(1)
    j = torch.arange(source_length, dtype=torch.float64).unsqueeze(0)
    centre = torch.floor(ratio * i + o)
    return normal_pdf(j - centre, sigma).to(torch.float32)


def _cubic(span: Tensor, reverse: bool = False) -> Tensor:
    """f(k) = (k+1)³ over the positions of a span, normalised to sum to 1 (empty: zeros)."""
    n = int(span.sum())
    if n == 0:
        return torch.zeros_like(span, dtype=torch.float64)
    k = torch.cumsum(span.to(torch.int64), 0) - 1  # 0 .. n-1 along the span
    if reverse:
        k = n - 1 - k
    f = (k.to(torch.float64) + 1) ** 3 * span
    return f / f.sum()


def fixed(pattern: str, length: int) -> Tensor:
    """(length, length) weights of one fixed pattern of Raganato et al. (2020).

    cur / prev / next: 1.0 at i, i-1, i+1. left: f over 0..i-2; right: f over i+2..n-1;
    end: f over 0..n-1; start: f over n-1..0 (the mirror); last: 1.0 at n-1; with
    f(k) = (k+1)³ normalised over its span, k counted from the span's first position."""
    if pattern not in PATTERNS:
        raise ValueError(f"unknown pattern {pattern!r}; patterns are {', '.join(PATTERNS)}")
    n = length
    w = torch.zeros(n, n, dtype=torch.float64)
    pos = torch.arange(n)
    for i in range(n):
        if pattern == "cur":
            w[i, i] = 1.0
        elif pattern == "prev" and i >= 1:
            w[i, i - 1] = 1.0
        elif pattern == "next" and i + 1 < n:
            w[i, i + 1] = 1.0
        elif pattern == "left":
            w[i] = _cubic(pos <= i - 2)
        elif pattern == "right":
            w[i] = _cubic(pos >= i + 2)
        elif pattern == "end":
            w[i] = _cubic(pos < n)
        elif pattern == "start":
            w[i] = _cubic(pos < n, reverse=True)
        elif pattern == "last":
            w[i, n - 1] = 1.0
    return w.to(torch.float32)


def fixed_words(pattern: str, words: Sequence[int]) -> Tensor:
    """Word-level pattern over subword tokens: the pattern over words, each word's weight
    shared evenly by its pieces (every piece of one word gets the same value).

    ``words[t]`` is the index of the word token t belongs to (0, 0, 1, 2, 2, ...)."""
    ids = torch.as_tensor(list(words), dtype=torch.long)
    n_words = int(ids.max()) + 1 if len(ids) else 0
    w = fixed(pattern, n_words).to(torch.float64)
    pieces = torch.bincount(ids, minlength=n_words).to(torch.float64)
    return (w[ids][:, ids] / pieces[ids].unsqueeze(0)).to(torch.float32)


def band(length: int, window: int, causal: bool = False) -> Tensor:
    """(length, length) 0/1 local attention band: centred (encoder) or the previous
    ``window`` positions, the query included (decoder)."""
    i = torch.arange(length).unsqueeze(1)
    j = torch.arange(length).unsqueeze(0)
    if causal:
        allowed = (j <= i) & (j > i - window)
    else:
        dl, du = band_limits(window)
        allowed = (j > i - dl) & (j < i + du)
    return allowed.to(torch.float32)


def joint_band(source_length: int, target_length: int, window: int | None = None) -> Tensor:
    """0/1 mask over a joint [source; target] stream: source queries see the source (in a
    centred band), target queries see every source token and the previous ``window``
    target positions (themselves included)."""
    n = source_length + target_length
    return joint_allowed(
        torch.arange(n),
        torch.arange(n),
        source_length,
        window,
        torch.zeros(1, source_length, dtype=torch.bool),
    )[0].to(torch.float32)


def joint_allowed(
    queries: Tensor, keys: Tensor, source_length: int, window: int | None, source_pad: Tensor
) -> Tensor:
    """(B, Q, K) bool: may stream position ``queries[q]`` attend to ``keys[k]``?"""
    q = queries.view(-1, 1)
    k = keys.view(1, -1)
    S = source_length
    q_src, k_src = q < S, k < S
    if window is None:
        src_band = torch.ones_like(q_src & k_src)
        tgt_band = torch.ones_like(src_band)
    else:
        dl, du = band_limits(window)
        src_band = (k > q - dl) & (k < q + du)
        tgt_band = k > q - window
    allowed = (
        (q_src & k_src & src_band) | (~q_src & k_src) | (~q_src & ~k_src & (k <= q) & tgt_band)
    )
    key_pad = torch.zeros(source_pad.size(0), k.size(1), dtype=torch.bool, device=source_pad.device)
    in_source = keys[keys < S]
    key_pad[:, : in_source.numel()] = source_pad[:, in_source]
    return allowed.unsqueeze(0) & ~key_pad.unsqueeze(1)
