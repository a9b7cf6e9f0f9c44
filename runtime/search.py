"""Decoding through the model's incremental interface (``model.start`` / ``model.step``).

``greedy`` decodes a padded batch; rows that have produced eos leave the batch
(``memory.reorder`` / ``state.reorder``), so the cost follows the sentences still running.
``translate`` goes from text to text in length-sorted batches. (Beam search will live here.)
"""
from __future__ import annotations

from typing import Sequence

import torch
from torch import Tensor

from .tokenizer import BOS, EOS, PAD


@torch.no_grad()
def greedy(model, src: Tensor, src_words: Tensor | None = None,
           max_len: Tensor | int = 100) -> list[list[int]]:
    """The argmax translation of each row of ``src`` (B, S), without bos/eos.

    ``max_len``: tokens at most per row (an int, or a (B,) tensor)."""
    b = src.size(0)
    limit = (torch.full((b,), max_len, dtype=torch.long) if isinstance(max_len, int)
             else max_len.long().cpu())
    memory, state = model.start(src, src_words)
    rows = torch.arange(b)                        # original row of each live row
    tokens = torch.full((b,), BOS, dtype=torch.long, device=src.device)
    out: list[list[int]] = [[] for _ in range(b)]
    for t in range(int(limit.max())):
        logp = model.step(tokens, memory, state)  # (b_live, V)
        logp[:, PAD] = float("-inf")
        logp[:, BOS] = float("-inf")
        tokens = logp.argmax(-1)                  # (b_live,)
        picked = tokens.tolist()
        live = []
        for i, (row, tok) in enumerate(zip(rows.tolist(), picked)):
            if tok == EOS:
                continue
            out[row].append(tok)
            if len(out[row]) < limit[row]:
                live.append(i)
        if not live:
            break
        if len(live) < len(picked):               # drop finished rows from the batch
            keep = torch.tensor(live, dtype=torch.long, device=src.device)
            memory = memory.reorder(keep)
            state.reorder(keep)
            tokens = tokens.index_select(0, keep)
            rows = rows[keep.cpu()]
    return out


def pad_batch(seqs: Sequence[Sequence[int]], device: torch.device | str = "cpu") -> Tensor:
    """Source token lists -> (B, S) with eos appended and padding."""
    width = max(len(s) for s in seqs) + 1
    src = torch.full((len(seqs), width), PAD, dtype=torch.long)
    for row, s in enumerate(seqs):
        src[row, :len(s)] = torch.as_tensor(list(s), dtype=torch.long)
        src[row, len(s)] = EOS
    return src.to(device)


@torch.no_grad()
def translate_ids(model, tokenizers, src_ids: Sequence[Sequence[int]], *,
                  max_tokens: int = 4096, len_a: float = 1.5, len_b: int = 10,
                  device: torch.device | str = "cpu") -> list[list[int]]:
    """Greedy translations (target ids) of tokenized sentences, in the given order."""
    order = sorted(range(len(src_ids)), key=lambda i: len(src_ids[i]))
    results: list[list[int]] = [[] for _ in src_ids]
    needs_words = getattr(model, "needs_src_words", False)
    start = 0
    while start < len(order):
        end = start + 1       # grow the batch while sentences x longest stays in max_tokens
        while (end < len(order)
               and (end - start + 1) * (len(src_ids[order[end]]) + 1) <= max_tokens):
            end += 1
        chunk = order[start:end]
        src = pad_batch([src_ids[i] for i in chunk], device)
        words = tokenizers.word_ids(src) if needs_words else None
        lengths = torch.tensor([len(src_ids[i]) for i in chunk], dtype=torch.float)
        limit = (lengths * len_a + len_b).long().clamp_min(1)
        for i, hyp in zip(chunk, greedy(model, src, words, limit)):
            results[i] = hyp
        start = end
    return results


def translate(model, tokenizers, lines: Sequence[str], **options) -> list[str]:
    """Greedy translations of raw sentences (sentencepiece in and out)."""
    if not lines:
        return []
    ids = translate_ids(model, tokenizers, tokenizers.encode_src(lines), **options)
    return tokenizers.decode_tgt(ids)
