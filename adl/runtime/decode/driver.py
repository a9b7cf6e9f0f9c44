"""The search over many sentences: sorted by length, cut into batches, each searched by
:func:`~adl.runtime.decode.search.greedy` or :func:`~adl.runtime.decode.search.beam`,
by one worker or several (:mod:`~adl.runtime.decode.workers`: processes forked from this
one on a CPU, kept for the model, threads elsewhere)."""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from concurrent.futures import as_completed
from contextlib import contextmanager

import torch

from adl.runtime.decode.hypotheses import Hypothesis
from adl.runtime.decode.search import beam, greedy, pad_batch
from adl.runtime.decode.workers import worker_pool
from adl.runtime.search_options import SearchOptions


@torch.no_grad()
def search_ids(
    model,
    tokenizers,
    src_ids: Sequence[Sequence[int]],
    options: SearchOptions = SearchOptions(),
    device: torch.device | str = "cpu",
    progress=None,
    cap: int | None = None,
) -> list[list[Hypothesis]]:
    """The best hypotheses of tokenized sentences, in the given order (empty sentences get
    one empty hypothesis). ``progress(n)`` is called with the sentences done so far. Each
    translation has at most ``len_a`` x its source's length + ``len_b`` tokens, and at most
    ``cap`` (the model's target positions).

    The sentences are sorted by length and cut into batches of at most ``max_tokens``
    source tokens x beam; ``options.workers`` workers search the batches at once
    (:func:`~adl.runtime.decode.workers.worker_pool`: processes on a CPU, threads
    elsewhere; the same batches as one worker), the calling thread only waiting (it runs no
    operator: see :func:`loading_for`)."""
    results: list[list[Hypothesis]] = [[Hypothesis([], 0.0, 0.0)] for _ in src_ids]
    todo = [i for i in range(len(src_ids)) if len(src_ids[i])]
    order = sorted(todo, key=lambda i: len(src_ids[i]))
    chunks = batches(src_ids, order, options)
    done = len(src_ids) - len(todo)

    def finish(chunk: list[int], found: list[list[Hypothesis]]) -> None:
        nonlocal done
        for i, hyps in zip(chunk, found):
            results[i] = hyps or [Hypothesis([], -math.inf, -math.inf)]
        done += len(chunk)
        if progress is not None:
            progress(done)

    if options.workers == 1:
        for chunk in chunks:
            sentences = [src_ids[i] for i in chunk]
            finish(chunk, search_batch(model, tokenizers, sentences, options, device, cap))
        return results
    # the costliest batches first (rows x steps), so that no worker is left with a long
    # one at the end
    cost = lambda chunk: len(chunk) * max(len(src_ids[i]) for i in chunk)
    with worker_pool(options.workers, search_batch, model, tokenizers, device) as submit:
        futures = {
            submit([src_ids[i] for i in chunk], options, cap): chunk
            for chunk in sorted(chunks, key=cost, reverse=True)
        }
        for future in as_completed(futures):
            finish(futures[future], future.result())
    return results


def batches(
    src_ids: Sequence[Sequence[int]], order: Sequence[int], options: SearchOptions
) -> list[list[int]]:
    """``order`` (sentence indices, shortest first) cut into batches: each grows while its
    sentences x beam x (its longest + 1) stays within ``max_tokens`` (one sentence at
    least)."""
    out, start = [], 0
    while start < len(order):
        end = start + 1
        while (
            end < len(order)
            and (end - start + 1) * options.beam * (len(src_ids[order[end]]) + 1)
            <= options.max_tokens
        ):
            end += 1
        out.append(list(order[start:end]))
        start = end
    return out


def search_batch(
    model,
    tokenizers,
    sentences: Sequence[Sequence[int]],
    options: SearchOptions,
    device: torch.device | str,
    cap: int | None,
) -> list[list[Hypothesis]]:
    """One batch's search: greedy where ``beam`` and ``nbest`` are 1, else :func:`beam`.
    A model that sizes its cache by the search's length rule (a compiled step's ``plan``)
    is told it here, in the process that searches (a forked worker's copy of the model
    holds what it held at the fork)."""
    plan = getattr(model, "plan", None)
    if plan is not None:
        plan(options.len_a, options.len_b, cap)
    src = pad_batch(sentences, device)
    words = tokenizers.word_ids(src) if getattr(model, "needs_src_words", False) else None
    lengths = torch.tensor([len(x) for x in sentences], dtype=torch.float)
    limit = (lengths * options.len_a + options.len_b).long()
    if cap is not None:
        limit = limit.clamp_max(cap)
    limit = limit.clamp_min(1)
    if options.beam == 1 and options.nbest == 1:
        return [[Hypothesis(h, math.nan, math.nan)] for h in greedy(model, src, words, limit)]
    return beam(
        model, src, options.beam, words, limit, options.penalty, options.alpha, options.nbest
    )


@contextmanager
def loading_for(workers: int) -> Iterator[None]:
    """Load a model that ``workers`` (more than one) will search within this: torch runs
    on one thread meanwhile, so that the loading thread starts no OpenMP team of its own.
    With ``OMP_WAIT_POLICY=ACTIVE`` an idle team spins for good, on the cores the workers
    need (the loading thread only waits while they search); it slowed two workers below
    one (docs/performance.md, "Inference engines"). Torch's threads are set back after."""
    if workers <= 1:
        yield
        return
    total = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(total)
