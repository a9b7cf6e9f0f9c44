"""The peak rate of each system of a regime (regime.py), chosen from the committed results of
its rate search: the rate whose run reached the highest validation BLEU (the best of its
validations during training), or, where the runs validate no BLEU (``train.bleu: false``),
the lowest validation loss; a tie goes to the lower rate. A system whose search is not
finished has no rate yet, and its curve waits."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from adl.runtime.sweep import results as res
from adl.runtime.sweep.regime import rate_name
from adl.runtime.sweep.spec import Spec

# (row, seed) -> the hash its result file must carry, or None: any file counts
Hashes = Callable[[str, int], "str | None"]


def best_validation_bleu(record: dict) -> float | None:
    found = [v["bleu"] for v in record.get("validations") or [] if v.get("bleu") is not None]
    return max(found) if found else None


def score(record: dict) -> float | None:
    """What the search maximises: the best validation BLEU, else minus the lowest loss."""
    bleu = best_validation_bleu(record)
    if bleu is not None:
        return bleu
    losses = [v["loss"] for v in record.get("validations") or [] if v.get("loss") is not None]
    return -min(losses) if losses else None


def search(
    spec: Spec, results: Path, hashes: Hashes | None = None
) -> dict[str, dict[float, float]]:
    """Each system's searched rates that have their result: rate -> :func:`score`."""
    regime = spec.regime
    found: dict[str, dict[float, float]] = {}
    if regime is None or not regime.rates:
        return found
    seed = spec.seeds[0]
    for system in spec.systems:
        for rate in regime.rates:
            name = rate_name(system.name, rate)
            record = res.read_record(res.record_path(results, spec, name, seed))
            want = hashes(name, seed) if hashes is not None else None
            if record is None or (want is not None and record[0].get("hash") != want):
                continue
            found_score = score(record[0])
            if found_score is not None:
                found.setdefault(system.name, {})[rate] = found_score
    return found


def chosen(spec: Spec, results: Path, hashes: Hashes | None = None) -> dict[str, float]:
    """system -> its peak rate, for the systems whose every searched rate has its result."""
    regime = spec.regime
    if regime is None or not regime.rates:
        return {}
    done = search(spec, results, hashes)
    return {
        name: max(sorted(scores), key=lambda rate: scores[rate])  # sorted: a tie -> lower rate
        for name, scores in done.items()
        if len(scores) == len(regime.rates)
    }
