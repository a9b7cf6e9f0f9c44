"""Forced decoding: the scores a model (or an ensemble) gives to translations it is handed
(``adl score``), and contrastive evaluation with them.

A pair's score is the log-probability of its target given its source, summed over the
target's pieces and the final eos (:meth:`Translator.score`, one batched forward pass, no
search); its per-token score divides that by the pieces it sums over.

A contrastive set (Sennrich 2017; ContraWSD, MuCoW, Raganato et al. 2020 §5) pairs each
source with its reference and one or more variants that each hold one error. A decision is
one (reference, variant) comparison, right when the reference scores higher; the accuracy
is over all decisions. The layouts read (:func:`read_contrastive`):

- JSON lines: ``{"source": ..., "reference": ..., "variants": [...]}`` (``contrastive`` is
  read as a synonym of ``variants``, a string as a list of one);
- TSV: ``source<TAB>reference<TAB>variant<TAB>variant...``.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from adl.runtime.errors import DataError


@dataclass(frozen=True)
class Scored:
    """One pair's score: the summed log-probability and the pieces it sums over."""

    total: float
    pieces: int  # target pieces + the eos

    @property
    def per_token(self) -> float:
        return self.total / self.pieces


def score_pairs(translator, sources: Sequence[str], targets: Sequence[str], batch_size: int = 64):
    """Each pair's :class:`Scored`, in order."""
    totals = translator.score(sources, targets, batch_size=batch_size)
    lengths = [len(ids) + 1 for ids in translator.tokenizers.encode_tgt(list(targets))]
    return [Scored(t, n) for t, n in zip(totals, lengths)]


def read_tsv_pairs(lines: Iterable[str], name: str) -> tuple[list[str], list[str]]:
    """``source<TAB>target`` lines: the sources and the targets."""
    sources, targets = [], []
    for n, line in enumerate(lines, 1):
        fields = line.rstrip("\r\n").split("\t")
        if len(fields) != 2:
            raise DataError(
                f"{name}:{n}: a pair is 'source<TAB>target', this line has {len(fields)} "
                f"field{'s' if len(fields) != 1 else ''}"
            )
        sources.append(fields[0])
        targets.append(fields[1])
    return sources, targets


@dataclass(frozen=True)
class Contrast:
    """A source, its reference and the variants that should score lower."""

    source: str
    reference: str
    variants: tuple[str, ...]


def read_contrastive(lines: Iterable[str], name: str) -> list[Contrast]:
    """A contrastive set in JSON lines or TSV (see the module's docstring)."""
    items = []
    for n, line in enumerate(lines, 1):
        text = line.rstrip("\r\n")
        if not text.strip():
            continue
        where = f"{name}:{n}"
        if text.lstrip().startswith("{"):
            try:
                record = json.loads(text)
            except json.JSONDecodeError as exc:
                raise DataError(f"{where}: not a JSON object: {exc.msg}") from None
            variants = record.get("variants", record.get("contrastive"))
            if isinstance(variants, str):
                variants = [variants]
            missing = [
                k
                for k, v in (
                    ("source", record.get("source")),
                    ("reference", record.get("reference")),
                    ("variants", variants),
                )
                if v is None
            ]
            if missing:
                raise DataError(f"{where}: the record has no {', '.join(missing)}")
            if not isinstance(variants, list) or not all(isinstance(v, str) for v in variants):
                raise DataError(f"{where}: variants must be a list of strings")
            source, reference = record["source"], record["reference"]
        else:
            fields = text.split("\t")
            if len(fields) < 3:
                raise DataError(
                    f"{where}: a TSV item is 'source<TAB>reference<TAB>variant...', "
                    f"this line has {len(fields)} field{'s' if len(fields) != 1 else ''}"
                )
            source, reference, variants = fields[0], fields[1], fields[2:]
        if not variants:
            raise DataError(f"{where}: no variants to compare the reference with")
        items.append(Contrast(str(source), str(reference), tuple(variants)))
    if not items:
        raise DataError(f"{name}: no contrastive items")
    return items


@dataclass(frozen=True)
class ContrastiveResult:
    decisions: int  # (reference, variant) comparisons
    right: int  # ... where the reference scored higher
    items: int
    items_right: int  # items whose reference beat every variant
    wins: list[bool]  # per item: the reference beat every variant

    @property
    def accuracy(self) -> float:
        return self.right / self.decisions

    @property
    def item_accuracy(self) -> float:
        return self.items_right / self.items


def contrastive(translator, items: Sequence[Contrast], batch_size: int = 64) -> ContrastiveResult:
    """Score every reference and variant (one batched pass) and count the decisions."""
    sources, targets = [], []
    for item in items:
        for target in (item.reference, *item.variants):
            sources.append(item.source)
            targets.append(target)
    scores = translator.score(sources, targets, batch_size=batch_size)
    at, right, wins = 0, 0, []
    for item in items:
        ref = scores[at]
        beaten = [ref > s for s in scores[at + 1 : at + 1 + len(item.variants)]]
        right += sum(beaten)
        wins.append(all(beaten))
        at += 1 + len(item.variants)
    decisions = sum(len(item.variants) for item in items)
    return ContrastiveResult(decisions, right, len(items), sum(wins), wins)
