"""The search over many sentences: sorted by length, cut into batches, each searched by
:func:`~adl.runtime.decode.search.greedy` or :func:`~adl.runtime.decode.search.beam`,
by one worker or several (processes forked from this one on a CPU, threads elsewhere,
sharing torch's CPU threads)."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import (
    Executor,
    Future,
    ProcessPoolExecutor,
    ThreadPoolExecutor,
    as_completed,
)
from contextlib import contextmanager
from dataclasses import dataclass
from multiprocessing import get_all_start_methods, get_context
from typing import Any

import torch

from adl.runtime.decode.search import Hypothesis, beam, greedy, pad_batch
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
    (:func:`worker_pool`: processes on a CPU, threads elsewhere; the same batches as one
    worker), the calling thread only waiting (it runs no operator: see
    :func:`loading_for`)."""
    results: list[list[Hypothesis]] = [[Hypothesis([], 0.0, 0.0)] for _ in src_ids]
    todo = [i for i in range(len(src_ids)) if len(src_ids[i])]
    order = sorted(todo, key=lambda i: len(src_ids[i]))
    chunks = batches(src_ids, order, options)
    done = len(src_ids) - len(todo)
    job = _Job(model, tokenizers, src_ids, options, device, cap)

    def finish(chunk: list[int], found: list[list[Hypothesis]]) -> None:
        nonlocal done
        for i, hyps in zip(chunk, found):
            results[i] = hyps or [Hypothesis([], -math.inf, -math.inf)]
        done += len(chunk)
        if progress is not None:
            progress(done)

    if options.workers == 1:
        for chunk in chunks:
            finish(chunk, job.search(chunk))
        return results
    # the costliest batches first (rows x steps), so that no worker is left with a long
    # one at the end
    cost = lambda chunk: len(chunk) * max(len(src_ids[i]) for i in chunk)
    with worker_pool(options.workers, job) as submit:
        futures = {submit(chunk): chunk for chunk in sorted(chunks, key=cost, reverse=True)}
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
    """One batch's search: greedy where ``beam`` and ``nbest`` are 1, else :func:`beam`."""
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


@dataclass(frozen=True)
class _Job:
    """What every worker of one :func:`search_ids` call searches with."""

    model: Any
    tokenizers: Any
    src_ids: Sequence[Sequence[int]]
    options: SearchOptions
    device: torch.device | str
    cap: int | None

    def search(self, chunk: list[int]) -> list[list[Hypothesis]]:
        """The batch of sentences ``chunk`` (indices into ``src_ids``)."""
        sentences = [self.src_ids[i] for i in chunk]
        return search_batch(
            self.model, self.tokenizers, sentences, self.options, self.device, self.cap
        )


_job: _Job | None = None  # a worker process's job (set by _adopt, from the fork)


def _adopt(job: _Job, threads: int) -> None:
    """A worker process's start: its torch threads, and the job it inherited."""
    global _job
    torch.set_num_threads(threads)
    _job = job


def _search_chunk(chunk: list[int]) -> list[list[Hypothesis]]:
    """One batch searched in a worker process (the sentences ``chunk`` of its job)."""
    assert _job is not None, "a worker process searches only after _adopt"
    return _job.search(chunk)


def forks_workers(device: torch.device | str, threads: int) -> bool:
    """Whether the workers of a search on ``device``, ``threads`` torch threads each, are
    processes forked from this one rather than threads: on a CPU with one thread each,
    where the platform can fork. A process forked after this one ran a parallel operator
    deadlocks in its own first one (GNU OpenMP's team does not survive a fork); on one
    thread it runs none. A GPU's workers are threads (one stream)."""
    return torch.device(device).type == "cpu" and threads == 1 and "fork" in get_all_start_methods()


@contextmanager
def worker_pool(workers: int, job: _Job) -> Iterator[Callable[[list[int]], Future]]:
    """``submit(chunk)``: one of ``workers`` workers searches that batch of ``job``'s
    sentences (the future's result: :meth:`_Job.search`'s). Each has
    ``torch.get_num_threads() // workers`` of the process's torch threads (at least one).
    A decoding step is many small operators, most too small to gain from a second thread,
    so two searches on one thread each get through more sentences than one on two
    (bench/inference.py --workers measures it).

    With one thread each on a CPU (as many workers as threads or more) the workers are
    processes forked from this one (:func:`forks_workers`): each inherits the model (its
    weights shared, copy on write) and runs its operators, Python's included, apart from
    the others. Threads of one process take turns at the interpreter lock between
    operators, and a beam's step is a few hundred small ones (docs/performance.md,
    "Inference engines"). Otherwise they are threads, and torch's threads are set back
    after."""
    total = torch.get_num_threads()
    each = max(1, total // workers)
    pool: Executor
    work: Callable[[list[int]], list[list[Hypothesis]]]
    if forks_workers(job.device, each):
        pool = ProcessPoolExecutor(workers, get_context("fork"), _adopt, (job, each))
        work = _search_chunk  # the job inherited by the fork
    else:
        pool = ThreadPoolExecutor(workers, "adl-search", torch.set_num_threads, (each,))
        work = job.search
    try:
        yield lambda chunk: pool.submit(work, chunk)
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
        torch.set_num_threads(total)  # what threads made from now on start with


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
