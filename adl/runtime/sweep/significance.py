"""Comparing two systems trained with several seeds each: the unit is the training run.

A system's score on the test set varies with two things: the training run (the seed sets the
initial weights, the data order and dropout; two identical runs of ADL once differed by 3.3
BLEU) and the test set (another sample of sentences would score differently). A test that
resamples only the sentences of the seeds' outputs concatenated treats three runs as one test
set three times as large: it measures the test set's noise and not the training's, and calls
many comparisons of two identical systems significant (bench/significance.py simulates them;
docs/results/bench/significance.json has the rates, tests/runtime/test_significance.py
asserts them).

:func:`compare_runs` (and :func:`interval` under it) makes the interval of

    Δ = mean over the system's runs of its corpus score − mean over the baseline's runs

from both sources of noise, each estimated where it shows:

- **the runs**: the spread of each system's runs, ``s²_A/n_A + s²_B/n_B`` (Welch): each
  run is one draw of the training procedure. A sweep's seeds are not paired: seed s of one
  architecture and seed s of another share their data order at most, so the runs are two
  independent samples (where a correlation exists, leaving it out only widens the
  interval). Where the runs of a seed do belong together (``paired=True``: the peer
  benchmark trains ADL and a peer side by side in one round, under one clock, so a slow
  round slows both), the runs' part is the spread of the per-seed differences over the
  seeds both have, ``s²_D/n`` (a paired t).
- **the test set**: ``v_T``, the variance of Δ when the test sentences are drawn again with
  replacement, the same draws for every run of both systems (``samples`` draws; the sentence
  statistics are sacrebleu's own, summed as its bootstrap sums them), so that what the two
  systems share on a sentence cancels, less each run's own noise on the sentences, which the
  runs' spread already holds (:func:`sentence_variance`).

The interval is ``Δ ± t(ν) · sqrt(runs + v_T)`` and the p-value the same t's two-sided tail,
ν by Welch–Satterthwaite, the test-set part counted with no more degrees of freedom than the
runs' part has in all: its correction for the runs' own noise leans on the same few runs,
and a test-set part that is zero in truth but estimated a little above it would otherwise
buy degrees of freedom it has not got (with a paired test at 3 seeds, 7 % wrong instead of
5 %).

Why not a bootstrap over the seeds (resample each system's runs, then the sentences): in
the simulated worlds it does about as well, but 3 to 5 resampled seeds take a handful of
values and its percentile interval has no known behaviour at those counts, while Student's
t is exact for normally spread run scores and has a paired form. On the simulated
comparisons ADL's test is wrong in at most 6 % of null comparisons at 0.05 (3 and 5 seeds,
paired or not), and finds a real Δ of two run standard deviations in most comparisons with
5 seeds a side.

With one run of either system (one common seed, paired) there is no spread to measure: the
interval is not made and the verdict is that the seeds cannot tell (``None`` bounds).

:func:`concatenated_bootstrap` and :func:`paired_test` are the earlier test, kept as a
second column named for what it measures (the sentences only): sacrebleu's paired bootstrap
or approximate randomization of the seeds' outputs concatenated.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from functools import partial
from typing import cast

import numpy as np
from sacrebleu.metrics import BLEU, CHRF
from sacrebleu.significance import PairedTest, Result

from adl.runtime.sweep import fastscore

SIGNIFICANT = 0.05  # p below this: a difference unlikely to arise by chance
LEVEL = 0.95  # the interval's confidence
SAMPLES = 1_000  # test-set resamples of the interval's test-set part
SEED = 12345  # the resampling's seed (sacrebleu's default): the same interval on every machine

AHEAD, BEHIND, TIE = "ahead", "behind", "tie"


# --- the test ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class Interval:
    """One metric's comparison of a system with its baseline over their runs."""

    metric: str  # "BLEU" or "chrF"
    delta: float  # mean of the system's runs minus mean of the baseline's
    low: float | None  # the interval (None: one run of a system, no spread to measure)
    high: float | None
    p: float | None  # two-sided p-value of the same test
    df: float | None  # degrees of freedom of the t (inf when the runs agree exactly)
    se_runs: float | None  # the training part's standard error
    se_sentences: float  # the test-set part's standard error
    runs: tuple[int, int]  # runs of the baseline and of the system
    per_seed: dict[int, float] = field(default_factory=dict)  # Δ of the seeds both have
    means: tuple[float, float] = (0.0, 0.0)  # the baseline's and the system's mean score
    level: float = LEVEL
    paired: bool = False  # the runs' part from the per-seed differences (interval())

    @property
    def favour(self) -> tuple[int, int]:
        """(seeds where the system scores higher, seeds where the baseline does)."""
        return (
            sum(1 for d in self.per_seed.values() if d > 0),
            sum(1 for d in self.per_seed.values() if d < 0),
        )

    @property
    def verdict(self) -> str:
        """'ahead' (the interval above 0), 'behind' (below 0) or 'tie' (it holds 0, or
        there are too few runs to make it): the seeds cannot tell the systems apart."""
        return verdict(self.low, self.high)

    def to_dict(self) -> dict:
        """The fields as JSON holds them, and the favour and verdict they imply."""
        return {
            **asdict(self),
            "df": None if self.df is None or math.isinf(self.df) else self.df,
            "runs": list(self.runs),
            "means": list(self.means),
            "per_seed": {str(k): v for k, v in sorted(self.per_seed.items())},
            "favour": list(self.favour),
            "verdict": self.verdict,
        }


