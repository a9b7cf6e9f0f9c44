"""A test set's sentences, and sacrebleu's sentence statistics of translations scored
against them: what both of the sweep's tests resample (:mod:`adl.runtime.sweep.significance`,
the training run as the unit; :mod:`adl.runtime.sweep.concatenated`, the sentences only).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping, Sequence

import numpy as np
from sacrebleu.metrics import BLEU, CHRF

from adl.runtime.sweep import fastscore

SEED = 12345  # the resampling's seed (sacrebleu's default): the same result on every machine
Scores = Callable[[np.ndarray], np.ndarray]  # summed sentence statistics -> corpus scores

METRICS: dict[str, Callable[..., BLEU | CHRF]] = {"BLEU": BLEU, "chrF": CHRF}
Runs = Mapping[int, Sequence[str]]  # seed -> that run's translations of the test set


def corpus_scores(metric: BLEU | CHRF, rows: np.ndarray) -> np.ndarray:
    """The corpus score of each row of summed sentence statistics (sacrebleu's formulas,
    over arrays: fastscore.py)."""
    return fastscore.scores(metric, rows)


class Sentences:
    """A test set's references, and sacrebleu's sentence statistics (sentences × statistics,
    whose column sums give the corpus score as sacrebleu's own bootstrap sums them) of every
    translation scored against them, each extracted once: a table compares its baseline's
    runs with many rows."""

    def __init__(self, references: Sequence[str]):
        self.references = list(references)
        self.metrics = {name: make() for name, make in METRICS.items()}
        self._cached = {name: make(references=[self.references]) for name, make in METRICS.items()}
        self._stats: dict[tuple[str, str], np.ndarray] = {}

    def stats(self, name: str, hyps: Sequence[str]) -> np.ndarray:
        if len(hyps) != len(self.references):
            raise ValueError(f"{len(hyps)} translations for {len(self.references)} references")
        key = (name, hashlib.sha256("\n".join(hyps).encode()).hexdigest())
        if key not in self._stats:
            found = self._cached[name]._extract_corpus_statistics(list(hyps), None)  # refs cached
            self._stats[key] = np.array(found, dtype=np.float64)
        return self._stats[key]

    def runs(self, name: str, runs: Runs) -> dict[int, np.ndarray]:
        return {seed: self.stats(name, hyps) for seed, hyps in runs.items()}

    def scores(self, name: str, rows: np.ndarray) -> np.ndarray:
        return corpus_scores(self.metrics[name], rows)


def sentences_of(references: Sequence[str] | Sentences) -> Sentences:
    return references if isinstance(references, Sentences) else Sentences(references)
