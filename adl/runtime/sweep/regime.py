"""A curve over the training data (a spec's ``regime:``): how a pair's gap moves as the
training set grows, at equal passes, each system at its own best peak rate.

- **Sizes.** The spec's training set is shuffled once (``sample_seed``) and each size is the
  first k pairs of that order (``all``: every pair), so each subsample holds every smaller
  one; the validation and test sets are the spec's, the same for all sizes
  (:func:`make_subsamples` writes them beside the corpus, ``regime-sN/train-K.SRC``).
- **Updates.** The budget's ``steps`` are the largest size's; a size of k pairs gets
  ``steps × k / largest`` (at least 1), so every size reads its pairs about as often (the
  result files record ``train_pairs`` and the ``passes`` the run made). The settings named in
  ``scale`` (a warm-up, a validation interval) are scaled alike from the preset's values,
  which are for the preset's own ``max_steps``.
- **Peak rates.** Each system is trained once (the spec's first seed) at ``rate_size`` with
  each of ``rates``; the rate whose run reaches the highest validation BLEU is the system's
  for every size (regime_rates.py decides it from the committed result files).

The spec's systems become rows (:func:`expand`): ``NAME@lrRATE`` for the rate search (no
comparison, one seed), and ``NAME@K`` for the curve, each compared with the row of the same
size of the system the spec compares it with. A system's curve rows are planned once its
rate is chosen; until then its search rows are. Everything else (seeds, seed budgets, result
files, resumption, the table) is a sweep's as usual.
"""

from __future__ import annotations

import dataclasses
import random
from pathlib import Path

from adl.runtime.errors import UserError
from adl.runtime.sweep.spec import RegimeSpec, Spec, SystemSpec

SEP = "@"  # between a system's name and its size or rate in a row's name


def pool_size(train_src: str | Path) -> int:
    """The pairs of the spec's training set (lines of its source file)."""
    with open(train_src, encoding="utf-8") as f:
        return sum(1 for _ in f)


def sizes(regime: RegimeSpec, pool: int) -> list[int]:
    """The sizes in pairs (``all``: the pool); a size above the pool is an error."""
    found = [pool if s is None else s for s in regime.sizes]
    over = [s for s in found if s > pool]
    if over:
        raise UserError(
            f"regime: size {over[0]:,} is larger than the training set ({pool:,} pairs)"
        )
    return found


def steps_for(spec: Spec, size: int, largest: int) -> int:
    """The updates of a run on ``size`` pairs: the budget's steps scaled with the pairs."""
    return max(1, round(spec.steps * size / largest))


def rate_name(system: str, rate: float) -> str:
    return f"{system}{SEP}lr{rate:g}"


def size_name(system: str, size: int) -> str:
    return f"{system}{SEP}{size}"


def subsample_folder(train_src: str | Path, regime: RegimeSpec) -> Path:
    return Path(train_src).parent / f"regime-s{regime.sample_seed}"


def subsample_files(
    train: tuple[str, str], langs: tuple[str, str], regime: RegimeSpec, size: int
) -> tuple[str, str]:
    folder = subsample_folder(train[0], regime)
    return (str(folder / f"train-{size}.{langs[0]}"), str(folder / f"train-{size}.{langs[1]}"))


def order(pool: int, seed: int) -> list[int]:
    """The shuffle of the training set the subsamples are prefixes of."""
    found = list(range(pool))
    random.Random(seed).shuffle(found)
    return found


def make_subsamples(
    train: tuple[str, str], langs: tuple[str, str], regime: RegimeSpec
) -> dict[int, tuple[str, str]]:
    """Write every size's training files (once; the same bytes on any machine) and return
    them by size. The largest size is the whole training set in the shuffled order."""
    src = Path(train[0]).read_text(encoding="utf-8").splitlines()
    tgt = Path(train[1]).read_text(encoding="utf-8").splitlines()
    if len(src) != len(tgt):
        raise UserError(f"{train[0]}: {len(src):,} lines, {train[1]}: {len(tgt):,}")
    shuffled = order(len(src), regime.sample_seed)
    found = {}
    for size in sizes(regime, len(src)):
        files = subsample_files(train, langs, regime, size)
        found[size] = files
        if all(Path(f).is_file() for f in files):
            continue
        Path(files[0]).parent.mkdir(parents=True, exist_ok=True)
        for path, side in zip(files, (src, tgt)):
            tmp = Path(path + ".tmp")
            tmp.write_text("".join(side[i] + "\n" for i in shuffled[:size]), encoding="utf-8")
            tmp.replace(path)
    return found


def expand(
    spec: Spec, pool: int, train: tuple[str, str], langs: tuple[str, str], rates: dict[str, float]
) -> Spec:
    """The spec with its systems replaced by the regime's rows (see the module's docstring).
    ``pool``: the pairs of the training set; ``rates``: each system's chosen peak rate (a
    system not in it has its rate searched first, where the regime searches rates)."""
    regime = spec.regime
    assert regime is not None
    found = sizes(regime, pool)
    largest = found[-1]
    rows: list[dict] = []
    searched = bool(regime.rates)
    for system in spec.systems:
        if not system.trained:
            raise UserError(
                f"regime: system '{system.name}' decodes another's runs (decode_of:); a "
                "regime trains every system at every size"
            )
        at = regime.rate_size or largest
        for rate in regime.rates:
            rows.append(
                _row(spec, system, rate_name(system.name, rate), at, largest, train, langs)
                | {"settings": [*system.settings, ("optim.lr", rate, system.mark)]}
                | {"seeds": spec.seeds[:1], "compare": False, "paper": None, "claim": None}
            )
        if searched and system.name not in rates:
            continue  # its curve waits for its rate
        other = spec.compared_with(system)
        lr = [("optim.lr", rates[system.name], system.mark)] if searched else []
        for size in found:
            rows.append(
                _row(spec, system, size_name(system.name, size), size, largest, train, langs)
                | {
                    "settings": [*system.settings, *lr],
                    "against": size_name(other, size) if other else None,
                    "compare": other is not None,  # the baseline's rows: no Δ
                }
            )
    made = [SystemSpec(**fields) for fields in rows]
    headline = [r.name for r in made if r.of in spec.headline and r.compare]
    return dataclasses.replace(
        spec, systems=made, baseline=size_name(spec.baseline, largest), headline=headline
    )


def _row(
    spec: Spec,
    system: SystemSpec,
    name: str,
    size: int,
    largest: int,
    train: tuple[str, str],
    langs: tuple[str, str],
) -> dict:
    regime = spec.regime
    assert regime is not None
    fields = {f.name: getattr(system, f.name) for f in dataclasses.fields(system)}
    fields.update(
        name=name,
        of=system.name,
        size=size,
        steps=steps_for(spec, size, largest),
        train=subsample_files(train, langs, regime, size),
    )
    return fields


def rows_of(spec: Spec, system: str) -> list[SystemSpec]:
    """An expanded spec's curve rows of the spec's ``system``, smallest size first."""
    return sorted(
        (s for s in spec.systems if s.of == system and s.compare and s.size is not None),
        key=lambda s: s.size or 0,
    )