def interval_of(record: dict) -> Interval:
    """An :class:`Interval` from its :meth:`Interval.to_dict` (a committed result file)."""
    df = record.get("df")
    return Interval(
        record["metric"],
        record["delta"],
        record["low"],
        record["high"],
        record["p"],
        math.inf if df is None and record["low"] is not None else df,
        record["se_runs"],
        record["se_sentences"],
        (record["runs"][0], record["runs"][1]),
        {int(k): v for k, v in record["per_seed"].items()},
        (record["means"][0], record["means"][1]),
        record.get("level", LEVEL),
        record.get("paired", False),
    )


def verdict(low: float | None, high: float | None) -> str:
    """The verdict of an interval of Δ (system minus baseline)."""
    if low is None or high is None:
        return TIE
    if low > 0:
        return AHEAD
    if high < 0:
        return BEHIND
    return TIE


# rows of summed sentence statistics (k × statistics) -> the k corpus scores
Scores = Callable[[np.ndarray], np.ndarray]


def interval(
    baseline: Mapping[int, np.ndarray],
    system: Mapping[int, np.ndarray],
    scores: Scores,
    metric: str = "score",
    samples: int = SAMPLES,
    level: float = LEVEL,
    rng: np.random.Generator | None = None,
    paired: bool = False,
) -> Interval:
    """The interval of Δ from sentence statistics: ``baseline[seed]`` and ``system[seed]``
    are (sentences × statistics) arrays, one per run, all over the same test sentences in the
    same order; ``scores`` turns rows of summed statistics into corpus scores.

    ``paired``: the runs of a seed belong together (they shared something that moves both
    scores, such as the round of a timed benchmark, which ran them side by side on one
    machine): the runs' part is then the spread of the per-seed differences over the seeds
    both have (a paired t, n - 1 degrees of freedom), and only those seeds count."""
    if not baseline or not system:
        raise ValueError("each system needs at least one run")
    if paired:
        both = sorted(set(baseline) & set(system))
        if not both:
            raise ValueError("a paired comparison needs seeds both systems have")
        baseline = {k: baseline[k] for k in both}
        system = {k: system[k] for k in both}
    shapes = {s.shape[0] for s in (*baseline.values(), *system.values())}
    if len(shapes) != 1:
        raise ValueError(f"the runs are over different numbers of sentences ({sorted(shapes)})")
    n = shapes.pop()
    summed = lambda runs: np.stack([runs[k].sum(0) for k in sorted(runs)])
    base = dict(zip(sorted(baseline), map(float, scores(summed(baseline)))))
    other = dict(zip(sorted(system), map(float, scores(summed(system)))))
    a, b = np.array(list(base.values())), np.array(list(other.values()))
    delta = float(b.mean() - a.mean())
    means = (float(a.mean()), float(b.mean()))
    per_seed = {k: other[k] - base[k] for k in sorted(set(base) & set(other))}
    # the test set: the same draws of sentences for every run of both systems
    rng = rng if rng is not None else np.random.default_rng(SEED)
    counts = rng.multinomial(n, np.full(n, 1.0 / n), size=samples).astype(np.float64)
    drawn_a = np.stack([scores(counts @ baseline[k]) for k in sorted(baseline)])  # runs × draws
    drawn_b = np.stack([scores(counts @ system[k]) for k in sorted(system)])
    if paired:
        v_t = sentence_variance(np.zeros((1, samples)), drawn_b - drawn_a)
        diffs = np.array(list(per_seed.values()))
        parts = [(float(diffs.var(ddof=1)) / len(diffs), len(diffs))] if len(diffs) > 1 else []
    else:
        v_t = sentence_variance(drawn_a, drawn_b)
        parts = (
            [(float(x.var(ddof=1)) / len(x), len(x)) for x in (a, b)]
            if min(len(a), len(b)) > 1
            else []
        )
    runs = (len(a), len(b))
    if not parts:  # one run of a system (or one seed of a pair): no spread to measure
        return Interval(
            metric,
            delta,
            None,
            None,
            None,
            None,
            None,
            math.sqrt(v_t),
            runs,
            per_seed,
            means,
            level,
        )
    v_runs = sum(v for v, _ in parts)
    se = math.sqrt(v_runs + v_t)
    dof = sum(v**2 / (k - 1) for v, k in parts)
    # Welch-Satterthwaite; the test-set part counted with as few degrees of freedom as the
    # runs' part has in all (its estimate leans on the same few runs: see the docstring)
    dof_t = sum(k - 1 for _, k in parts)
    df = (v_runs + v_t) ** 2 / (dof + v_t**2 / dof_t) if dof + v_t > 0 else math.inf
    if se == 0:  # identical scores everywhere: nothing varies
        low = high = delta
        p = 1.0 if delta == 0 else 0.0
    else:
        from scipy.stats import t as student  # type: ignore[import-untyped]

        half = float(student.ppf(0.5 + level / 2, df)) * se
        low, high = delta - half, delta + half
        p = float(2 * student.sf(abs(delta) / se, df))
    return Interval(
        metric,
        delta,
        low,
        high,
        p,
        df,
        math.sqrt(v_runs),
        math.sqrt(v_t),
        runs,
        per_seed,
        means,
        level,
        paired,
    )


