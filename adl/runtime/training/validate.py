"""Validation: perplexity and token accuracy by teacher forcing over the whole (length
filtered) validation set, and BLEU and chrF of batched greedy translations of a fixed sample
of it (``train.valid_bleu_sentences``; sacrebleu, detokenized text against the raw
references)."""

from __future__ import annotations

import math
import random
from collections.abc import Callable
from contextlib import nullcontext

import torch

from adl.runtime.data.batching import collate, make_batches
from adl.runtime.data.parallel import ParallelData
from adl.runtime.data.tokenizer import Tokenizers
from adl.runtime.decode.bleu import score
from adl.runtime.decode.translator import Translator
from adl.runtime.search_options import SearchOptions
from adl.runtime.training.loss import forward, token_loss

SAMPLE_SEED = 20240901  # the BLEU sample is the same in every run, whatever train.seed


def bleu_sample(n: int, k: int) -> list[int]:
    """The indices (sorted) of a fixed random sample of ``k`` of ``n`` sentences; all of them
    when ``k`` is 0 or at least ``n``."""
    if not k or k >= n:
        return list(range(n))
    return sorted(random.Random(SAMPLE_SEED).sample(range(n), k))


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
    bleu_sentences: int = 0,
    len_a: float = 1.5,
    len_b: int = 10,
    autocast=nullcontext,
    translations: Callable[[list[str]], None] | None = None,
) -> dict[str, float]:
    """Loss, perplexity and accuracy over all of ``data``; with ``bleu``, BLEU and chrF over
    :func:`bleu_sample` (``bleu_sentences``; 0: all), greedy translations through the
    :class:`Translator`, the one door to decoding (capped, as everywhere, at the decoder's
    learned positions). ``translations`` is given the sample's translations, in order."""
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
                logits = forward(model, batch, needs_words)
            sums = token_loss(logits, batch.tgt_out, smoothing)
            loss += float(sums.loss)
            nll += float(sums.nll)
            assert sums.correct is not None  # counted by default
            correct += float(sums.correct)
            tokens += sums.tokens
        result = {
            "loss": loss / tokens,
            "ppl": math.exp(min(nll / tokens, 100.0)),
            "acc": correct / tokens,
        }
        if bleu and data.references is not None:
            sample = bleu_sample(len(data), bleu_sentences)
            src_ids = [data.src[i].tolist() for i in sample]
            options = SearchOptions(beam=1, len_a=len_a, len_b=len_b, max_tokens=max_tokens)
            with autocast():
                found = Translator(model, tokenizers, device).search_tokens(src_ids, options)
            hyps = tokenizers.decode_tgt([h[0].tokens for h in found])
            if translations is not None:
                translations(hyps)
            scores = score(hyps, [data.references[i] for i in sample])
            result["bleu"], result["chrf"] = scores["bleu"], scores["chrf"]
        return result
    finally:
        model.train(was_training)
