"""Paired significance of a system's difference to the baseline, with sacrebleu's own tests.

A system and the baseline each have one translation of the test set per seed. The outputs of
the seeds both have are concatenated in seed order (seed s of the system against seed s of
the baseline, sentence by sentence, the references repeated once per seed), and sacrebleu's
paired test compares the two: paired bootstrap resampling (``bs``, the default, 1,000
resamples, as Moses' script: draw the sentences with replacement, score both systems on each
draw, and count how often the centred difference exceeds the real one) or approximate
randomization (``ar``, 10,000 trials: each trial swaps the two systems' translations of a
random half of the sentences). A small p-value says that a difference this large would
rarely arise if the two systems were interchangeable.

Both of sacrebleu's tests count only *strictly* larger differences (MultEval's choice). Two
outputs with the same score (identical outputs, or two that both score BLEU 0) therefore get
p = 1/(samples + 1), "significant"; when the scores are equal there is no difference to
test and the p-value is 1 (every resample's difference is at least as large), which is what
is reported here for such a metric.
For ``ar`` the same tie rule also bites when only a few sentences differ (each trial then
reproduces the real difference exactly, and ties are not counted): two outputs that differ
in one sentence get p = 0.0001. That is why ``bs`` is the default: systems that decode the
same model in two ways often differ in few sentences.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import cast

from sacrebleu.metrics import BLEU, CHRF
from sacrebleu.significance import PairedTest, Result

SIGNIFICANT = 0.05  # p below this: a difference unlikely to arise by chance


@dataclass
class Paired:
    """The outcome of one paired test (scores on the concatenated outputs)."""

    bleu_p: float
    chrf_p: float
    bleu: tuple[float, float]  # (baseline, system) corpus BLEU of the concatenation
    chrf: tuple[float, float]
    signature: str  # the test's sacrebleu signature (test, trials, seed)


def paired_test(
    baseline: list[list[str]],
    system: list[list[str]],
    references: list[str],
    test: str = "ar",
    samples: int = 10_000,
) -> Paired:
    """``baseline`` and ``system``: one list of translations per seed, in the same seed
    order; ``references``: the test set's references (one per sentence)."""
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
