"""Translating and scoring text with a trained run: the API behind ``adl translate`` and
``adl eval``."""

from __future__ import annotations

from sacrebleu.metrics import BLEU, CHRF

from adl.runtime.decode.search import Hypothesis, SearchOptions
from adl.runtime.decode.translator import Translator
from adl.runtime.errors import DataError


def translate_lines(
    model,
    tokenizers,
    lines: list[str],
    options: SearchOptions = SearchOptions(),
    device="cpu",
) -> list[list[tuple[str, Hypothesis]]]:
    """The ``options.nbest`` best translations of each line (text and hypothesis), in order
    (see :meth:`Translator.search`). An empty (or blank) line gets an empty translation."""
    return Translator(model, tokenizers, device).search(lines, options)


def score(
    hyps: list[str], refs: list[str], hyp_name: str = "hypotheses", ref_name: str = "references"
) -> dict[str, object]:
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


def report(scores: dict[str, object]) -> str:
    return (
        f"{scores['bleu_text']}\n  signature: {scores['bleu_signature']}\n"
        f"{scores['chrf_text']}\n  signature: {scores['chrf_signature']}"
    )
