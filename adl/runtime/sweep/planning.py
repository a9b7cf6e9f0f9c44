"""From a spec to its plan as the committed results decide it: a regime's rows (regime.py)
once the training set's size and each system's peak rate are known, and each row's seeds
(seeding.py). ``adl sweep``, ``--check``, ``--status``, ``report`` and ``curves`` all plan
through :func:`load_plan`, so they agree on any machine."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from adl.runtime.errors import UserError
from adl.runtime.sweep import results as res
from adl.runtime.sweep.plan import Plan, check_disk, decoding_key, load, sort_problems
from adl.runtime.sweep.regime import make_subsamples, pool_size, sizes
from adl.runtime.sweep.regime_rates import chosen
from adl.runtime.sweep.seeding import decide
from adl.runtime.sweep.spec import Spec, SpecError
from adl.runtime.sweep.state import read_json, write_text

REGIME = "regime.json"  # RESULTS/SPEC/regime.json: the training set's pairs and the subsamples


def outcome_hashes(plan: Plan) -> dict[tuple[str, int], str]:
    """What each (system, seed) of the plan is made from (results.outcome_hash); the data
    must be there."""
    return {
        (d.system, d.seed): res.outcome_hash(run.config, decoding_key(d, plan))
        for run in plan.runs
        for d in run.decodings
    }


def data_ready(plan: Plan) -> bool:
    return all(Path(p).is_file() for p in (*plan.data.train, *plan.data.test))


def load_plan(
    target: str | Path, out: str | Path | None = None, results: str | Path | None = None
) -> tuple[Spec, Plan, Path]:
    """The spec (as read), its plan, and where its results are kept. A regime's rows are
    planned from the training set's size (the data, or the committed regime.json) and the
    rates its committed searches chose (checked against what they must be made from when
    the data is there); without either, nothing of it is planned yet."""
    spec, plan = load(target, out)
    kept = res.root(spec, plan.out, results)
    if spec.regime is None:
        return spec, plan, kept
    pool = regime_pool(spec, plan, kept)
    if pool is None:
        return spec, plan, kept
    _, searching = load(target, out, (pool, {}))
    hashes = outcome_hashes(searching) if data_ready(searching) else None
    rates = chosen(spec, kept, (lambda n, s: hashes.get((n, s))) if hashes is not None else None)
    _, plan = load(target, out, (pool, rates))
    return spec, plan, kept


def regime_pool(spec: Spec, plan: Plan, kept: Path) -> int | None:
    """The pairs of a regime's training set: counted in the data, else the committed
    regime.json's (reports need no data), else None."""
    if Path(plan.data.train[0]).is_file():
        return pool_size(plan.data.train[0])
    found = read_json(res.folder(kept, spec) / REGIME)
    return int(found["pool"]) if found and "pool" in found else None


def prepare_regime(spec: Spec, plan: Plan, kept: Path) -> None:
    """The subsamples of a regime (written once) and RESULTS/SPEC/regime.json, which records
    the training set's pairs, the sizes and each subsample's sha256 (what a report without
    the data plans from)."""
    regime = spec.regime
    if regime is None:
        return
    files = make_subsamples(plan.data.train, plan.data.langs, regime)
    pool = pool_size(plan.data.train[0])
    record = {
        "pool": pool,
        "sizes": sizes(regime, pool),
        "sample_seed": regime.sample_seed,
        "subsamples": {
            str(size): {Path(f).suffix[1:]: _sha256(f) for f in pair}
            for size, pair in sorted(files.items())
        },
    }
    write_text(res.folder(kept, spec) / REGIME, json.dumps(record, indent=1) + "\n")


def _sha256(path: str) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def seeded(plan: Plan, kept: Path) -> tuple[Plan, dict[tuple[str, int], str]]:
    """The plan with each system's seeds as the committed results decide them (seeding.py),
    its runs fingerprinted and compared with those on disk, and what each result is made
    from. Call it once the data is there."""
    base = outcome_hashes(plan)
    seeds = decide(plan.spec, kept, lambda system, seed: base.get((system, seed)))
    plan = plan.with_seeds(seeds)
    problems = check_disk(plan)
    if problems:
        raise SpecError(sort_problems(problems), plan.spec.path)
    return plan, outcome_hashes(plan)


def describe(spec: Spec, plan: Plan) -> list[str]:
    """A regime's sizes as ``--check`` lists them: pairs, updates, the scaled settings, and
    the passes in target words (updates × the batch's tokens / the subsample's target words;
    sentencepiece makes more pieces than words, so a run's recorded passes are fewer), and
    which systems' curves wait for their rate search."""
    regime = spec.regime
    if regime is None or not data_ready(plan):
        return []
    from adl.runtime.sweep.regime import steps_for, subsample_files

    pool = pool_size(plan.data.train[0])
    found = sizes(regime, pool)
    config = next(iter(plan.configs.values()), None)
    batch = config.train.max_tokens if config else 0
    preset = config.train.max_steps if config else 0
    lines = [
        f"regime: {len(found)} sizes of {pool:,} training pairs, shuffled with seed {regime.sample_seed}:"
    ]
    for size in found:
        steps = steps_for(spec, size, found[-1])
        target = subsample_files(plan.data.train, plan.data.langs, regime, size)[1]
        words = sum(
            len(line.split()) for line in Path(target).read_text(encoding="utf-8").splitlines()
        )
        scaled = ", ".join(
            f"{key} {max(1, round(_setting(config, key) * steps / preset)):,}"
            for key in regime.scale
            if config is not None and preset
        )
        lines.append(
            f"  {size:,} pairs: {steps:,} updates"
            + (f" ({scaled})" if scaled else "")
            + (f", {steps * batch / words:.1f} passes in target words" if words and batch else "")
        )
    if regime.rates:
        curves = {r.of for r in plan.spec.systems if r.of and "@lr" not in r.name}
        waiting = [s.name for s in spec.systems if s.name not in curves]
        at = regime.rate_size or found[-1]
        rates = ", ".join(f"{r:g}" for r in regime.rates)
        lines.append(f"  peak rates searched at {at:,} pairs, seed {spec.seeds[0]}: {rates}")
        if waiting:
            lines.append(f"  waiting for their rate search: the curves of {', '.join(waiting)}")
    return lines


def _setting(config, key: str) -> float:
    section, name = key.split(".", 1)
    return getattr(getattr(config, section), name)


def current(
    target: str | Path, out: str | Path | None, results: str | Path | None
) -> tuple[Spec, Plan, Path, dict[tuple[str, int], str]]:
    """:func:`load_plan` then :func:`seeded`: what to run now (the data must be there)."""
    spec, plan, kept = load_plan(target, out, results)
    if spec.regime is not None and not plan.runs and plan.spec is spec:
        raise UserError(f"{spec.path}: the regime's training set is not there yet")
    plan, hashes = seeded(plan, kept)
    return spec, plan, kept, hashes
