"""The engines that run a sweep's jobs: no scheduler of our own.

- ``local``: the standard library's process pool, ``--jobs N`` processes at once, a fresh
  process for each job (so that each run's peak memory is its own), each with its share of
  the CPU threads, or one GPU each on a machine with GPUs. The processes are forked from
  multiprocessing's fork server, which has imported torch and the runtime once (a job then
  starts in milliseconds instead of seconds); where there is no fork server, spawned.
- ``slurm``: submitit's Slurm executor, one array job, ``--jobs N`` tasks at once
  (``slurm_array_parallelism``); a job that reaches its time limit is requeued by submitit
  and resumes from its last checkpoint.
- ``submitit-local``: submitit's local executor (every job at once, on this machine): the
  Slurm path without a cluster, for trying it out and for the tests.
"""

from __future__ import annotations

import concurrent.futures as cf
import multiprocessing
import os
import signal
import sys
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from adl.runtime.errors import UserError
from adl.runtime.sweep.job import Job, run_job

ENGINES = ("local", "slurm", "submitit-local")
Done = Callable[[Job, dict[str, Any]], None]

# submitit's parameters shared by its executors; anything else is a Slurm option (slurm_KEY)
GENERIC = {
    "timeout_min": int,
    "mem_gb": float,
    "nodes": int,
    "cpus_per_task": int,
    "gpus_per_node": int,
    "tasks_per_node": int,
    "name": str,
    "stderr_to_stdout": bool,
}


def run_local(jobs: Sequence[Job], workers: int, gpus: int, done: Done) -> None:
    """Run ``jobs`` in a pool of ``workers`` processes (``gpus`` > 0: one GPU each)."""
    context = _context()
    extra: dict[str, Any] = {"max_tasks_per_child": 1} if sys.version_info >= (3, 11) else {}
    manager = None
    if gpus:
        manager = context.Manager()
        free = manager.Queue()
        for i in range(gpus):
            free.put(i)
        for job in jobs:
            job.gpus = free
    terms: list[int] = []  # SIGTERMs this process was sent
    previous = _on_term(terms)
    # set when the sweep is stopped: a job the pool has already handed to its call queue
    # (one beyond those running) cannot be cancelled, and starts nothing once it is set
    stop = context.Event()
    # set when a SIGTERM stopped the sweep: each job's process passes it on to itself
    term = context.Event()
    try:
        with cf.ProcessPoolExecutor(
            workers, mp_context=context, initializer=_start_worker, initargs=(stop, term), **extra
        ) as pool:
            futures = {pool.submit(_run_unless_stopped, job): job for job in jobs}
            try:
                for future in cf.as_completed(futures):
                    done(futures[future], _outcome(future))
            except KeyboardInterrupt:
                stop.set()
                for future in futures:
                    future.cancel()  # jobs not started yet; those running save a checkpoint
                if terms:  # a Ctrl-C reaches the jobs from the terminal; a SIGTERM does not
                    term.set()
                raise
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)
        if manager is not None:
            manager.shutdown()


def _on_term(terms: list[int]) -> Any:
    """A SIGTERM to the sweep's process ends it as Ctrl-C does (the handler before it is
    returned, or None off the main thread): without it the sweep would die at once and leave
    its jobs training on, with no one to record their results."""
    if threading.current_thread() is not threading.main_thread():
        return None

    def handler(signum: int, frame: Any) -> None:
        terms.append(signum)
        raise KeyboardInterrupt

    return signal.signal(signal.SIGTERM, handler)


PRELOAD = ["adl.runtime.sweep.job", "adl.runtime.training.train", "adl.runtime.decode.bleu"]


def _context() -> multiprocessing.context.BaseContext:
    """Fresh processes that inherit nothing from this one: forked from a fork server that
    imported the runtime (no CUDA initialised there), or spawned."""
    if "forkserver" in multiprocessing.get_all_start_methods():
        context = multiprocessing.get_context("forkserver")
        context.set_forkserver_preload(PRELOAD)
        return context
    return multiprocessing.get_context("spawn")


_STOP: Any = None  # in a job's process: the sweep's stop event (set when it is stopped)
_RUNNING = False  # in a job's process: whether its job is running


def _start_worker(stop: Any, term: Any) -> None:
    """A job's process leaves Ctrl-C to the training loop, which installs its own handler
    (finish the update, save a checkpoint, stop); outside training it goes on to the end.
    It keeps the sweep's stop event (:func:`_run_unless_stopped`), and a thread of it waits
    for the sweep's SIGTERM (:func:`_pass_on_term`)."""
    global _STOP
    _STOP = stop
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    threading.Thread(target=_pass_on_term, args=(term,), name="adl-sweep-term", daemon=True).start()


