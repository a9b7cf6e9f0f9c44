"""The seed-aware significance test (adl/runtime/sweep/significance.py) on simulated comparisons
where the truth is known (bench/significance.py draws them), and the verdict rules
(adl/runtime/sweep/verdicts.py).

The simulated rates are the figures docs/experiments.md quotes ("The significance test"):
over 1,000 null comparisons at 0.05 ADL's test calls at most 7 % significant, where the
seeds' outputs concatenated call far more; with 5 seeds a side it finds a Δ of two run
standard deviations in most comparisons."""

import math
import sys

import numpy as np
import pytest
from conftest import ROOT

from adl.runtime.sweep.concatenated import concatenated_bootstrap, paired_test
from adl.runtime.sweep.sentences import Sentences
from adl.runtime.sweep.significance import (
    AHEAD,
    BEHIND,
    TIE,
    compare_runs,
    interval,
    sentence_variance,
)
from adl.runtime.sweep.verdicts import (
    CANNOT_TELL,
    NOT_REPRODUCED,
    REPRODUCED,
    Claim,
    claim_of,
    reproduced,
)

sys.path.insert(0, str(ROOT / "bench"))
import significance as sim  # noqa: E402

RESULTS = ROOT / "docs" / "results"
NULL, POWER = 1000, 1000  # simulated comparisons a rate is measured on
CONCATENATED = 300  # the concatenated bootstrap is slower: its rate on fewer


def _rates(settings):
    return {
        name: sim.rates(world, seeds, delta, n, seed=1, tests=tests)
        for name, world, seeds, delta, n, tests in settings
    }


PLAIN, AFFINITY = sim.WORLDS.values()


@pytest.fixture(scope="module")
def rates():
    """The plain world's rates, measured once (deterministic: fixed seeds)."""
    return _rates(
        [
            ("null3", PLAIN, 3, 0.0, NULL, ("runs",)),
            ("null5", PLAIN, 5, 0.0, NULL, ("runs",)),
            ("concat3", PLAIN, 3, 0.0, CONCATENATED, ("concatenated",)),
            ("concat5", PLAIN, 5, 0.0, CONCATENATED, ("concatenated",)),
            ("power5", PLAIN, 5, 2.0, POWER, ("runs",)),
        ]
    )


def test_false_positives_stay_near_the_level(rates):
    for name in ("null3", "null5"):
        assert rates[name].comparisons >= 1000
        assert rates[name].runs <= 0.07, (name, rates[name].runs)


def test_the_concatenated_bootstrap_is_far_above_the_level(rates):
    for name in ("concat3", "concat5"):
        assert rates[name].concatenated >= 0.15, (name, rates[name].concatenated)
        # on the same kind of comparisons, three times ADL's test's rate and more
        assert rates[name].concatenated >= 3 * rates[name.replace("concat", "null")].runs


def test_a_real_difference_of_two_run_deviations_is_found_with_five_seeds(rates):
    assert rates["power5"].runs >= 0.70, rates["power5"].runs


@pytest.mark.slow
def test_the_rates_hold_where_systems_have_their_own_sentences_and_where_rounds_pair_runs():
    """Where each system does well or badly on its own sentences (the test set's noise
    counts), and the peers' world, where a seed's round moves both systems' runs: the
    paired test for it, and the unpaired one still valid (only weaker)."""
    found = _rates(
        [
            ("null3", AFFINITY, 3, 0.0, NULL, ("runs", "paired")),
            ("null5", AFFINITY, 5, 0.0, NULL, ("runs",)),
            ("power5", AFFINITY, 5, 2.0, POWER, ("runs",)),
            ("paired-null3", sim.PAIRED, 3, 0.0, NULL, ("runs", "paired")),
            ("paired-null5", sim.PAIRED, 5, 0.0, NULL, ("paired",)),
            ("paired-power3", sim.PAIRED, 3, 2.0, POWER, ("runs", "paired")),
        ]
    )
    for name in ("null3", "null5", "paired-null3", "paired-null5"):
        assert (found[name].runs or 0) <= 0.07 and (found[name].paired or 0) <= 0.07, found[name]
    assert found["null3"].paired <= 0.07  # pairing where nothing pairs the runs: still valid
    # the test set's noise costs power where each system has its own sentences
    assert found["power5"].runs >= 0.45, found["power5"].runs
    # where rounds pair the runs, pairing finds what the unpaired test cannot
    power = found["paired-power3"]
    assert power.paired >= 0.65 and power.paired >= power.runs + 0.2, power


