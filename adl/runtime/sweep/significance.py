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

The earlier test, kept as a second column named for what it measures (the sentences only:
sacrebleu's paired bootstrap or approximate randomization of the seeds' outputs
concatenated), is :mod:`adl.runtime.sweep.concatenated`; the sentence statistics both
resample are :mod:`adl.runtime.sweep.sentences`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field

import numpy as np

from adl.runtime.sweep.concatenated import Paired, concatenated_bootstrap, paired_test
from adl.runtime.sweep.sentences import METRICS, SEED, Runs, Scores, Sentences, sentences_of

SIGNIFICANT = 0.05  # p below this: a difference unlikely to arise by chance
LEVEL = 0.95  # the interval's confidence
SAMPLES = 1_000  # test-set resamples of the interval's test-set part

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