def _pass_on_term(term: Any) -> None:
    """Once the sweep is stopped by a SIGTERM, send one to this process if it runs a job:
    the training loop's handler finishes the update, saves a checkpoint and stops (a
    Ctrl-C needs none of this: the terminal sends it to every process of the group)."""
    term.wait()
    if _RUNNING:
        os.kill(os.getpid(), signal.SIGTERM)


def _run_unless_stopped(job: Job) -> dict[str, Any]:
    """:func:`run_job`, unless the sweep was stopped before the job's process took it."""
    global _RUNNING
    if _STOP is not None and _STOP.is_set():
        return _not_started()
    _RUNNING = True
    try:
        return run_job(job)
    finally:
        _RUNNING = False


def _not_started() -> dict[str, Any]:
    """The outcome of a job the sweep was stopped before (cancelled, or taken after the stop)."""
    return {"ok": False, "state": "stopped", "error": "not started"}


def _outcome(future: cf.Future) -> dict[str, Any]:
    try:
        return future.result()
    except cf.process.BrokenProcessPool:
        return {"ok": False, "state": "failed", "error": "the job's process died (killed?)"}
    except cf.CancelledError:
        return _not_started()
    except Exception as exc:
        return {"ok": False, "state": "failed", "error": f"{type(exc).__name__}: {exc}"}


def submitit_parameters(options: dict[str, Any], cluster: str) -> dict[str, Any]:
    """submitit's ``update_parameters`` from the spec's slurm: section and --slurm KEY=VALUE:
    shared names as they are, any other a Slurm option (``partition`` -> ``slurm_partition``)."""
    params: dict[str, Any] = {"timeout_min": 24 * 60}  # submitit's default is minutes
    for key, value in options.items():
        key = str(key)
        if key in GENERIC:
            kind = GENERIC[key]
            try:
                params[key] = kind(value) if kind is not bool else _boolean(value)
            except (TypeError, ValueError):
                raise UserError(
                    f"slurm option {key} takes {kind.__name__}, not {value!r}"
                ) from None
        elif cluster == "slurm":
            params[key if key.startswith("slurm_") else f"slurm_{key}"] = value
        else:
            raise UserError(
                f"slurm option {key} is for Slurm only; the local executor takes "
                f"{', '.join(GENERIC)}"
            )
    return params


def _boolean(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if str(value).lower() in ("true", "1", "yes"):
        return True
    if str(value).lower() in ("false", "0", "no"):
        return False
    raise ValueError(value)


def run_submitit(
    jobs: Sequence[Job],
    folder: Path,
    cluster: str,
    parallel: int,
    options: dict[str, Any],
    done: Done,
    poll: float = 10.0,
) -> None:
    """Run ``jobs`` through submitit (``cluster`` = slurm | local), ``parallel`` at once on
    Slurm; their logs go to ``folder``."""
    try:
        import submitit
    except ImportError:  # pragma: no cover - submitit is a dependency
        raise UserError("--executor slurm needs submitit: pip install submitit") from None
    executor = submitit.AutoExecutor(folder=folder, cluster=cluster)
    params = submitit_parameters(options, cluster)
    if cluster == "slurm":
        params["slurm_array_parallelism"] = parallel
    try:
        executor.update_parameters(**params)
    except (NameError, AssertionError, ValueError) as exc:
        raise UserError(f"submitit refused the options: {exc}") from None
    with executor.batch():
        submitted = [executor.submit(Resumable(job)) for job in jobs]
    by_id = {id(s): job for s, job in zip(submitted, jobs)}
    try:
        for finished in submitit.helpers.as_completed(submitted, poll_frequency=poll):
            done(by_id[id(finished)], _submitit_outcome(finished))
    except KeyboardInterrupt:
        for s in submitted:
            s.cancel(check=False)
        raise


def _submitit_outcome(job: Any) -> dict[str, Any]:
    try:
        return job.result()
    except Exception as exc:  # the job's process failed outside run_job (killed, no Python)
        last = str(exc).strip().splitlines()
        return {"ok": False, "state": "failed", "error": last[-1] if last else repr(exc)}


class Resumable:
    """A job as submitit runs it. On a Slurm time limit submitit calls ``checkpoint`` and
    requeues the same job, which resumes from the run's last checkpoint."""

    def __init__(self, job: Job):
        self.job = job

    def __call__(self) -> dict[str, Any]:
        return run_job(self.job)

    def checkpoint(self, *args: Any, **kwargs: Any):
        import submitit

        return submitit.helpers.DelayedSubmission(Resumable(self.job))
