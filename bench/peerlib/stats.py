"""Seeds and significance: a system's mean and standard deviation over its seeds, and a
paired test of ADL against each peer on their concatenated test translations.

The paired test is sacrebleu's paired bootstrap resampling (1,000 resamples; two-sided: it
counts how often the resampled absolute difference, centred, exceeds the real one), run by
ADL's ``adl/runtime/sweep/significance.py`` on the outputs of the seeds both systems have,
concatenated in seed order (seed s of ADL against seed s of the peer, sentence by sentence,
the references repeated once per seed). A difference with p >= ``ALPHA`` is inside the
noise and is written as a tie.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import asdict, dataclass

from adl.runtime.sweep.significance import paired_test

ALPHA = 0.05  # a lead with a p-value at or above this is a tie
SAMPLES = 1000  # bootstrap resamples (sacrebleu's default, Moses' script's)


@dataclass
class Spread:
    mean: float
    std: float | None  # the sample standard deviation (n - 1); None for one seed
    n: int

    def text(self, digits: int = 2) -> str:
        if self.std is None:
            return f"{self.mean:.{digits}f}"
        return f"{self.mean:.{digits}f} ± {self.std:.{digits}f}"


def spread(values: Sequence[float]) -> Spread:
    """Mean and sample standard deviation of one score over seeds."""
    if not values:
        raise ValueError("no values")
    std = statistics.stdev(values) if len(values) > 1 else None
    return Spread(statistics.fmean(values), std, len(values))


def verdict(ours: float, theirs: float, p: float, alpha: float = ALPHA) -> str:
    """'ADL ahead', 'peer ahead' or 'tie' (p >= alpha, or equal scores)."""
    if p >= alpha or ours == theirs:
        return "tie"
    return "ADL ahead" if ours > theirs else "peer ahead"


@dataclass
class Pair:
    """ADL against one peer, one search, over the seeds both have."""

    peer: str  # the peer's key
    beam: int
    seeds: list[int]
    bleu: tuple[float, float]  # (ADL, peer): corpus BLEU of the concatenated outputs
    chrf: tuple[float, float]
    bleu_p: float
    chrf_p: float
    test: str  # sacrebleu's test and its settings

    @property
    def bleu_verdict(self) -> str:
        return verdict(*self.bleu, self.bleu_p)

    @property
    def chrf_verdict(self) -> str:
        return verdict(*self.chrf, self.chrf_p)

    def to_dict(self) -> dict:
        return {
            **asdict(self),
            "bleu_verdict": self.bleu_verdict,
            "chrf_verdict": self.chrf_verdict,
        }


def compare(
    peer: str,
    beam: int,
    ours: dict[int, list[str]],
    theirs: dict[int, list[str]],
    references: list[str],
    samples: int = SAMPLES,
) -> Pair:
    """The paired test of ADL's outputs (seed -> translations) against a peer's."""
    seeds = sorted(set(ours) & set(theirs))
    if not seeds:
        raise ValueError(f"ADL and {peer} have no seed in common")
    found = paired_test(
        [ours[s] for s in seeds], [theirs[s] for s in seeds], references, "bs", samples
    )
    return Pair(
        peer, beam, seeds, found.bleu, found.chrf, found.bleu_p, found.chrf_p, found.signature
    )
