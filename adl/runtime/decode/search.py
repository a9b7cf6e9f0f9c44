"""Decoding through the model's incremental interface (``model.start`` / ``model.step``).

``greedy`` and ``beam`` decode a padded batch; sentences that are done leave the batch
(``memory.reorder`` / ``state.reorder``), so the cost follows the sentences still running.
:func:`~adl.runtime.decode.driver.search_ids` decodes tokenized sentences in length-sorted
batches; text in and out is :class:`~adl.runtime.decode.translator.Translator`'s (the one
door to a trained model).
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
import torch.nn.functional as F
from torch import Tensor

from adl.runtime.data.tokenizer import BOS, EOS, PAD
from adl.runtime.decode.host_beam import beam_on_host, follow
from adl.runtime.decode.hypotheses import Hypothesis, length_penalty, ranked
from adl.runtime.search_options import SearchOptions  # noqa: F401 (imported from here: sweep, bench)


def check_every(device: torch.device, every: int | None = None) -> int:
    """Steps between the host's looks at which sentences are done (``every``, or the
    device's default: :data:`CHECK_EVERY`)."""
    if every is not None:
        if every < 1:
            raise ValueError("check_every must be at least 1")
        return every
    return CHECK_EVERY.get(device.type, CHECK_EVERY_ACCELERATOR)


# How often the search reads the device. The only host read inside the loop asks which
# sentences are done (one small tensor), to stop, and to drop finished sentences from the
# batch. On a CPU reading is free, and dropping a finished sentence at once saves its
# compute. On a GPU each read waits for the device to drain its queue of kernels, while a
# finished sentence that stays a few steps costs little (its rows ride in the same batched
# kernels): the search looks every 8 steps, an eighth of the synchronisations, at most 7
# wasted steps per finished sentence.
CHECK_EVERY = {"cpu": 1}
CHECK_EVERY_ACCELERATOR = 8

# When greedy search drops its finished rows. A finished row left in the batch costs its
# share of each later step; dropping costs a copy of every live row's cache (the source's
# keys and values and the prefix, in every layer) and a dozen operators, whatever the number
# dropped. Greedy drops them once they are at least DROP_SHARE of the batch (bench/
# greedy_drops.py). Beam search drops finished sentences at once: a sentence kept costs its
# beam's rows, and waiting for a quarter of them did not make it faster.
DROP_SHARE = 0.25


def _can_share_source(model) -> bool:
    """Whether every source-reading layer of ``model`` reads only what it cached of the
    source (``model.can_share_source()``; False for a model without the method)."""
    return bool(getattr(model, "can_share_source", lambda: False)())


def _limits(max_len: Tensor | int, b: int, device: torch.device) -> tuple[Tensor, int, int]:
    """(the per-row limit on the device, the largest and the smallest limit as Python
    ints)."""
    limit = (
        torch.full((b,), max_len, dtype=torch.long)
        if isinstance(max_len, int)
        else max_len.long().cpu()
    )
    if not b:
        return limit.to(device), 0, 0
    longest, shortest = torch.stack([limit.max(), limit.min()]).tolist()  # one read (host)
    return limit.to(device), longest, shortest


