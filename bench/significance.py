"""How often each significance test is wrong, on simulated comparisons where the truth is known.

    python bench/significance.py [--comparisons 1000] [--json]

Two systems are trained with n seeds each. Run r of system X scores sentence i of the test set

    y = mu_X + e_r + d_i + a_(X,i) + u_(r,i)

- ``e_r ~ N(0, seed_sd)``: what the seed does to the whole run (its quality);
- ``d_i ~ N(0, difficulty_sd)``: the sentence's difficulty, the same for every system;
- ``a_(X,i) ~ N(0, affinity_sd)``: what system X does well or badly on that sentence, the same
  for all of X's runs (0 in the first world: sentences are drawn around the run alone);
- ``u_(r,i) ~ N(0, noise_sd)``: the run's own noise on the sentence.

A run's corpus score is the mean of its sentences' ``y`` (sentence statistics ``[y, 1]``
summed, as sacrebleu sums its own). Each comparison draws a new test set and new runs. Under
the null ``mu_A = mu_B``, a test at 0.05 should call few comparisons significant; with
``mu_B - mu_A`` two seed standard deviations (the standard deviation of a run's corpus score
across seeds), a good test finds the difference most of the time.

The tests:
- **runs** (ADL's, adl/runtime/sweep/significance.py): Welch's t over the runs with the test
  set's resampling variance added;
- **concatenated**: the seeds' outputs concatenated, sentences resampled (sacrebleu's paired
  bootstrap, which the sweeps and the peer benchmark used as their verdict before; ADL's
  ``concatenated_p``, which a test holds equal to sacrebleu's own on real translations);
- **seeds, then sentences**: a two-level bootstrap, the runs of each system resampled, then the
  sentences; its 95 % percentile interval.

Prints each test's rate of significant comparisons in each setting (tests/runtime/
test_significance.py asserts ADL's rates and the concatenated test's).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from adl.runtime.sweep.concatenated import concatenated_p  # noqa: E402
from adl.runtime.sweep.significance import SIGNIFICANT, interval  # noqa: E402

SAMPLES = 200  # sentence resamples a test makes per comparison (ADL's default is 1,000)


@dataclass(frozen=True)
class World:
    sentences: int = 300
    seed_sd: float = 0.6  # a run's quality across seeds (score points)
    noise_sd: float = 7.0  # a run's own noise on one sentence
    difficulty_sd: float = 15.0  # a sentence's difficulty, shared by every system
    affinity_sd: float = 0.0  # a system's own affinity to a sentence, shared by its runs
    round_sd: float = 0.0  # what seed s's round does to both systems' runs of it (a paired world)

    @property
    def run_sd(self) -> float:
        """The standard deviation of a run's corpus score across seeds."""
        return math.sqrt(self.seed_sd**2 + self.round_sd**2 + self.noise_sd**2 / self.sentences)


def mean_scores(rows: np.ndarray) -> np.ndarray:
    """The simulated metric: the mean sentence score (rows of summed [y, 1])."""
    return rows[:, 0] / rows[:, 1]


def simulate(world: World, seeds: int, delta: float, rng: np.random.Generator):
    """One comparison: (baseline runs, system runs), seed -> (sentences × 2) statistics."""
    n = world.sentences
    difficulty = rng.normal(0.0, world.difficulty_sd, n)
    rounds = rng.normal(0.0, world.round_sd, seeds + 1) if world.round_sd else np.zeros(seeds + 1)

    def system(mu: float) -> dict[int, np.ndarray]:
        affinity = rng.normal(0.0, world.affinity_sd, n) if world.affinity_sd else 0.0
        runs = {}
        for seed in range(1, seeds + 1):
            y = mu + rng.normal(0.0, world.seed_sd) + rounds[seed] + difficulty + affinity
            y = y + rng.normal(0.0, world.noise_sd, n)
            runs[seed] = np.stack([y, np.ones(n)], axis=1)
        return runs

    return system(0.0), system(delta)


