"""Which model of a run is tested, and the run's validation curve: one rule for every system.

Every checkpoint is scored on the validation sample (``prepare.py``) by the BLEU and chrF of
its greedy translations, with one sacrebleu call (``table.score``) on detokenised text. The
best checkpoint by the recipe's metric (``bleu`` or ``chrf``) is the first with the highest
value; the averages of the last ``k`` checkpoints, ``k`` = 2 .. ``average_last``, are scored
alike, and the best average replaces the best checkpoint only when it scores strictly
higher: ADL's ``train.average_last`` rule (adl/runtime/model/averaging.py), with its comparison
(``adl.runtime.model.checkpoint.better``).

Every system, ADL included, validates only its loss or perplexity on the clock and keeps its
checkpoints; they are translated, averaged and scored after the clock (``choose``), which
costs none of them training time. (Until this rule, ADL chose during its own run, by BLEU
on the validation sample at every validation: 1-7 % of its clock.)
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass, field

from adl.runtime.model.checkpoint import better

from .base import Checkpoint, Step, System, TrainStats, read_lines
from .table import score

RunStep = Callable[[Step], str]  # runs a step (logged), returns an error or ''


@dataclass
class Point:
    """One checkpoint's validation: a point of the curves."""

    update: int
    seconds: float  # since the clock started (launch/peerclock.py)
    tokens: int  # target tokens trained on
    bleu: float
    chrf: float


@dataclass
class Averaged:
    """One average's validation."""

    updates: list[int]  # the checkpoints averaged, oldest first
    bleu: float
    chrf: float


@dataclass
class Selection:
    metric: str  # bleu | chrf
    points: list[Point]
    averages: list[Averaged] = field(default_factory=list)
    model: str = ""  # what the system translates the test set with
    update: int | None = None  # the chosen checkpoint's update (None: an average)
    averaged: list[int] = field(default_factory=list)  # the chosen average's updates

    @property
    def value(self) -> float:
        """The chosen model's validation score by ``metric``."""
        if self.averaged:
            found = [a for a in self.averages if a.updates == self.averaged]
        else:
            found = [p for p in self.points if p.update == self.update]  # type: ignore[misc]
        return getattr(found[0], self.metric)

    def describe(self) -> str:
        """'1,200' for a checkpoint, 'avg 800–1,200' for an average."""
        if self.averaged:
            return f"avg {self.averaged[0]:,}–{self.averaged[-1]:,}"
        return f"{self.update:,}" if self.update is not None else "–"

    def to_dict(self) -> dict:
        return {**asdict(self), "value": self.value, "chosen": self.describe()}

    @classmethod
    def from_dict(cls, d: dict) -> Selection:
        return cls(
            d["metric"],
            [Point(**p) for p in d["points"]],
            [Averaged(**a) for a in d["averages"]],
            d["model"],
            d["update"],
            list(d["averaged"]),
        )


def best_of(items: list, metric: str):
    """The first item with the highest ``metric`` (None for no items): a later item replaces
    the best so far only when it scores strictly higher."""
    found = None
    for item in items:
        best = None if found is None else getattr(found, metric)
        if better(metric, getattr(item, metric), None, best, None):
            found = item
    return found


def _validate(system: System, model: str, run: RunStep) -> tuple[float, float]:
    """(BLEU, chrF) of ``model``'s greedy translations of the validation sample."""
    out = system.out / "valid" / f"{model}.hyp"
    out.parent.mkdir(parents=True, exist_ok=True)
    step = system.translate(model, 1, "sample", out)
    step.name = f"valid-{model}"
    error = run(step)
    if error:
        raise RuntimeError(f"validating {model}: {error}")
    refs = read_lines(system.data.raw["sample"][1])
    found = score(system.hypotheses(out, "sample"), refs)
    return found.bleu, found.chrf


def choose(system: System, stats: TrainStats, run: RunStep) -> Selection:
    """Validate a run's checkpoints and averages after its clock; choose by ADL's rule."""
    r = system.recipe
    if not stats.checkpoints:
        raise RuntimeError("the run wrote no checkpoint")
    points = []
    for c in stats.checkpoints:
        points.append(Point(c.update, c.seconds, c.tokens, *_validate(system, c.name, run)))
    chosen = best_of(points, r.best_metric)
    selection = Selection(r.best_metric, points, model=_name(stats.checkpoints, chosen.update))
    selection.update = chosen.update
    last = stats.checkpoints[-r.average_last :] if r.average_last >= 2 else []
    names = {}
    for k in range(2, len(last) + 1):
        name = f"average-{k}.pt"
        step = system.average([c.name for c in last[-k:]], name)
        error = run(step)
        if error:
            raise RuntimeError(f"averaging the last {k} checkpoints: {error}")
        averaged = Averaged([c.update for c in last[-k:]], *_validate(system, name, run))
        selection.averages.append(averaged)
        names[k] = name
    top = best_of(selection.averages, r.best_metric)
    if top is not None and best_of([chosen, top], r.best_metric) is top:
        selection.model, selection.update = names[len(top.updates)], None
        selection.averaged = top.updates
    return selection


def _name(checkpoints: list[Checkpoint], update: int) -> str:
    return next(c.name for c in checkpoints if c.update == update)
