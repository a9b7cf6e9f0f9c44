"""The sentences only: the sweep's earlier test, kept as a second column named for what it
measures. The seeds' outputs are concatenated (seed s against seed s, the references repeated
once per seed) and sacrebleu's paired bootstrap or approximate randomization compares the
two concatenations: it says whether these particular runs differ on these sentences, not
whether the systems do (:mod:`adl.runtime.sweep.significance` has the test whose unit is the
training run).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import partial
from typing import cast

import numpy as np
from sacrebleu.metrics import BLEU, CHRF
from sacrebleu.significance import PairedTest, Result

from adl.runtime.sweep.sentences import METRICS, SEED, Scores, Sentences


@dataclass
class Paired:
    """The outcome of one sentence-only paired test (scores on the concatenated outputs)."""

    bleu_p: float
    chrf_p: float
    bleu: tuple[float, float]  # (baseline, system) corpus BLEU of the concatenation
    chrf: tuple[float, float]
    signature: str  # the test's sacrebleu signature (test, trials, seed)


def concatenated_p(
    baseline: np.ndarray,
    system: np.ndarray,
    scores: Scores,
    idxs: np.ndarray,
) -> tuple[float, float, float]:
    """sacrebleu's paired bootstrap (its ``_paired_bs_test``) on sentence statistics: the
    (baseline, system) corpus scores, and the p-value: the absolute score difference on each
    draw of sentences (``idxs``: draws × sentences), centred on its mean, exceeds the real
    absolute difference in c draws: p = (c + 1)/(draws + 1); 1 where the scores are equal."""
    real_a = float(scores(baseline.sum(0, keepdims=True))[0])
    real_b = float(scores(system.sum(0, keepdims=True))[0])
    if real_a == real_b:
        return real_a, real_b, 1.0
    n = baseline.shape[0]
    counts = np.stack([np.bincount(row, minlength=n) for row in idxs]).astype(np.float64)
    drawn = np.abs(scores(counts @ system) - scores(counts @ baseline))  # each draw's sums
    c = int(np.sum(drawn - drawn.mean() > abs(real_b - real_a)))
    return real_a, real_b, (c + 1) / (len(idxs) + 1)


def concatenated_bootstrap(
    sentences: Sentences,
    baseline: Sequence[Sequence[str]],
    system: Sequence[Sequence[str]],
    samples: int = 1_000,
) -> Paired:
    """The sentence-only paired bootstrap of :func:`paired_test` (``bs``), made from the
    shared sentence statistics: the same draws (sacrebleu's seed and ``rng.choice``), so
    the same p-values as sacrebleu's own (a test checks it), without extracting every
    translation's statistics again for every row."""
    if len(baseline) != len(system) or not baseline:
        raise ValueError("give the same number (at least one) of outputs for both systems")
    n = len(sentences.references) * len(baseline)
    idxs = np.random.default_rng(SEED).choice(n, size=(samples, n), replace=True)
    found = {}
    for name in METRICS:
        a = np.concatenate([sentences.stats(name, h) for h in baseline])
        b = np.concatenate([sentences.stats(name, h) for h in system])
        found[name] = concatenated_p(a, b, partial(sentences.scores, name), idxs)
    bleu, chrf = found["BLEU"], found["chrF"]
    return Paired(
        bleu[2],
        chrf[2],
        (bleu[0], bleu[1]),
        (chrf[0], chrf[1]),
        f"paired bootstrap (sacrebleu bs:{samples}|seed:{SEED})",
    )


def paired_test(
    baseline: list[list[str]],
    system: list[list[str]],
    references: Sequence[str],
    test: str = "ar",
    samples: int = 10_000,
) -> Paired:
    """The sentences only: ``baseline`` and ``system`` are one list of translations per seed,
    in the same seed order; the seeds' outputs are concatenated (seed s against seed s,
    sentence by sentence, the references repeated once per seed) and sacrebleu's paired test
    compares the two: paired bootstrap resampling (``bs``, as Moses' script: draw the
    sentences with replacement, score both on each draw, count how often the centred
    difference exceeds the real one) or approximate randomization (``ar``: each trial swaps
    the two systems' translations of a random half of the sentences).

    This measures the test set's noise only: it says whether these particular runs differ,
    not whether the systems do (the module's docstring). Both of sacrebleu's tests count only
    *strictly* larger differences, so two outputs with the same score would get p =
    1/(samples + 1); where the scores are equal the p-value reported is 1."""
    if len(baseline) != len(system) or not baseline:
        raise ValueError("give the same number (at least one) of outputs for both systems")
    for outputs in (*baseline, *system):
        if len(outputs) != len(references):
            raise ValueError(f"{len(outputs)} translations for {len(references)} references")
    base = [line for outputs in baseline for line in outputs]
    other = [line for outputs in system for line in outputs]
    refs = [list(references) * len(baseline)]
    kind = "approximate randomization" if test == "ar" else "paired bootstrap"
    names: list[tuple[str, Sequence[str]]] = [("baseline", base), ("system", other)]
    signatures, scores = PairedTest(
        names, {"BLEU": BLEU(), "chrF": CHRF()}, refs, test_type=test, n_samples=samples
    )()
    bleu_key, chrf_key = [k for k in scores if k != "System"]
    # a metric's entries are Results (only the "System" entry holds names)
    b, c = cast(list[Result], scores[bleu_key]), cast(list[Result], scores[chrf_key])
    sig = str(signatures[bleu_key]).split("|")
    extra = "|".join(part for part in sig if part.split(":")[0] in (test, "seed", "bs"))
    p = lambda r: 1.0 if r[0].score == r[1].score else r[1].p_value  # no difference: p = 1
    return Paired(
        p(b),
        p(c),
        (b[0].score, b[1].score),
        (c[0].score, c[1].score),
        f"{kind} (sacrebleu {extra})",
    )
