"""Seeds and significance: a system's mean and standard deviation over its seeds, and ADL
against each peer with the test whose unit is the training run.

The test is ADL's own (``adl/runtime/sweep/significance.py``, the one ``adl sweep report``
uses), paired by seed: ADL's run of seed s and the peer's trained in the same round, side by
side on one machine under the same clock, so what the round did to the machine moves both
(a slower round gives both fewer updates). Δ = the mean over the seeds both have of ADL's
score minus the peer's, its 95 % interval from Student's t over those per-seed differences
with the test set's resampling variance added. ADL is ahead where the interval lies above 0,
the peer where it lies below, and it is a tie where it holds 0 (the seeds cannot tell). Beside it, the sentence-only paired bootstrap of the seeds both
have, concatenated (seed s of ADL against seed s of the peer): it measures the test set's
noise only, and decides nothing.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from adl.runtime.sweep.significance import Interval, compare_runs, interval_of

SAMPLES = 1000  # resamples of the test set (sacrebleu's default, Moses' script's)
# the tables' note on the test
VERDICT = (
    "verdicts: the 95 % interval of ADL's score minus the peer's over the seeds (paired by "
    "round: Student's t over the per-seed differences with the test set's resampling "
    "variance, adl/runtime/sweep/significance.py): ahead where it excludes 0, a tie where it "
    "holds 0; p sentences: the paired bootstrap of the seeds' concatenated outputs, which "
    "measures the test set's noise only"
)


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


WORDS = {"ahead": "ADL ahead", "behind": "peer ahead", "tie": "tie"}


def verdict(found: Interval) -> str:
    """'ADL ahead', 'peer ahead' or 'tie' (the interval of ADL minus the peer holds 0)."""
    return WORDS[found.verdict]


@dataclass
class Pair:
    """ADL against one peer, one search, over their runs."""

    peer: str  # the peer's key
    beam: int
    seeds: list[int]  # the seeds both have (the sentence-only test's)
    runs: tuple[int, int]  # (ADL's, the peer's)
    bleu: tuple[float, float]  # (ADL, peer): mean over the runs
    chrf: tuple[float, float]
    bleu_interval: Interval
    chrf_interval: Interval
    sentences_bleu_p: float | None  # the sentence-only test of the seeds both have
    sentences_chrf_p: float | None
    test: str  # the sentence-only test and its settings
    selection: str = ""  # the peer's model: "" the common rule's, else its own practice's

    @property
    def bleu_verdict(self) -> str:
        return verdict(self.bleu_interval)

    @property
    def chrf_verdict(self) -> str:
        return verdict(self.chrf_interval)

    def to_dict(self) -> dict:
        return {
            "peer": self.peer,
            "beam": self.beam,
            "seeds": self.seeds,
            "runs": list(self.runs),
            "bleu": list(self.bleu),
            "chrf": list(self.chrf),
            "bleu_interval": self.bleu_interval.to_dict(),
            "chrf_interval": self.chrf_interval.to_dict(),
            "bleu_verdict": self.bleu_verdict,
            "chrf_verdict": self.chrf_verdict,
            "sentences_bleu_p": self.sentences_bleu_p,
            "sentences_chrf_p": self.sentences_chrf_p,
            "test": self.test,
            "selection": self.selection,
        }


def pair_of(record: dict) -> Pair:
    """A :class:`Pair` from its :meth:`Pair.to_dict` (a committed results.json)."""
    return Pair(
        record["peer"],
        record["beam"],
        record["seeds"],
        (record["runs"][0], record["runs"][1]),
        (record["bleu"][0], record["bleu"][1]),
        (record["chrf"][0], record["chrf"][1]),
        interval_of(record["bleu_interval"]),
        interval_of(record["chrf_interval"]),
        record["sentences_bleu_p"],
        record["sentences_chrf_p"],
        record["test"],
        record.get("selection", ""),
    )


def compare(
    peer: str,
    beam: int,
    ours: dict[int, list[str]],
    theirs: dict[int, list[str]],
    references: list[str],
    samples: int = SAMPLES,
    selection: str = "",
) -> Pair:
    """ADL's runs (seed -> translations) against a peer's (its model chosen by the common
    rule, or by its own practice ``selection``)."""
    if not ours or not theirs:
        raise ValueError(f"ADL and {peer} need at least one run each")
    found = compare_runs(
        theirs, ours, references, sentence_test="bs", sentence_samples=samples, paired=True
    )
    b, c, sent = found.bleu, found.chrf, found.sentences
    return Pair(
        peer,
        beam,
        sorted(set(ours) & set(theirs)),
        (len(ours), len(theirs)),
        (b.means[1], b.means[0]),
        (c.means[1], c.means[0]),
        b,
        c,
        sent.bleu_p if sent else None,
        sent.chrf_p if sent else None,
        sent.signature if sent else "",
        selection,
    )