def concatenated(
    baseline: dict[int, np.ndarray],
    system: dict[int, np.ndarray],
    samples: int,
    rng: np.random.Generator,
) -> float:
    """The p-value of sacrebleu's paired bootstrap on the seeds' outputs concatenated (seed s
    against seed s), as ADL's significance.concatenated_p computes it."""
    seeds = sorted(set(baseline) & set(system))
    a = np.concatenate([baseline[s] for s in seeds])
    b = np.concatenate([system[s] for s in seeds])
    idxs = rng.choice(len(a), size=(samples, len(a)), replace=True)
    return concatenated_p(a, b, mean_scores, idxs)[2]


def two_level(
    baseline: dict[int, np.ndarray],
    system: dict[int, np.ndarray],
    samples: int,
    rng: np.random.Generator,
) -> tuple[float, float]:
    """The 95 % percentile interval of Δ from resampling each system's runs, then the
    sentences (the same sentences for both)."""
    a, b = list(baseline.values()), list(system.values())
    n = a[0].shape[0]
    out = np.empty(samples)
    for k in range(samples):
        counts = np.bincount(rng.integers(0, n, n), minlength=n).astype(np.float64)
        drawn = [[runs[i] for i in rng.integers(0, len(runs), len(runs))] for runs in (a, b)]
        means = [np.mean(mean_scores(np.stack([counts @ r for r in runs]))) for runs in drawn]
        out[k] = means[1] - means[0]
    low, high = np.percentile(out, [2.5, 97.5])
    return float(low), float(high)


@dataclass
class Rates:
    world: dict
    seeds: int
    delta: float  # in run standard deviations
    comparisons: int
    runs: float | None  # ADL's test: share of comparisons called significant (None: not run)
    concatenated: float | None
    two_level: float | None
    paired: float | None = None  # ADL's test, paired by seed (the peers' rounds)


def rates(
    world: World,
    seeds: int,
    delta_sds: float,
    comparisons: int,
    seed: int = 0,
    tests: tuple[str, ...] = ("runs", "concatenated", "two_level"),
) -> Rates:
    """The share of ``comparisons`` each test calls significant at 0.05 (for ``runs`` and
    ``two_level``: the 95 % interval excludes 0), the systems ``delta_sds`` run standard
    deviations apart."""
    rng = np.random.default_rng(seed)
    hits = {t: 0 for t in tests}
    for _ in range(comparisons):
        a, b = simulate(world, seeds, delta_sds * world.run_sd, rng)
        if "runs" in hits:
            found = interval(a, b, mean_scores, samples=SAMPLES, rng=rng)
            hits["runs"] += found.verdict != "tie"
        if "paired" in hits:
            found = interval(a, b, mean_scores, samples=SAMPLES, rng=rng, paired=True)
            hits["paired"] += found.verdict != "tie"
        if "concatenated" in hits:
            hits["concatenated"] += concatenated(a, b, SAMPLES, rng) < SIGNIFICANT
        if "two_level" in hits:
            low, high = two_level(a, b, SAMPLES, rng)
            hits["two_level"] += low > 0 or high < 0
    share = lambda t: hits[t] / comparisons if t in hits else None
    return Rates(
        asdict(world),
        seeds,
        delta_sds,
        comparisons,
        share("runs"),
        share("concatenated"),
        share("two_level"),
        share("paired"),
    )


def two_looks(
    world: World, first: int, budget: int, comparisons: int, seed: int = 0, delta_sds: float = 0.0
) -> tuple[float, float]:
    """The seed budget's procedure (adl/runtime/sweep/seeding.py): look at ``first`` seeds at
    99 %; where that interval holds 0, train up to ``budget`` seeds and decide at 95 %.
    Returns (the share of comparisons called significant, the share that got more seeds)."""
    from adl.runtime.sweep.seeding import FIRST_LOOK

    rng = np.random.default_rng(seed)
    hits = grown = 0
    for _ in range(comparisons):
        a, b = simulate(world, budget, delta_sds * world.run_sd, rng)
        few = lambda runs: {k: v for k, v in runs.items() if k <= first}
        looked = interval(few(a), few(b), mean_scores, samples=SAMPLES, level=FIRST_LOOK, rng=rng)
        if looked.verdict != "tie":
            hits += 1  # its 95 % interval, narrower, excludes 0 too
            continue
        grown += 1
        hits += interval(a, b, mean_scores, samples=SAMPLES, rng=rng).verdict != "tie"
    return hits / comparisons, grown / comparisons


