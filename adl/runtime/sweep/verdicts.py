"""Whether a paper's claim about a pair of systems holds here: the rule, written once.

A row of a sweep compares a system with its baseline (or the system its ``against:`` names),
and the row's ``paper:`` figures say what the paper found for the same pair. The paper's
claim is

- **higher** or **lower** when the paper's two figures differ by more than ``LEVEL_BAND``
  (0.5 BLEU), in that direction;
- **level** when they differ by at most that;
- what the spec's ``claim:`` says instead (higher | lower | level | none) where the paper's
  figures are not two numbers (a sentence of the paper, a table of other systems) or where
  the row is a control the paper never ran (``claim: none``: no claim).

Our side is the interval of Δ BLEU over the runs (significance.py). The claim is

- **reproduced**: for an ordering, the interval lies on the paper's side of 0; for a level
  claim, the interval lies within ±``EQUIVALENT`` (1 BLEU): we show them level too;
- **not reproduced**: for an ordering, the interval lies on the other side of 0; for a level
  claim, the interval lies beyond ±``EQUIVALENT`` (entirely above +1 or below -1);
- **cannot tell** otherwise (the interval holds 0 for an ordering, or straddles ±1 for a
  level claim): more seeds may tell (``seed_budget:``).

The paper's numbers are on its own data and scale, so only the direction (or the level) is
compared, never the size. docs/experiments.md states the same rule.
"""

from __future__ import annotations

from dataclasses import dataclass

LEVEL_BAND = 0.5  # the paper's two figures within this many BLEU: the paper has them level
EQUIVALENT = 1.0  # our interval within ± this many BLEU: level here

HIGHER, LOWER, LEVEL, NONE = "higher", "lower", "level", "none"
CLAIMS = (HIGHER, LOWER, LEVEL, NONE)
REPRODUCED, NOT_REPRODUCED, CANNOT_TELL = "reproduced", "not reproduced", "cannot tell"


@dataclass(frozen=True)
class Claim:
    kind: str  # higher | lower | level (the system against the one it is compared with)
    delta: float | None  # the paper's Δ where its figures are numbers

    def text(self) -> str:
        return self.kind if self.delta is None else f"{self.delta:+.2f} ({self.kind})"


def number(figure: str | None) -> float | None:
    """A paper figure as a number, or None when it is a sentence ("up to +3 (Table 2)")."""
    if figure is None:
        return None
    try:
        return float(str(figure).strip())
    except ValueError:
        return None


def claim_of(paper: str | None, against: str | None, stated: str | None = None) -> Claim | None:
    """The paper's claim for a row: ``paper`` and ``against`` are the paper's figures for the
    system and for the one it is compared with; ``stated``: the spec's ``claim:``, which
    wins (``none``: no claim). None: the paper claims nothing we can check."""
    a, b = number(paper), number(against)
    delta = a - b if a is not None and b is not None else None
    if stated is not None:
        return None if stated == NONE else Claim(stated, delta)
    if delta is None:
        return None
    if abs(delta) <= LEVEL_BAND:
        return Claim(LEVEL, delta)
    return Claim(HIGHER if delta > 0 else LOWER, delta)


def reproduced(claim: Claim | None, low: float | None, high: float | None) -> str | None:
    """The verdict on ``claim`` of an interval [low, high] of our Δ BLEU (None bounds: too
    few runs to make one); None when there is no claim."""
    if claim is None:
        return None
    if low is None or high is None:
        return CANNOT_TELL
    if claim.kind == LEVEL:
        if -EQUIVALENT <= low and high <= EQUIVALENT:
            return REPRODUCED
        if low > EQUIVALENT or high < -EQUIVALENT:
            return NOT_REPRODUCED
        return CANNOT_TELL
    sign = 1 if claim.kind == HIGHER else -1
    lo, hi = sorted((sign * low, sign * high))  # on the paper's side: above 0
    if lo > 0:
        return REPRODUCED
    if hi < 0:
        return NOT_REPRODUCED
    return CANNOT_TELL