@torch.no_grad()
def greedy(
    model,
    src: Tensor,
    src_words: Tensor | None = None,
    max_len: Tensor | int = 100,
    every: int | None = None,
) -> list[list[int]]:
    """The argmax translation of each row of ``src`` (B, S), without bos/eos.

    ``max_len``: tokens at most per row (an int, or a (B,) tensor). The state stays on the
    device; the host looks at it every ``every`` steps (:func:`check_every`) to stop and to
    drop finished rows, and reads the translations once at the end."""
    b, device = src.size(0), src.device
    limit, longest, _ = _limits(max_len, b, device)
    every = check_every(device, every)
    memory, state = model.start(src, src_words)
    # after the first step, every source-reading layer reads only what it cached of the
    # source, where each can (the condition of a shared source): the encoder's outputs need
    # not follow the rows that stay (Memory.reorder's ``cached``)
    cached = _can_share_source(model)
    rows = torch.arange(b, device=device)  # original row of each row in the batch
    done = torch.zeros(b, dtype=torch.bool, device=device)
    tokens = torch.full((b,), BOS, dtype=torch.long, device=device)
    out = torch.full((b, max(longest, 1)), PAD, dtype=torch.long, device=device)
    for t in range(longest):
        logp = model.step(tokens, memory, state)  # (b_live, V)
        logp[:, PAD] = float("-inf")
        logp[:, BOS] = float("-inf")
        tokens = logp.argmax(-1)  # (b_live,)
        ended = tokens.eq(EOS)
        out[rows, t] = torch.where(done | ended, PAD, tokens)  # rows done write nothing
        done = done | ended | (limit <= t + 1)
        if (t + 1) % every == 0 and t + 1 < longest:
            live = (~done).nonzero().squeeze(1)  # the one host read
            if live.numel() == 0:
                break
            finished = done.numel() - live.numel()
            if finished and finished >= DROP_SHARE * done.numel():  # drop finished rows
                memory = memory.reorder(live, cached=cached)
                state.reorder(live)
                tokens, rows, done, limit = (
                    x.index_select(0, live) for x in (tokens, rows, done, limit)
                )
    return [[tok for tok in row if tok != PAD] for row in out.tolist()]


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
    every: int | None = None,
) -> list[list[Hypothesis]]:
    """Beam search over each row of ``src`` (B, S): the ``nbest`` best hypotheses of each.

    Every step scores the ``size`` live hypotheses of each sentence with one call to
    ``model.step`` (the cache holds B × size rows), keeps the best ``size`` continuations,
    and sets aside a hypothesis when it ends in eos (among the best ``size`` candidates).
    A sentence is done when ``size`` hypotheses have finished (or at ``max_len`` tokens,
    where only eos may follow). The first step, where a sentence has one hypothesis (bos),
    scores B rows, and its reorder makes each sentence's ``size`` rows: the source's keys
    and values are projected once a sentence, not once a hypothesis. Where the model's
    source-reading layers can share them (``model.can_share_source()``: dot-product source
    attention) the hypotheses keep sharing them, one row a sentence
    (:meth:`Memory.shared_by <adl.nn.context.Memory.shared_by>`): nothing to copy k times,
    nor to move but a sentence's row when sentences leave.

    Where the host looks every step (``every`` 1, a CPU's default: reading is free there),
    the bookkeeping after each step's top-k is the host's
    (:func:`~adl.runtime.decode.host_beam.beam_on_host`: the same search). Elsewhere all of
    it is tensor operations on the device: the live hypotheses (n, k) with their prefixes,
    and the finished ones in per-sentence slots in the order they finished. The host looks
    at which sentences are done every ``every`` steps (:func:`check_every`) to stop and to
    drop them from the batch, and reads the hypotheses once at the end."""
    length_penalty(1, penalty, alpha)  # an unknown penalty fails before any work
    b, k, device = src.size(0), size, src.device
    limit, longest, shortest = _limits(max_len, b, device)
    every = check_every(device, every)
    # one row of the source a sentence, shared by its k hypotheses (Memory.shared_by), where
    # every source-reading layer can take it: no k copies to make at the first step and to
    # keep when sentences leave, and each sentence's queries attend to it at once
    shared = k > 1 and _can_share_source(model)
    if every == 1:
        limits = limit.tolist()
        return beam_on_host(model, src, k, src_words, limits, penalty, alpha, nbest, shared)
    # the first step scores one row a sentence (its one hypothesis, bos); the k rows a
    # sentence that the steps after it score are made by that step's reorder
    memory, state = model.start(src, src_words)
    rows = torch.arange(b, device=device)  # original sentence of each sentence in the batch
    done = torch.zeros(b, dtype=torch.bool, device=device)
    scores = torch.zeros(b, 1, device=device)  # (n, hypotheses a sentence)
    prefix = torch.empty(b, k, 0, dtype=torch.long, device=device)  # (n, k, t)
    tokens = torch.full((b,), BOS, dtype=torch.long, device=device)
    # finished hypotheses: k slots per sentence in the order they finished, + 1 spare slot
    # that takes the writes of candidates that do not finish
    fin_tokens = torch.full((b, k + 1, max(longest, 1)), PAD, dtype=torch.long, device=device)
    fin_score = torch.zeros(b, k + 1, device=device)
    fin_len = torch.zeros(b, k + 1, dtype=torch.long, device=device)
    fin_count = torch.zeros(b, dtype=torch.long, device=device)
    width = 0  # candidates per sentence each step
    k_rows = torch.arange(k, device=device)
    not_eos = rank = first_k = None  # made at the first step (they need the vocabulary)
    for t in range(longest + 1):
        logp = model.step(tokens, memory, state)  # (n·h, V): h hypotheses a sentence
        (n, h), vocab = scores.shape, logp.size(-1)
        if not_eos is None or rank is None or first_k is None:
            # the scores take the model's precision (a float64 model's are float64)
            scores, fin_score = scores.to(logp.dtype), fin_score.to(logp.dtype)
            not_eos = torch.arange(vocab, device=device).ne(EOS)
            width = min(2 * k, k * vocab)
            rank = torch.arange(width, device=device)
            first_k = rank < k
        logp[:, PAD] = float("-inf")
        logp[:, BOS] = float("-inf")
        if t >= shortest:  # at the length limit only eos may follow
            at_limit = (limit <= t).repeat_interleave(h).unsqueeze(1)  # (n·h, 1)
            logp = logp.masked_fill(at_limit & not_eos, float("-inf"))
        total = (scores.view(-1, 1) + logp).view(n, h * vocab)
        if total.size(1) < width:  # the first step of a vocabulary smaller than 2k
            total = F.pad(total, (0, width - total.size(1)), value=float("-inf"))
        best, index = total.topk(width, dim=-1)  # (n, 2k) candidates, best first
        beam_i, tok = index.div(vocab, rounding_mode="floor"), index.remainder(vocab)
        real = best.ne(float("-inf"))
        is_eos = tok.eq(EOS)

        # eos among the best k candidates: finished, while the sentence has room
        ends = is_eos & real & first_k & ~done.unsqueeze(1)
        slot = fin_count[rows].unsqueeze(1) + ends.long().cumsum(1) - 1
        ends &= slot < k
        slot = torch.where(ends, slot, k)  # the spare slot for the rest
        where = (rows.unsqueeze(1).expand(n, width), slot)
        fin_score[where] = best
        fin_len[where] = t
        if t:
            ended = prefix.gather(1, beam_i.unsqueeze(2).expand(n, width, t))  # (n, 2k, t)
            fin_tokens[where[0], where[1], :t] = ended
        fin_count.index_add_(0, rows, ends.sum(1))

        # the best k candidates that do not end go on (rank order); fewer than k: the best
        # repeated with score -inf
        goes_on = ~is_eos & real
        order = torch.where(goes_on, rank, rank + width).argsort(1)[:, :k]  # (n, k)
        spare = k_rows >= goes_on.sum(1, keepdim=True)
        c_beam, c_tok = beam_i.gather(1, order), tok.gather(1, order)
        c_tok = torch.where(spare, c_tok[:, :1], c_tok)
        c_score = torch.where(spare, float("-inf"), best.gather(1, order))
        places = in_place(c_beam, spare)  # most rows of the cache stay where they are
        c_beam, c_tok, scores = (x.gather(1, places) for x in (c_beam, c_tok, c_score))
        # a filler keeps whatever its row holds: nothing to copy for it
        c_beam = torch.where(spare.gather(1, places), k_rows, c_beam)
        done = done | (fin_count[rows] >= k) | ~goes_on.any(1)
        if h == 1:  # the first step: the sentence's row becomes its k rows
            c_beam = torch.zeros_like(c_beam)
        keep = (torch.arange(n, device=device).unsqueeze(1) * h + c_beam).view(-1)  # (n·k,)
        prefix = torch.cat(
            [prefix.gather(1, c_beam.unsqueeze(2).expand(n, k, t)), c_tok.unsqueeze(2)], 2
        )
        tokens = c_tok.view(-1)
        dropped = h < k  # the first step's rows are all new
        staying: Tensor | None = None  # the sentences that stay, where some leave
        if (t + 1) % every == 0 or t == longest:
            live = (~done).nonzero().squeeze(1)  # the one host read
            if live.numel() == 0:
                break
            if live.numel() < n:  # drop finished sentences from the batch
                dropped, staying = True, live
                keep = keep.view(n, k).index_select(0, live).view(-1)
                tokens = tokens.view(n, k).index_select(0, live).view(-1)
                scores, prefix, rows, done, limit = (
                    x.index_select(0, live) for x in (scores, prefix, rows, done, limit)
                )
        first = k if h == 1 else 0
        memory = follow(memory, state, keep, staying, first, shared, dropped, False)
    return _hypotheses(fin_tokens, fin_score, fin_len, fin_count, penalty, alpha, nbest)


