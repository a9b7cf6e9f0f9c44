"""Validation: perplexity and token accuracy by teacher forcing, and BLEU and chrF of greedy
translations (sacrebleu, detokenized text against the raw references)."""

from __future__ import annotations

import math
from contextlib import nullcontext

import torch
from sacrebleu.metrics import BLEU, CHRF

from .batching import collate, make_batches
from .data import ParallelData
from .loss import token_loss
from .search import translate_ids
from .tokenizer import Tokenizers


def signatures() -> dict[str, str]:
    """sacrebleu's signatures of the scores reported (for the log): the metrics as used
    below, once evaluated (a signature records the number of references)."""
    found = {}
    for name, metric in (("bleu", BLEU()), ("chrf", CHRF())):
        metric.corpus_score(["a"], [["a"]])
        found[name] = str(metric.get_signature())
    return found


@torch.no_grad()
def validate(
    model,
    data: ParallelData,
    tokenizers: Tokenizers,
    device: torch.device,
    *,
    max_tokens: int,
    smoothing: float,
    bleu: bool = True,
    len_a: float = 1.5,
    len_b: int = 10,
    autocast=nullcontext,
) -> dict[str, float]:
    was_training = model.training
    model.eval()
    try:
        needs_words = getattr(model, "needs_src_words", False)
        loss = nll = correct = 0.0
        tokens = 0
        for ids in make_batches(
            data.src.lengths, data.tgt.lengths, max_tokens, shuffle=False, strict=False
        ):
            batch = collate(data, ids, tokenizers.word_ids if needs_words else None).to(device)
            with autocast():
                if needs_words:
                    logits = model(batch.src, batch.tgt_in, batch.src_words)
                else:
                    logits = model(batch.src, batch.tgt_in)
            sums = token_loss(logits, batch.tgt_out, smoothing)
            loss += float(sums.loss)
            nll += float(sums.nll)
            correct += float(sums.correct)
            tokens += sums.tokens
        result = {
            "loss": loss / tokens,
            "ppl": math.exp(min(nll / tokens, 100.0)),
            "acc": correct / tokens,
        }
        if bleu and data.references is not None:
            src_ids = [data.src[i].tolist() for i in range(len(data))]
            with autocast():
                hyp_ids = translate_ids(
                    model,
                    tokenizers,
                    src_ids,
                    max_tokens=max_tokens,
                    len_a=len_a,
                    len_b=len_b,
                    device=device,
                )
            hyps = tokenizers.decode_tgt(hyp_ids)
            refs = [data.references]
            result["bleu"] = BLEU().corpus_score(hyps, refs).score
            result["chrf"] = CHRF().corpus_score(hyps, refs).score
        return result
    finally:
        model.train(was_training)
