"""What a search finds: :class:`Hypothesis`, the length penalty it is ranked by, and the
ranking of a sentence's finished hypotheses (shared by the beam searches of
:mod:`~adl.runtime.decode.search` and :mod:`~adl.runtime.decode.host_beam`)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass


@dataclass(frozen=True)
class Hypothesis:
    """One translation: its tokens (no bos/eos), the model's log-probability of them and of
    the final eos, and that score with the length penalty (what the search ranks by)."""

    tokens: list[int]
    score: float
    normalized: float


def length_penalty(length: int, kind: str = "fairseq", alpha: float = 1.0) -> float:
    """The divisor of a hypothesis' log-probability. ``fairseq``: length^α; ``gnmt``
    (Wu et al. 2016): ((5 + length) / 6)^α; ``none``: 1. ``length`` counts the eos."""
    if kind == "none" or alpha == 0:
        return 1.0
    if kind == "fairseq":
        return float(length) ** alpha
    if kind == "gnmt":
        return ((5.0 + length) / 6.0) ** alpha
    raise ValueError(f"unknown length penalty {kind!r}: fairseq, gnmt or none")


def ranked(
    finished: Iterable[tuple[list[int], float]], penalty: str, alpha: float, nbest: int
) -> list[Hypothesis]:
    """A sentence's ``nbest`` best hypotheses by the length-penalised score, from its
    finished ones as (tokens, log-probability) in the order they finished (which ties keep)."""
    hyps = [
        Hypothesis(tokens, score, score / length_penalty(len(tokens) + 1, penalty, alpha))
        for tokens, score in finished
    ]
    return sorted(hyps, key=lambda h: h.normalized, reverse=True)[:nbest]
