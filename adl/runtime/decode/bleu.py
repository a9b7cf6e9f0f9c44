"""Scoring translations against references with sacrebleu (``adl eval``, the sweeps, the
demo): BLEU and chrF with their signatures."""

from __future__ import annotations

from typing import Any

from sacrebleu.metrics import BLEU, CHRF

from adl.runtime.errors import DataError


def score(
    hyps: list[str], refs: list[str], hyp_name: str = "hypotheses", ref_name: str = "references"
) -> dict[str, Any]:
    """sacrebleu BLEU and chrF of detokenised hypotheses against one reference each."""
    if len(hyps) != len(refs):
        raise DataError(f"{hyp_name} has {len(hyps):,} lines but {ref_name} has {len(refs):,}")
    bleu, chrf = BLEU(), CHRF()
    b = bleu.corpus_score(hyps, [refs])
    c = chrf.corpus_score(hyps, [refs])
    return {
        "bleu": b.score,
        "chrf": c.score,
        "bleu_text": str(b),
        "chrf_text": str(c),
        "bleu_signature": str(bleu.get_signature()),
        "chrf_signature": str(chrf.get_signature()),
    }


def signatures() -> dict[str, str]:
    """sacrebleu's signatures of the scores :func:`score` reports (for a log, before any
    is scored): the metrics once evaluated (a signature records the number of references)."""
    found = score(["a"], ["a"])
    return {"bleu": str(found["bleu_signature"]), "chrf": str(found["chrf_signature"])}


def report(scores: dict[str, Any]) -> str:
    return (
        f"{scores['bleu_text']}\n  signature: {scores['bleu_signature']}\n"
        f"{scores['chrf_text']}\n  signature: {scores['chrf_signature']}"
    )
