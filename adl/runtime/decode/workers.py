"""Search workers: several batches searched at once (the ``workers`` search option).

On a CPU, with one torch thread each, the workers are processes forked from this one and
kept for the model: forked at its first search with that many workers, they search every
later one while its weights stay as they were (a changed weight, as training's next
validation has, forks new ones). Each inherits the model at the fork (its weights shared,
copy on write) and runs its operators, Python's included, apart from the others: threads
of one process take turns at the interpreter lock between operators, and a beam's step is
a few hundred small ones. Kept, they start warm: a search's first batches in a fresh
process run cold (its allocator, the sinusoids a position layer keeps, each kernel's first
call at a shape). Elsewhere (more threads each, or a GPU: one stream) the workers are
threads of this process, made for one search.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ProcessPoolExecutor, ThreadPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from contextlib import contextmanager
from multiprocessing import get_all_start_methods, get_context, util
from typing import Any

import torch
from torch import nn
from torch.utils._python_dispatch import is_traceable_wrapper_subclass

Search = Callable[..., Any]  # search(model, tokenizers, sentences, options, device, cap)
Submit = Callable[..., "Future[Any]"]  # submit(sentences, options, cap)


def forks_workers(device: torch.device | str, threads: int) -> bool:
    """Whether the workers of a search on ``device``, ``threads`` torch threads each, are
    processes forked from this one rather than threads: on a CPU with one thread each,
    where the platform can fork. A process forked after this one ran a parallel operator
    deadlocks in its own first one (GNU OpenMP's team does not survive a fork); on one
    thread it runs none. A GPU's workers are threads (one stream)."""
    return torch.device(device).type == "cpu" and threads == 1 and "fork" in get_all_start_methods()


def threads_each(workers: int) -> int:
    """The torch threads each of ``workers`` workers has: the process's, shared (one at
    least)."""
    return max(1, torch.get_num_threads() // workers)


def weights_of(model: Any) -> nn.Module | None:
    """The module whose weights a search's ``model`` computes with: the model itself, or
    a compiled step's (:class:`~adl.runtime.decode.compiled.CompiledStep`'s ``model``);
    None for anything else."""
    if isinstance(model, nn.Module):
        return model
    inner = getattr(model, "model", None)
    return inner if isinstance(inner, nn.Module) else None


@contextmanager
def worker_pool(
    workers: int, search: Search, model: Any, tokenizers: Any, device: torch.device | str
) -> Iterator[Submit]:
    """``submit(sentences, options, cap)``: one of ``workers`` workers runs
    ``search(model, tokenizers, sentences, options, device, cap)`` (a future of its result).
    Each has ``torch.get_num_threads() // workers`` of the process's torch threads (at least
    one). A decoding step is many small operators, most too small to gain from a second
    thread, so two searches on one thread each get through more sentences than one on two
    (bench/inference.py --workers measures it). Forked processes where
    :func:`forks_workers` says so (kept for ``model``: :func:`forked`), else threads, after
    which torch's threads are set back."""
    total, each = torch.get_num_threads(), threads_each(workers)
    if forks_workers(device, each):
        kept = weights_of(model) is not None  # else forked for this search only
        procs = (forked if kept else Forked)(search, model, tokenizers, workers)
        try:
            yield lambda sentences, options, cap: procs.submit(sentences, options, device, cap)
        except BrokenProcessPool:
            forget(model)  # a worker died (killed, out of memory): the next search forks anew
            raise
        finally:
            if not kept:
                procs.close()
        return
    pool = ThreadPoolExecutor(workers, "adl-search", torch.set_num_threads, (each,))
    try:
        yield lambda sentences, options, cap: pool.submit(
            search, model, tokenizers, sentences, options, device, cap
        )
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
        torch.set_num_threads(total)  # what threads made from now on start with


class Forked:
    """``workers`` processes forked from this one, one torch thread each, that search with
    ``search(model, tokenizers, ...)`` as they were at the fork (at the first submit)."""

    def __init__(self, search: Search, model: Any, tokenizers: Any, workers: int):
        # the model by a weak reference, which the fork's copy of it keeps alive there: the
        # pool kept for a model (in _kept) does not keep it alive here
        given = (search, weakref.ref(model), tokenizers)
        self.pool = ProcessPoolExecutor(workers, get_context("fork"), _adopt, given)
        # closed when this goes, and when this process exits, before multiprocessing joins
        # its children: a process that is itself multiprocessing's (a pool's worker) joins
        # them before the interpreter would close the pool, and waited for good on workers
        # kept for a model still alive (seen in bench/inference.py's processes)
        util.Finalize(self, _close, args=(self.pool,), exitpriority=EXIT_PRIORITY)

    def submit(self, *args: Any) -> Future[Any]:
        return self.pool.submit(_search, *args)

    def close(self) -> None:
        _close(self.pool)


# before the finalizers of the pool's own queues (priority 10: the queue that feeds the
# workers, closed first, would not pass them the word to end)
EXIT_PRIORITY = 20


def _close(pool: ProcessPoolExecutor) -> None:
    pool.shutdown(wait=True, cancel_futures=True)


# the workers kept for each model: (what they were forked for, the workers); an entry goes
# with its model, and its processes with it (the pool's own thread ends them)
_kept: weakref.WeakKeyDictionary[Any, tuple[tuple, Forked]] = weakref.WeakKeyDictionary()


def forked(search: Search, model: Any, tokenizers: Any, workers: int) -> Forked:
    """The forked workers kept for ``model`` (a module, or a compiled step: each worker
    inherits the graphs made before the fork): those forked before when they were forked
    for the same search, tokenizers, number of workers and weights (:func:`weights_stamp`
    of :func:`weights_of`), else new ones (the old ones closed)."""
    weights = weights_of(model)
    assert weights is not None, "workers are kept for a model with weights"
    stamp = (search, id(tokenizers), workers, weights_stamp(weights))
    found = _kept.get(model)
    if found is not None and found[0] == stamp:
        return found[1]
    if found is not None:
        found[1].close()
    made = Forked(search, model, tokenizers, workers)
    _kept[model] = (stamp, made)
    return made


def forget(model: Any) -> None:
    """Close the workers kept for ``model``, if any."""
    found = _kept.pop(model, None) if weights_of(model) is not None else None
    if found is not None:
        found[1].close()


def weights_stamp(model: nn.Module) -> tuple:
    """What changes when any of ``model``'s parameters or buffers changes: each one's storage
    and its version counter (which every in-place write raises: an optimizer's step, a
    ``load_state_dict``). A tensor subclass that wraps others (torchao's int8 weights: no
    storage of their own) is stamped by the tensors it holds."""
    return tuple(stamp for t in (*model.parameters(), *model.buffers()) for stamp in _stamps(t))


def _stamps(t: torch.Tensor) -> Iterator[tuple[int, int]]:
    if is_traceable_wrapper_subclass(t):
        names, _ = t.__tensor_flatten__()
        for name in names:
            yield from _stamps(getattr(t, name))
    else:
        yield t.data_ptr(), t._version


_inherited: tuple[Search, Any, Any] | None = None  # a worker's search, model and tokenizers


def _adopt(search: Search, model: weakref.ref, tokenizers: Any) -> None:
    """A worker process's start: one torch thread, and what it inherited from the fork."""
    global _inherited
    torch.set_num_threads(1)
    _inherited = (search, model(), tokenizers)


def _search(sentences: Any, options: Any, device: Any, cap: int | None) -> Any:
    """One batch searched in a worker process."""
    assert _inherited is not None, "a worker process searches only after _adopt"
    search, model, tokenizers = _inherited
    return search(model, tokenizers, sentences, options, device, cap)