def sentence_variance(drawn_a: np.ndarray, drawn_b: np.ndarray) -> float:
    """The test set's share of the variance of Δ, from the scores of every run on the same
    resampled test sets (runs × draws, one array a system).

    The resampled Δ (the mean of B's runs minus the mean of A's, on each draw) varies with
    what each system does on the sentences drawn, and also with each run's own noise on
    them; that second part is already in the runs' spread (a run's score on the fixed test
    set carries its own sentence noise). It is estimated from how far each run moves away
    from its system's mean over the draws (``w``, for n runs scaled by n/(n - 1)) and taken
    out, so that the training part and the test-set part are not counted twice."""
    if drawn_a.shape[1] < 2:
        return 0.0
    total = float(np.var(drawn_b.mean(0) - drawn_a.mean(0), ddof=1))
    overlap = 0.0
    for drawn in (drawn_a, drawn_b):
        n = drawn.shape[0]
        if n > 1:
            own = drawn - drawn.mean(
                0, keepdims=True
            )  # each run's departure from its system's mean
            w = float(np.mean(np.var(own, axis=1, ddof=1))) * n / (n - 1)
            overlap += w / n
    return max(total - overlap, 0.0)


# --- on translations --------------------------------------------------------------------------
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


def metric_interval(
    name: str,
    baseline: Runs,
    system: Runs,
    references: Sequence[str] | Sentences,
    samples: int = SAMPLES,
    level: float = LEVEL,
    paired: bool = False,
) -> Interval:
    """:func:`interval` of one metric (``BLEU`` or ``chrF``) on the runs' translations."""
    sent = sentences_of(references)
    scores = lambda rows: sent.scores(name, rows)
    rng = np.random.default_rng(SEED)
    a, b = sent.runs(name, baseline), sent.runs(name, system)
    return interval(a, b, scores, name, samples, level, rng, paired)


@dataclass(frozen=True)
class Comparison:
    """A system against its baseline over their runs: the interval of each metric, and the
    sentence-only test of the seeds both have (None when it was not asked for)."""

    bleu: Interval
    chrf: Interval
    sentences: Paired | None = None

    @property
    def verdict(self) -> str:
        return self.bleu.verdict


def compare_runs(
    baseline: Runs,
    system: Runs,
    references: Sequence[str] | Sentences,
    samples: int = SAMPLES,
    level: float = LEVEL,
    sentence_test: str | None = None,
    sentence_samples: int = 1_000,
    paired: bool = False,
) -> Comparison:
    """``baseline`` and ``system``: seed -> that run's translations of the test set;
    ``references``: the test set's references (or their :class:`Sentences`, to share the
    sentence statistics between comparisons). ``sentence_test`` ("bs" or "ar"): also the
    sentence-only test of the seeds both have (:func:`concatenated_bootstrap`, or sacrebleu's
    approximate randomization through :func:`paired_test`)."""
    sent = sentences_of(references)
    bleu, chrf = (
        metric_interval(name, baseline, system, sent, samples, level, paired) for name in METRICS
    )
    found = None
    both = sorted(set(baseline) & set(system))
    if sentence_test == "bs" and both:
        found = concatenated_bootstrap(
            sent, [baseline[k] for k in both], [system[k] for k in both], sentence_samples
        )
    elif sentence_test and both:
        found = paired_test(
            [list(baseline[k]) for k in both],
            [list(system[k]) for k in both],
            sent.references,
            sentence_test,
            sentence_samples,
        )
    return Comparison(bleu, chrf, found)


# --- the sentences only: the earlier test --------------------------------------------------------
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
