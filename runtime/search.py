"""Decoding through the model's incremental interface (``model.start`` / ``model.step``).

``greedy`` and ``beam`` decode a padded batch; sentences that are done leave the batch
(``memory.reorder`` / ``state.reorder``), so the cost follows the sentences still running.
``translate`` goes from text to text in length-sorted batches.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import torch
from torch import Tensor

from .tokenizer import BOS, EOS, PAD


@torch.no_grad()
def greedy(
    model, src: Tensor, src_words: Tensor | None = None, max_len: Tensor | int = 100
) -> list[list[int]]:
    """The argmax translation of each row of ``src`` (B, S), without bos/eos.

    ``max_len``: tokens at most per row (an int, or a (B,) tensor)."""
    b = src.size(0)
    limit = (
        torch.full((b,), max_len, dtype=torch.long)
        if isinstance(max_len, int)
        else max_len.long().cpu()
    )
    memory, state = model.start(src, src_words)
    rows = torch.arange(b)  # original row of each live row
    tokens = torch.full((b,), BOS, dtype=torch.long, device=src.device)
    out: list[list[int]] = [[] for _ in range(b)]
    for _t in range(int(limit.max())):
        logp = model.step(tokens, memory, state)  # (b_live, V)
        logp[:, PAD] = float("-inf")
        logp[:, BOS] = float("-inf")
        tokens = logp.argmax(-1)  # (b_live,)
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
        if len(live) < len(picked):  # drop finished rows from the batch
            keep = torch.tensor(live, dtype=torch.long, device=src.device)
            memory = memory.reorder(keep)
            state.reorder(keep)
            tokens = tokens.index_select(0, keep)
            rows = rows[keep.cpu()]
    return out


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


@torch.no_grad()
def beam(
    model,
    src: Tensor,
    size: int = 5,
    src_words: Tensor | None = None,
    max_len: Tensor | int = 100,
    penalty: str = "fairseq",
    alpha: float = 1.0,
    nbest: int = 1,
) -> list[list[Hypothesis]]:
    """Beam search over each row of ``src`` (B, S): the ``nbest`` best hypotheses of each.

    Every step scores the ``size`` live hypotheses of each sentence with one call to
    ``model.step`` (the cache holds B × size rows), keeps the best ``size`` continuations,
    and sets aside a hypothesis when it ends in eos (among the best ``size`` candidates).
    A sentence is done when ``size`` hypotheses have finished (or at ``max_len`` tokens,
    where only eos may follow); it then leaves the batch."""
    length_penalty(1, penalty, alpha)  # an unknown penalty fails before any work
    b, k = src.size(0), size
    limit = (
        torch.full((b,), max_len, dtype=torch.long)
        if isinstance(max_len, int)
        else max_len.long().cpu()
    )
    memory, state = model.start(src, src_words)
    rows = torch.arange(b, device=src.device).repeat_interleave(k)
    memory = memory.reorder(rows)  # k rows per sentence
    state.reorder(rows)
    live = list(range(b))  # sentences still searching, in batch order
    scores = torch.full((b, k), float("-inf"), device=src.device)
    scores[:, 0] = 0.0  # one hypothesis to start from, not k copies
    prefixes: list[list[list[int]]] = [[[] for _ in range(k)] for _ in range(b)]
    finished: list[list[Hypothesis]] = [[] for _ in range(b)]
    tokens = torch.full((b * k,), BOS, dtype=torch.long, device=src.device)
    for t in range(int(limit.max()) + 1):
        logp = model.step(tokens, memory, state)  # (n·k, V)
        vocab = logp.size(-1)
        logp[:, PAD] = float("-inf")
        logp[:, BOS] = float("-inf")
        at_limit = torch.tensor([t >= limit[n] for n in live], device=logp.device)
        if bool(at_limit.any()):  # at the length limit only eos may follow
            only_eos = torch.full_like(logp[0], float("-inf"))
            only_eos[EOS] = 0.0
            rows_at = at_limit.repeat_interleave(k)
            logp[rows_at] = logp[rows_at] + only_eos
        total = (scores.view(-1, 1) + logp).view(len(live), k * vocab)
        best, index = total.topk(min(2 * k, k * vocab), dim=-1)
        best, index = best.tolist(), index.tolist()
        keep_rows, new_tokens, new_scores, still = [], [], [], []
        for i, n in enumerate(live):
            chosen: list[tuple[int, int, float]] = []
            for rank, (value, flat) in enumerate(zip(best[i], index[i])):
                if value == float("-inf"):
                    break
                beam_i, tok = divmod(flat, vocab)
                if tok == EOS:
                    if rank < k and len(finished[n]) < k:
                        hyp = prefixes[n][beam_i]
                        finished[n].append(
                            Hypothesis(
                                list(hyp),
                                value,
                                value / length_penalty(len(hyp) + 1, penalty, alpha),
                            )
                        )
                elif len(chosen) < k:
                    chosen.append((beam_i, tok, value))
                if len(chosen) == k:
                    break
            if len(finished[n]) >= k or not chosen:
                continue  # done: the sentence leaves the batch
            while len(chosen) < k:  # fewer live continuations than beams
                chosen.append((chosen[0][0], chosen[0][1], float("-inf")))
            still.append(n)
            prefixes[n] = [prefixes[n][bi] + [tok] for bi, tok, _ in chosen]
            keep_rows += [i * k + bi for bi, _, _ in chosen]
            new_tokens += [tok for _, tok, _ in chosen]
            new_scores.append([v for _, _, v in chosen])
        if not still:
            break
        keep = torch.tensor(keep_rows, dtype=torch.long, device=src.device)
        memory = memory.reorder(keep)
        state.reorder(keep)
        tokens = torch.tensor(new_tokens, dtype=torch.long, device=src.device)
        scores = torch.tensor(new_scores, device=src.device)
        live = still
    out = []
    for n in range(b):
        hyps = sorted(finished[n], key=lambda h: h.normalized, reverse=True)
        out.append(hyps[:nbest])
    return out


class FullRecompute:
    """A model behind the same ``start``/``step`` interface without any cache: every step
    runs a full forward pass over the whole prefix. The reference incremental decoding is
    tested against, and the baseline bench/decode.py measures the cache against."""

    def __init__(self, model):
        self.model = model
        self.needs_src_words = getattr(model, "needs_src_words", False)

    class Rows:
        def __init__(self, src: Tensor, words: Tensor | None):
            self.src, self.words = src, words

        def reorder(self, index: Tensor) -> FullRecompute.Rows:
            words = None if self.words is None else self.words.index_select(0, index)
            return FullRecompute.Rows(self.src.index_select(0, index), words)

    class Prefix:
        def __init__(self, rows: int, device: torch.device):
            self.tokens = torch.empty(rows, 0, dtype=torch.long, device=device)

        def reorder(self, index: Tensor) -> None:
            self.tokens = self.tokens.index_select(0, index)

    def start(self, src: Tensor, src_words: Tensor | None = None):
        return FullRecompute.Rows(src, src_words), FullRecompute.Prefix(src.size(0), src.device)

    def step(self, tokens: Tensor, memory: FullRecompute.Rows, state: FullRecompute.Prefix):
        state.tokens = torch.cat([state.tokens, tokens.view(-1, 1)], 1)
        logits = self.model(memory.src, state.tokens, memory.words)[:, -1]
        return logits.log_softmax(-1)


def pad_batch(seqs: Sequence[Sequence[int]], device: torch.device | str = "cpu") -> Tensor:
    """Source token lists -> (B, S) with eos appended and padding."""
    width = max(len(s) for s in seqs) + 1
    src = torch.full((len(seqs), width), PAD, dtype=torch.long)
    for row, s in enumerate(seqs):
        src[row, : len(s)] = torch.as_tensor(list(s), dtype=torch.long)
        src[row, len(s)] = EOS
    return src.to(device)


@dataclass(frozen=True)
class SearchOptions:
    """How to search: greedy (beam 1) or beam search, and how long a translation may be."""

    beam: int = 1  # hypotheses kept per sentence; 1: greedy
    nbest: int = 1  # hypotheses returned per sentence (at most beam)
    penalty: str = "fairseq"  # length penalty: fairseq (length^alpha), gnmt or none
    alpha: float = 1.0  # the length penalty's exponent
    len_a: float = 1.5  # at most len_a x source length + len_b target tokens
    len_b: int = 10
    max_tokens: int = 4096  # source tokens per batch (sentences x longest)


@torch.no_grad()
def search_ids(
    model,
    tokenizers,
    src_ids: Sequence[Sequence[int]],
    options: SearchOptions = SearchOptions(),
    device: torch.device | str = "cpu",
    progress=None,
) -> list[list[Hypothesis]]:
    """The best hypotheses of tokenized sentences, in the given order (empty sentences get
    one empty hypothesis). ``progress(n)`` is called with the sentences done so far."""
    results: list[list[Hypothesis]] = [[Hypothesis([], 0.0, 0.0)] for _ in src_ids]
    todo = [i for i in range(len(src_ids)) if len(src_ids[i])]
    order = sorted(todo, key=lambda i: len(src_ids[i]))
    needs_words = getattr(model, "needs_src_words", False)
    width = options.beam
    start, done = 0, len(src_ids) - len(todo)
    while start < len(order):
        end = start + 1  # grow the batch while sentences x beam x longest stays in max_tokens
        while (
            end < len(order)
            and (end - start + 1) * width * (len(src_ids[order[end]]) + 1) <= options.max_tokens
        ):
            end += 1
        chunk = order[start:end]
        src = pad_batch([src_ids[i] for i in chunk], device)
        words = tokenizers.word_ids(src) if needs_words else None
        lengths = torch.tensor([len(src_ids[i]) for i in chunk], dtype=torch.float)
        limit = (lengths * options.len_a + options.len_b).long().clamp_min(1)
        if options.beam == 1 and options.nbest == 1:
            found = [[Hypothesis(h, math.nan, math.nan)] for h in greedy(model, src, words, limit)]
        else:
            found = beam(
                model,
                src,
                options.beam,
                words,
                limit,
                options.penalty,
                options.alpha,
                options.nbest,
            )
        for i, hyps in zip(chunk, found):
            results[i] = hyps or [Hypothesis([], -math.inf, -math.inf)]
        done += len(chunk)
        if progress is not None:
            progress(done)
        start = end
    return results


def translate_ids(
    model,
    tokenizers,
    src_ids: Sequence[Sequence[int]],
    *,
    max_tokens: int = 4096,
    len_a: float = 1.5,
    len_b: int = 10,
    device: torch.device | str = "cpu",
    beam: int = 1,
) -> list[list[int]]:
    """The best translation (target ids) of tokenized sentences, in the given order."""
    options = SearchOptions(beam=beam, len_a=len_a, len_b=len_b, max_tokens=max_tokens)
    return [hyps[0].tokens for hyps in search_ids(model, tokenizers, src_ids, options, device)]


def translate(model, tokenizers, lines: Sequence[str], **options) -> list[str]:
    """Translations of raw sentences (sentencepiece in and out); greedy unless beam=k."""
    if not lines:
        return []
    ids = translate_ids(model, tokenizers, tokenizers.encode_src(lines), **options)
    return tokenizers.decode_tgt(ids)
