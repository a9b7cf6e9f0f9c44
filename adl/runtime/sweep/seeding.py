"""Which seeds each system of a sweep trains: the spec's for every system, and more for the
comparisons whose verdict needs them (``seed_budget:`` and ``headline:``).

The rule (docs/experiments.md, "Seeds where the verdict needs them"):

- every system trains the spec's seeds (``seeds:``);
- a **headline** row (``headline: NAME``: the paper's headline pair, NAME and the system it is
  compared with) gets the budget of seeds (``seed_budget:``) whatever its verdict;
- any other row whose budget (its own ``seed_budget:``, else the spec's) is above the spec's
  seeds is **looked at once**, when both of its systems have their results for the spec's
  seeds: if the interval of Δ BLEU at ``FIRST_LOOK`` (99 %) holds 0, both systems get seeds
  up to the budget; if it does not, the row keeps the spec's seeds;
- the seeds added are the integers after the spec's largest (seeds 1, 2, 3: then 4, 5, ...).

The verdict in the table is then made at 95 % on every seed the row has. A row looked at
twice (at the spec's seeds, then at the budget) is called significant wrongly at most
``1 - FIRST_LOOK`` + 0.05 = 6 % of the time (the union of the two looks' errors), where two
looks at 95 % each would allow 10 %; tests/runtime/test_significance.py measures the
procedure's rate on simulated comparisons.

The decision reads the committed result files only (results.py), so it is the same in
``adl sweep``, ``--check``, ``--status`` and ``adl sweep report`` on any machine.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from adl.runtime.sweep import results as res
from adl.runtime.sweep.sentences import Sentences
from adl.runtime.sweep.significance import metric_interval
from adl.runtime.sweep.spec import Spec

FIRST_LOOK = 0.99  # the level of the one look that decides whether a row gets more seeds

# (system, seed) -> the hash its result file must carry, or None: any file counts
Hashes = Callable[[str, int], "str | None"]


def sequence(spec: Spec, n: int) -> list[int]:
    """The first ``n`` seeds a system trains: the spec's, then the next integers."""
    seeds = list(spec.seeds)
    top = max(seeds, default=0)
    while len(seeds) < n:
        top += 1
        seeds.append(top)
    return seeds[: max(n, len(spec.seeds))]


def decide(
    spec: Spec,
    results: Path,
    hashes: Hashes | None = None,
    sentences: Sentences | None = None,
) -> dict[str, list[int]]:
    """Each system's seeds (every system named), from the committed results under
    ``results``. ``hashes``: what a result file must be made from to count; ``sentences``:
    the test set's shared sentence statistics (made here when not given)."""
    found = res.references(results, spec)
    refs = sentences or (Sentences(found) if found is not None else None)
    want: dict[str, set[int]] = {s.name: set(s.seeds or spec.seeds) for s in spec.systems}
    for system in spec.systems:
        other = spec.compared_with(system)
        budget = spec.budget(system)
        if other is None or other not in want or budget <= len(spec.seeds):
            continue
        if system.name in spec.headline:
            target = budget
        elif refs is not None and _cannot_tell(spec, results, system.name, other, refs, hashes):
            target = budget
        else:
            continue
        seeds = sequence(spec, target)
        want[system.name].update(seeds)
        want[other].update(seeds)
    return {name: sorted(seeds, key=_order(spec)) for name, seeds in want.items()}


def _order(spec: Spec) -> Callable[[int], tuple[int, int]]:
    return lambda s: (0, spec.seeds.index(s)) if s in spec.seeds else (1, s)


def _cannot_tell(
    spec: Spec,
    results: Path,
    system: str,
    other: str,
    refs: Sentences,
    hashes: Hashes | None,
) -> bool:
    """The first look: both systems have the spec's seeds, and the 99 % interval of Δ BLEU
    holds 0. False while a result is missing (no decision yet)."""
    runs = {}
    for name in (system, other):
        found = {}
        for seed in spec.seeds:
            record = res.read_record(res.record_path(results, spec, name, seed))
            want = hashes(name, seed) if hashes is not None else None
            if record is None or (want is not None and record[0].get("hash") != want):
                return False
            found[seed] = record[1]
        runs[name] = found
    if len(spec.seeds) < 2:
        return True  # one seed cannot tell anything
    looked = metric_interval("BLEU", runs[other], runs[system], refs, level=FIRST_LOOK)
    return looked.verdict == "tie"