@pytest.mark.slow
def test_the_seed_budgets_two_looks_keep_false_positives_down():
    """seeding.py's rule: 3 seeds looked at 99 %, then 5 where that cannot tell, decided at
    95 %: at most 0.01 + 0.05 wrong by the union bound; measured on 1,000 null comparisons."""
    for world in (PLAIN, AFFINITY):
        wrong, grown = sim.two_looks(world, 3, 5, NULL, seed=2)
        assert wrong <= 0.07, wrong
        assert grown >= 0.9  # under the null nearly every pair asks for more seeds


def test_the_sentence_only_bootstrap_is_sacrebleus_own():
    """The sentence-only column, made from the shared sentence statistics, gives sacrebleu's
    own paired bootstrap p-values and scores on real outputs (the same draws)."""
    refs, a, b = _real("you2020", "BASE", "BASE-demo-recipe")
    ours = concatenated_bootstrap(Sentences(refs), [a[k] for k in a], [b[k] for k in b], 1000)
    theirs = paired_test([a[k] for k in a], [b[k] for k in b], refs, "bs", 1000)
    assert ours.bleu_p == pytest.approx(theirs.bleu_p) and ours.chrf_p == pytest.approx(
        theirs.chrf_p
    )
    assert ours.bleu == pytest.approx(theirs.bleu) and ours.chrf == pytest.approx(theirs.chrf)
    assert ours.signature == theirs.signature


def test_the_scores_over_arrays_are_sacrebleus():
    """fastscore.py against sacrebleu's own scoring, row by row: whole test sets, single
    sentences (zero matches, zero n-grams), resampled sets and an empty row."""
    from sacrebleu.metrics import BLEU, CHRF

    from adl.runtime.sweep import fastscore

    refs, a, _ = _real("you2020", "BASE", "HC-SA")
    rng = np.random.default_rng(0)
    for metric in (BLEU(), CHRF(), BLEU(smooth_method="floor"), CHRF(word_order=2)):
        stats = np.array(metric._extract_corpus_statistics(a[1], [refs]), dtype=float)
        drawn = [stats[rng.integers(0, len(stats), rng.integers(1, 30))].sum(0) for _ in range(500)]
        rows = np.vstack([stats.sum(0), stats, *drawn, np.zeros(stats.shape[1])])
        ours = fastscore.scores(metric, rows)
        theirs = np.array([metric._compute_score_from_stats(r).score for r in rows])
        np.testing.assert_allclose(ours, theirs, rtol=1e-12, atol=1e-12)


def _real(spec: str, baseline: str, system: str):
    refs = (RESULTS / spec / "test.ref").read_text(encoding="utf-8").splitlines()
    runs = lambda name: {
        int(p.stem[4:]): p.read_text(encoding="utf-8").splitlines()
        for p in sorted((RESULTS / spec / name).glob("seed[123].hyp"))
    }
    return refs, runs(baseline), runs(system)


# --- the interval by hand -------------------------------------------------------------------
def test_the_interval_is_welchs_with_the_test_sets_part():
    """Sentence scores that are constant within a run: no test-set part, so the interval is
    Welch's t interval of the run scores, computed here by hand (t quantiles from tables)."""
    a_scores, b_scores = [10.0, 11.0, 12.0], [13.0, 15.0, 14.0, 16.0]
    runs = lambda scores: {
        k + 1: np.stack([np.full(50, s), np.ones(50)], axis=1) for k, s in enumerate(scores)
    }
    found = interval(runs(a_scores), runs(b_scores), sim.mean_scores, samples=200)
    va, vb = 1.0 / 3, (5 / 3) / 4  # sample variances over n
    df = (va + vb) ** 2 / (va**2 / 2 + vb**2 / 3)
    assert found.delta == pytest.approx(14.5 - 11.0)
    assert found.se_sentences == pytest.approx(0.0, abs=1e-9)
    assert found.df == pytest.approx(df) and found.df == pytest.approx(4.959, abs=1e-3)
    # Student's t, 0.975 quantile: 2.5706 at 5 and 2.7764 at 4 degrees of freedom (tables),
    # interpolated in 1/df
    t = 2.5706 + (1 / 4.959 - 1 / 5) / (1 / 4 - 1 / 5) * (2.7764 - 2.5706)
    half = t * math.sqrt(va + vb)
    assert found.low == pytest.approx(3.5 - half, abs=0.01)
    assert found.high == pytest.approx(3.5 + half, abs=0.01)
    assert found.verdict == AHEAD and found.per_seed == {1: 3.0, 2: 4.0, 3: 2.0}
    assert found.favour == (3, 0)
    swapped = interval(runs(b_scores), runs(a_scores), sim.mean_scores, samples=200)
    assert swapped.verdict == BEHIND and swapped.low == pytest.approx(-found.high)


