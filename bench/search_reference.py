"""The search of adl/runtime/decode/search.py before issue 16, kept as the reference the new search is
measured against (bench/decode.py) and tested against (tests/runtime/test_runtime_search_sync.py).

It reads every step's choices on the host (``.tolist()``: a device synchronisation per step on
a GPU) and loops over sentences and hypotheses in Python. Do not use it for decoding.
"""

from __future__ import annotations

import torch
from torch import Tensor

from adl.runtime.data.tokenizer import BOS, EOS, PAD
from adl.runtime.decode.hypotheses import Hypothesis, length_penalty


@torch.no_grad()
def greedy_reference(
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


@torch.no_grad()
def beam_reference(
    model,
    src: Tensor,
    size: int = 5,
    src_words: Tensor | None = None,
    max_len: Tensor | int = 100,
    penalty: str = "fairseq",
    alpha: float = 1.0,
    nbest: int = 1,
) -> list[list[Hypothesis]]:
    """:func:`adl.runtime.decode.search.beam`'s search (its arguments but ``every``, its
    contract), written the plain way: each sentence's live and finished hypotheses are
    Python lists, each step's choices are read on the host, and a sentence leaves the
    batch at the step it is done."""
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
            chosen = []
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