def in_place(parent: Tensor, dead: Tensor) -> Tensor:
    """Where each of a step's ``k`` continuations of a sentence goes: (n, k), the
    continuation to put in each row of the sentence. The best continuation of each
    hypothesis takes its parent's row, so that its cache stays in place; the others
    (a hypothesis' second continuation, the ``dead`` fillers) take the rows left free, in
    rank order. Which row holds which hypothesis changes nothing in the search but the order
    of candidates with exactly equal scores; where the host reads every step
    (:mod:`~adl.runtime.decode.host_beam`, the same rule), the cache reorder then copies
    only the rows whose parent is elsewhere (:meth:`adl.nn.context.DecodeState.reorder`,
    ``in_place``).

    ``parent`` (n, k): each continuation's hypothesis; ``dead`` (n, k): fillers, whose row
    need not hold anything."""
    n, k = parent.shape
    rank = torch.arange(k, device=parent.device)
    # (n, k, k): continuation j is a live one of the same parent, ranked before i
    same = parent.unsqueeze(2).eq(parent.unsqueeze(1)) & (rank.unsqueeze(1) > rank)
    first = ~(same & ~dead[:, None]).any(2) & ~dead  # the best live continuation of its parent
    taken = torch.zeros_like(parent).scatter_add_(1, parent, first.long()).gt(0)
    free = taken.long().argsort(dim=1, stable=True)  # rows no first continuation takes, first
    later = (~first).long().cumsum(1) - 1  # rank among the other continuations
    row = torch.where(first, parent, free.gather(1, later.clamp(min=0)))
    return torch.empty_like(parent).scatter_(1, row, rank.expand(n, k))


def _hypotheses(
    fin_tokens: Tensor,
    fin_score: Tensor,
    fin_len: Tensor,
    fin_count: Tensor,
    penalty: str,
    alpha: float,
    nbest: int,
) -> list[list[Hypothesis]]:
    """The finished hypotheses read from the device (once), best first by the
    length-penalised score (ties keep the order they finished in)."""
    return [
        ranked(((toks[i][: lens[i]], scores[i]) for i in range(count)), penalty, alpha, nbest)
        for toks, scores, lens, count in zip(
            fin_tokens.tolist(), fin_score.tolist(), fin_len.tolist(), fin_count.tolist()
        )
    ]


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

        def reorder(self, index: Tensor, cached: bool = False) -> FullRecompute.Rows:
            """Keep batch rows ``index``; ``cached`` (:meth:`Memory.reorder`'s) changes
            nothing: every step reads the whole source again."""
            words = None if self.words is None else self.words.index_select(0, index)
            return FullRecompute.Rows(self.src.index_select(0, index), words)

    class Prefix:
        def __init__(self, rows: int, device: torch.device):
            self.tokens = torch.empty(rows, 0, dtype=torch.long, device=device)

        def reorder(self, index: Tensor, source: bool = True, in_place: bool = False) -> None:
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