WORLDS = {
    "sentences around the run": World(),
    "with each system's affinity to sentences": World(affinity_sd=6.0),
}
# the peer benchmark's world: the runs of a seed share their round (the same clock on the
# same machine at the same time), which moves both systems' scores alike
PAIRED = World(seed_sd=0.3, round_sd=1.0)


RESULT = Path(__file__).resolve().parent.parent / "docs" / "results" / "bench" / "significance.json"


def markdown(found: list[dict]) -> str:
    """The rates as the table docs/experiments.md holds (between ``<!-- significance rates
    -->`` and ``<!-- end of significance rates -->``; a test keeps them equal)."""
    cell = lambda v: "–" if v is None else f"{100 * v:.1f} %"
    head = "| world | seeds | true Δ | ADL's test | ADL's, paired by seed | concatenated | seeds, then sentences |"
    lines = [head, "|---|---|---:|---:|---:|---:|---:|"]
    for r in found:
        delta = f"{r['delta']:g} run sd"
        if "procedure" in r:
            lines.append(
                f"| {r['name']} | {r['procedure']} | {delta} | {cell(r['runs'])} "
                f"(more seeds: {cell(r['grown'])}) | – | – | – |"
            )
            continue
        lines.append(
            f"| {r['name']} | {r['seeds']} a side | {delta} | {cell(r['runs'])} | "
            f"{cell(r.get('paired'))} | {cell(r['concatenated'])} | {cell(r['two_level'])} |"
        )
    n = {r["comparisons"] for r in found}
    lines.append("")
    lines.append(
        f"Each row: {'/'.join(f'{x:,}' for x in sorted(n))} simulated comparisons; the share "
        "called significant at 0.05 (true Δ 0: wrong; 2 run sd: found). "
        "`python bench/significance.py --json` makes them."
    )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--comparisons", type=int, default=1000)
    p.add_argument("--json", action="store_true", help="print the rates as JSON")
    p.add_argument(
        "--markdown", action="store_true", help=f"print the table of {RESULT.name} (no simulation)"
    )
    args = p.parse_args(argv)
    if args.markdown:
        print(markdown(json.loads(RESULT.read_text(encoding="utf-8"))), end="")
        return 0
    found = []
    for name, world in WORLDS.items():
        for seeds, delta in ((3, 0.0), (5, 0.0), (5, 2.0)):
            r = rates(world, seeds, delta, args.comparisons)
            found.append({**asdict(r), "name": name})
            if not args.json:
                print(
                    f"{name:42s} seeds {seeds}  Δ {delta:.0f} sd  runs {r.runs:.3f}  "
                    f"concatenated {r.concatenated:.3f}  seeds-then-sentences "
                    f"{r.two_level:.3f}",
                    flush=True,
                )
        for delta in (0.0, 2.0):
            hit, grown = two_looks(world, 3, 5, args.comparisons, delta_sds=delta)
            found.append(
                {
                    "name": name,
                    "procedure": "3 seeds, then 5 where 99 % cannot tell",
                    "delta": delta,
                    "comparisons": args.comparisons,
                    "runs": hit,
                    "grown": grown,
                }
            )
            if not args.json:
                print(
                    f"{name:42s} 3 then 5 seeds  Δ {delta:.0f} sd  runs {hit:.3f}  "
                    f"(more seeds in {grown:.3f})",
                    flush=True,
                )
    for seeds, delta in ((3, 0.0), (5, 0.0), (3, 2.0), (5, 2.0)):
        r = rates(PAIRED, seeds, delta, args.comparisons, tests=("runs", "paired"))
        found.append({**asdict(r), "name": "runs paired by their round (the peers')"})
        if not args.json:
            print(
                f"{'rounds shared (peers)':42s} seeds {seeds}  Δ {delta:.0f} sd  runs "
                f"{r.runs:.3f}  paired {r.paired:.3f}",
                flush=True,
            )
    if args.json:
        print(json.dumps(found, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
