"""Offsets, bands and kernel taps of the heads whose weights depend on positions only, in
plain Python: the checker sizes a layer's kernel with them without importing torch, and
:mod:`adl.patterns` and the layers build their weights from them.
"""

from __future__ import annotations

import math

OFFSETS = {"l": -1, "c": 0, "r": 1}
# The banded forms keep the density within TAIL σ of a head's centre: beyond it the density is
# below 1e-10 of its peak (N(7σ) / N(0) = e^-24.5), far below float32's resolution, so a
# banded form and the dense matrices of adl.patterns.gaussian agree to float rounding.
TAIL = 6.0


def offset_of(o: int | str) -> int:
    """``l`` -> -1, ``c`` -> 0, ``r`` -> +1; integers are themselves."""
    return OFFSETS[o] if isinstance(o, str) else int(o)


def band_limits(window: int) -> tuple[int, int]:
    """(dl, du) of a centred band: key j is seen from query i when i - dl < j < i + du.
    Odd k: dl = du = (k + 1) / 2; even k: one more on the left."""
    if window % 2:
        return (window + 1) // 2, (window + 1) // 2
    return window // 2 + 1, window // 2


def density(x: float, sigma: float = 1.0) -> float:
    """N(x; 0, σ) = exp(-x² / 2σ²) / (σ √(2π))."""
    return math.exp(-0.5 * (x / sigma) ** 2) / (sigma * math.sqrt(2 * math.pi))


def gaussian_taps(
    offset: int | str = 0,
    sigma: float = 1.0,
    *,
    window: int | None = None,
    index: bool = False,
    causal: bool = False,
) -> dict[int, float]:
    """The nonzero weights of one row of :func:`adl.patterns.gaussian` as
    ``{j - i: weight}``: the kernel of the banded forms. The full form keeps the density
    within :data:`TAIL` σ of the centre i + o; ``window`` and ``index`` are their own
    kernels; ``causal`` drops j > i."""
    o = offset_of(offset)
    if index:
        taps = {o: 1.0}
    else:
        if window is None:
            dl = du = math.ceil(TAIL * sigma) + 1
        else:
            dl, du = band_limits(window)
        taps = {r + o: density(r, sigma) for r in range(-dl + 1, du)}  # r = j - i - o
    return {r: w for r, w in taps.items() if not (causal and r > 0)}


def cross_taps(sigma: float = 1.0) -> dict[int, float]:
    """The nonzero weights of one row of :func:`adl.patterns.gaussian_cross` as
    ``{j - centre: weight}`` (the density within :data:`TAIL` σ)."""
    return gaussian_taps(0, sigma)