def test_one_run_cannot_tell():
    one = {1: np.stack([np.full(20, 5.0), np.ones(20)], axis=1)}
    found = interval(one, {1: one[1] + [1.0, 0.0]}, sim.mean_scores, samples=50)
    assert found.low is None and found.p is None and found.verdict == TIE
    assert found.delta == pytest.approx(1.0)


def test_the_test_sets_part_leaves_out_what_the_runs_spread_holds():
    """Runs whose sentences are independent noise around their system: the resampled Δ's
    variance is all the runs' own noise, already in their spread, so the part left is ~0;
    a shared system effect on sentences stays."""
    rng = np.random.default_rng(3)
    n, draws = 400, 2000
    counts = rng.multinomial(n, np.full(n, 1 / n), size=draws).astype(float)
    noise = lambda: rng.normal(0, 10, n)
    score = lambda y: counts @ y / n
    a = np.stack([score(noise()) for _ in range(3)])
    b = np.stack([score(noise()) for _ in range(3)])
    naive = float(np.var(b.mean(0) - a.mean(0), ddof=1))
    assert naive == pytest.approx(2 * 100 / n / 3, rel=0.15)
    assert sentence_variance(a, b) < 0.15 * naive
    own = rng.normal(0, 10, n)  # what system B does on each sentence, in all its runs
    b2 = np.stack([score(own + noise()) for _ in range(3)])
    assert sentence_variance(a, b2) == pytest.approx(100 / n, rel=0.25)


def test_compare_runs_on_real_outputs():
    """You et al.'s HC-SA against BASE, three seeds each: far apart on every seed; the
    sentence-only p beside it; the runs' part and the test set's both counted."""
    refs, a, b = _real("you2020", "BASE", "HC-SA")
    found = compare_runs(a, b, refs, samples=300, sentence_test="bs")
    assert found.verdict == AHEAD and found.bleu.favour == (3, 0)
    assert found.bleu.delta == pytest.approx(5.21, abs=0.01)  # the table's Δ BLEU
    assert found.bleu.low > 2 and found.bleu.se_runs > 0 and found.bleu.se_sentences > 0
    assert found.sentences is not None and found.sentences.bleu_p < 0.01
    level = compare_runs(a, a, refs, samples=100)
    assert level.bleu.delta == 0 and level.verdict == TIE and level.bleu.p == 1.0


# --- the paper's claims ---------------------------------------------------------------------
@pytest.mark.parametrize(
    "paper, against, stated, kind",
    [
        ("30.3", "30.0", None, "level"),  # within 0.5: level
        ("21.1", "30.0", None, "lower"),
        ("35.7", "34.4", None, "higher"),
        ("up to +3 (Table 2)", None, "higher", "higher"),
        ("30.0", "30.0", "none", None),  # a control: no claim
        ("below 7F (Table 1)", None, None, None),  # a sentence and no claim: nothing to check
    ],
)
def test_a_papers_claim(paper, against, stated, kind):
    found = claim_of(paper, against, stated)
    assert (found.kind if found else None) == kind


@pytest.mark.parametrize(
    "kind, low, high, outcome",
    [
        ("higher", 0.2, 3.0, REPRODUCED),
        ("higher", -3.0, -0.2, NOT_REPRODUCED),
        ("higher", -0.5, 2.0, CANNOT_TELL),
        ("lower", -3.0, -0.1, REPRODUCED),
        ("lower", 0.1, 2.0, NOT_REPRODUCED),
        ("level", -0.9, 0.8, REPRODUCED),
        ("level", 3.4, 7.0, NOT_REPRODUCED),  # HC-SA +5.2 where the paper has them level
        ("level", -7.0, -1.1, NOT_REPRODUCED),
        ("level", 0.5, 1.5, CANNOT_TELL),
        ("higher", None, None, CANNOT_TELL),  # one run: no interval
    ],
)
def test_the_rule_for_a_claim(kind, low, high, outcome):
    assert reproduced(Claim(kind, None), low, high) == outcome
    assert reproduced(None, low, high) is None


def test_the_rates_in_the_docs_are_the_committed_benchmarks():
    """docs/experiments.md's table of rates is bench/significance.py's table of the committed
    docs/results/bench/significance.json, and that file says what the tests above assert."""
    import json

    found = json.loads(sim.RESULT.read_text(encoding="utf-8"))
    text = (ROOT / "docs" / "experiments.md").read_text(encoding="utf-8")
    block = text.split("<!-- significance rates -->\n")[1].split(
        "<!-- end of significance rates -->"
    )[0]
    assert block == sim.markdown(found)
    for r in found:
        if r["delta"] == 0:
            assert all(r.get(t) is None or r[t] <= 0.07 for t in ("runs", "paired")), r
            if r.get("concatenated") is not None:
                assert r["concatenated"] >= 3 * r["runs"]
