"""Beam search whose bookkeeping runs on the host, for a device the host reads for free
(a CPU): :func:`adl.runtime.decode.search.beam` runs it where it looks at the device every
step (``every`` 1, a CPU's default).

The model's step, the candidates' scores and their top 2k stay tensor operations; what
follows them (which candidates finish, which go on, which row each takes, which sentences
are done) is a few comparisons per candidate in Python, over the top-k's values read once
a step. On the device it took about a hundred small operators a step (bench/
decode_profile.py), each costing more than its work at a beam's sizes. The search is the
same as the device's, step for step: the same candidates finish and go on, in the same
rows (:func:`adl.runtime.decode.search.in_place`'s rule), so the same hypotheses with the
same scores come out (tests/runtime/test_runtime_search_sync.py holds both to the old
search).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor

from adl.runtime.data.tokenizer import BOS, EOS, PAD
from adl.runtime.decode.hypotheses import Hypothesis, ranked

INF = float("inf")


@torch.no_grad()
def beam_on_host(
    model,
    src: Tensor,
    k: int,
    src_words: Tensor | None,
    limits: list[int],
    penalty: str,
    alpha: float,
    nbest: int,
    shared: bool,
) -> list[list[Hypothesis]]:
    """:func:`adl.runtime.decode.search.beam`'s search of ``src`` (B, S) at beam ``k``,
    ``limits``: each sentence's most tokens; ``shared``: the hypotheses of a sentence share
    its source's row (:meth:`Memory.shared_by <adl.nn.context.Memory.shared_by>`).

    A sentence is done, and leaves the batch at once, when ``k`` of its hypotheses have
    finished or none goes on. The cache of a step that keeps every sentence copies only the
    rows whose hypothesis came from another (``in_place``)."""
    b, device = src.size(0), src.device
    if not b:
        return []
    memory, state = model.start(src, src_words)
    longest, shortest = max(limits), min(limits)
    rows = list(range(b))  # original sentence of each sentence in the batch
    limit = list(limits)
    finished: list[list[tuple[list[int], float]]] = [[] for _ in range(b)]
    prefixes: list[list[list[int]]] = [[[]] for _ in range(b)]  # a sentence's hypotheses
    scores = torch.zeros(b, 1, device=device)  # (n, hypotheses a sentence)
    tokens = torch.full((b,), BOS, dtype=torch.long, device=device)
    not_eos: Tensor | None = None
    for t in range(longest + 1):
        logp = model.step(tokens, memory, state)  # (n·h, V): h hypotheses a sentence
        (n, h), vocab = scores.shape, logp.size(-1)
        width = min(2 * k, k * vocab)
        logp[:, PAD] = -INF
        logp[:, BOS] = -INF
        if t >= shortest:  # at the length limit only eos may follow
            if not_eos is None:
                not_eos = torch.arange(vocab, device=device).ne(EOS)
            at_limit = torch.tensor([lim <= t for lim in limit], device=device)
            logp = logp.masked_fill(at_limit.repeat_interleave(h).unsqueeze(1) & not_eos, -INF)
        total = (scores.view(-1, 1) + logp).view(n, h * vocab)
        if total.size(1) < width:  # the first step of a vocabulary smaller than 2k
            total = F.pad(total, (0, width - total.size(1)), value=-INF)
        best, index = total.topk(width, dim=-1)  # (n, 2k) candidates, best first
        live: list[int] = []
        keep: list[int] = []
        next_tokens: list[int] = []
        next_scores: list[float] = []
        next_prefixes: list[list[list[int]]] = []
        for i, (row_best, row_index) in enumerate(zip(best.tolist(), index.tolist())):
            hyps, done = prefixes[i], finished[rows[i]]
            goes: list[tuple[int, int, float]] = []  # (hypothesis, token, score), rank order
            for rank, (score, at) in enumerate(zip(row_best, row_index)):
                if score == -INF:
                    break  # the rest are -inf too
                parent, tok = divmod(at, vocab)
                if tok == EOS:  # among the best k: finished, while the sentence has room
                    if rank < k and len(done) < k:
                        done.append((hyps[parent], score))
                elif len(goes) < k:
                    goes.append((parent, tok, score))
            if len(done) >= k or not goes:
                continue  # the sentence is done: it leaves the batch
            live.append(i)
            filler = goes[0][1]  # a row with no hypothesis feeds the best token, at -inf
            made = []
            for row, j in enumerate(in_place_rows([parent for parent, _, _ in goes], k)):
                if j < len(goes):
                    parent, tok, score = goes[j]
                else:  # a filler keeps whatever its row holds
                    parent, tok, score = row, filler, -INF
                if h == 1:  # the first step: the sentence's row becomes its k rows
                    parent = 0
                keep.append(i * h + parent)
                next_tokens.append(tok)
                next_scores.append(score)
                made.append(hyps[parent] + [tok])
            next_prefixes.append(made)
        if not live:
            break
        staying = None if len(live) == n else torch.tensor(live, device=device)
        dropped = h < k or staying is not None  # the first step's rows are all new
        order = torch.tensor(keep, device=device)
        tokens = torch.tensor(next_tokens, device=device)
        scores = torch.tensor(next_scores, device=device).view(len(live), k)
        prefixes = next_prefixes
        rows = [rows[i] for i in live]
        limit = [limit[i] for i in live]
        memory = follow(memory, state, order, staying, k if h == 1 else 0, shared, dropped, True)
    return [ranked(found, penalty, alpha, nbest) for found in finished]


def in_place_rows(parents: list[int], k: int) -> list[int]:
    """:func:`adl.runtime.decode.search.in_place` for one sentence on the host: the
    continuation each of its ``k`` rows takes, given the hypothesis (``parents``, rank order)
    each live continuation comes from; continuations ``len(parents)`` to ``k - 1`` are
    fillers. The best continuation of each hypothesis takes its parent's row; the others
    take the rows left free, in rank order."""
    place = [-1] * k
    others = []
    for j in range(k):
        if j < len(parents) and place[parents[j]] < 0:
            place[parents[j]] = j
        else:
            others.append(j)
    free = (row for row in range(k) if place[row] < 0)
    for j, row in zip(others, free):
        place[row] = j
    return place


def follow(
    memory,
    state,
    keep: Tensor,
    staying: Tensor | None,
    first: int,
    shared: bool,
    dropped: bool,
    moves_only: bool,
):
    """The cache after a beam's step, and the memory: the rows ``keep`` (each new row's old
    row); ``staying``: the sentences that stay, where some left; ``first``: the beam at the
    first step (a sentence's one row became its rows), else 0; ``shared``: a sentence's
    hypotheses share its source's row; ``dropped``: rows left or are new (else each row's
    hypothesis comes from its own sentence); ``moves_only``: then copy only the rows whose
    hypothesis came from another (a host read of ``keep``)."""
    in_place = moves_only and not dropped
    if shared:  # the source's rows follow the sentences that stay, one a sentence
        if staying is not None:
            memory = memory.reorder(staying)
        if first:
            memory = memory.shared_by(first)
        state.reorder(keep, source=False if staying is None else staying, in_place=in_place)
    else:
        if dropped:  # the source and what was made of it follow the sentences that stay
            memory = memory.reorder(keep)
        state.reorder(keep, source=dropped, in_place=in_place)
    return memory
