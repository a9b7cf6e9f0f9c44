"""The study: Optuna's storage, sampler and pruner, and the workers that share them.

Every worker runs the same loop on the same storage: count what the study has trained,
stop at the budget, else let Optuna start one trial (``study.optimize(n_trials=1)``: it
asks the sampler, or takes a waiting retry first) and train it (:mod:`.trial`). The count
and the trial's start happen under a lock in the search folder, so that local workers never
start more trials than the budget; the storage gives every trial its own number, and a
program's lock gives it one trainer, so no trial runs twice.

A worker killed mid-trial (``kill -9``, a lost node) leaves its trial RUNNING, with its
host and pid written before it started (:func:`announce`). A worker on the same machine
finds it (its process is gone), fails it and queues a retry of the same program, which
resumes the run folder from its last checkpoint; on other machines Optuna's heartbeat
does the same once the trial has been silent for ``grace`` seconds. Trials that train
nothing are marked ``skipped`` and not counted: a program trained before (the trial takes
its values), one another worker is training, one that does not check.
"""

from __future__ import annotations

import datetime
import multiprocessing
import os
import socket
import time
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from adl.runtime.search.programs import Program, Spaces, check_program
from adl.runtime.search.spec import SearchError, Spec, optuna_module, settle
from adl.runtime.search.trial import (
    Busy,
    ended,
    first_files,
    held,
    train_program,
    trial_config,
    write_first,
)
from adl.runtime.sweep.state import alive

try:
    import fcntl
except ImportError:  # pragma: no cover
    fcntl = None  # type: ignore[assignment]

MAX_SKIPPED = 30  # trials in a row that train nothing before a worker stops
HEARTBEAT = 60  # seconds between a running trial's heartbeats in the storage
GRACE = 180  # seconds of silence before another worker fails a trial and retries it


@dataclass(frozen=True)
class Budget:
    trials: int = 0  # trials that train, in the whole study (0: no limit)
    deadline: float = 0.0  # time.time() after which no trial starts (0: none)
    hours: float = 0.0  # the study's hours (:func:`spent`) after which no trial starts (0: none)


def storage_url(folder: Path, storage: str | None) -> str:
    return storage or f"sqlite:///{(folder / 'study.db').resolve()}"


def open_study(spec: Spec, url: str, worker: int = 0, curves: bool = False) -> Any:
    """The study (created on first use), with its sampler and pruner; ``curves``: the
    single-objective study of validation curves that prunes a Pareto search's trials
    (Optuna's pruners take one objective). The curves study's trials are asked and told by
    the worker of their Pareto trial, never run by ``optimize``, so its storage has no
    heartbeat (Optuna warns on every ``ask`` of a study whose storage beats hearts)."""
    optuna = optuna_module()
    warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
    kwargs: dict[str, Any] = {}
    if url.startswith("sqlite"):
        kwargs["engine_kwargs"] = {"connect_args": {"timeout": 120}}
    if not curves:
        retry = optuna.storages.RetryHeartbeatStaleTrialCallback(3)
        kwargs.update(
            heartbeat_interval=HEARTBEAT, grace_period=GRACE, heartbeat_stale_trial_callback=retry
        )
    storage = optuna.storages.RDBStorage(url, **kwargs)
    seed = spec.sampler_seed + worker  # workers with one seed would propose one program
    if curves or len(spec.objectives) == 1:
        sampler = optuna.samplers.TPESampler(seed=seed)
    else:
        sampler = optuna.samplers.NSGAIISampler(seed=seed)
    pruner = _pruner(optuna, spec) if curves or len(spec.objectives) == 1 else None
    name = spec.study + (".curves" if curves else "")
    directions = ["maximize"] if curves else spec.directions
    return optuna.create_study(
        storage=storage,
        study_name=name,
        directions=directions,
        sampler=sampler,
        pruner=pruner,
        load_if_exists=True,
    )


def _pruner(optuna: Any, spec: Spec) -> Any:
    rung = max(spec.valid_every, 1)
    if spec.pruner == "halving":
        return optuna.pruners.SuccessiveHalvingPruner(min_resource=rung, reduction_factor=3)
    if spec.pruner == "hyperband":
        top = max(spec.steps, 3 * rung)
        return optuna.pruners.HyperbandPruner(rung, top, reduction_factor=3)
    return optuna.pruners.NopPruner()


def counted(study: Any) -> tuple[int, set[str]]:
    """Trials that trained (or train now), and the programs trained to the end or pruned."""
    optuna = optuna_module()
    states = (optuna.trial.TrialState.COMPLETE, optuna.trial.TrialState.PRUNED)
    n, done = 0, set()
    for t in study.get_trials(deepcopy=False):
        if "skipped" in t.user_attrs:
            continue
        if t.state in (*states, optuna.trial.TrialState.RUNNING):
            n += 1
        if t.state in states and "program" in t.user_attrs:
            done.add(t.user_attrs["program"])
    return n, done


def spent(trials: list[Any], now: datetime.datetime | None = None) -> float:
    """Hours the trials that ended by training (complete or pruned) took, each from its
    start to its end, summed (with ``now``, the running trials' hours so far too): with W
    workers at once, about W times the wall time the search has run, over all its commands
    (``--hours`` counts one command's wall time only). A trial cut with its worker is not
    counted: its end is only known when a later worker fails it, perhaps a session later,
    and its retry trains the program again and counts. Trials that trained nothing
    (``skipped``) are not counted."""
    optuna = optuna_module()
    states = optuna.trial.TrialState
    total = 0.0
    for t in trials:
        if t.datetime_start is None or "skipped" in t.user_attrs:
            continue
        if t.state in (states.COMPLETE, states.PRUNED) and t.datetime_complete is not None:
            total += (t.datetime_complete - t.datetime_start).total_seconds()
        elif t.state == states.RUNNING and now is not None:
            total += (now - t.datetime_start).total_seconds()
    return total / 3600


def over(budget: Budget, trials: list[Any], n: int, waiting: bool) -> bool:
    """Whether the budget is spent, the study's ``trials`` as they stand: ``n`` trained (a
    retry that ``waiting`` trains past it, in its failed trial's place), the command's
    deadline, or the study's hours (the running trials' so far counted)."""
    if budget.trials and n >= budget.trials and not waiting:
        return True
    if budget.deadline and time.time() >= budget.deadline:
        return True
    if budget.hours:
        return spent(trials, datetime.datetime.now()) >= budget.hours
    return False


def fail_dead(study: Any) -> int:
    """Fail this machine's trials whose worker process is gone, queueing a retry of each
    (the heartbeat does it for other machines after :data:`GRACE` seconds)."""
    optuna = optuna_module()
    retry = optuna.storages.RetryHeartbeatStaleTrialCallback(3)
    n = 0
    for t in study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.RUNNING,)):
        if "pid" not in t.user_attrs or alive(t.user_attrs) is not False:
            continue  # starting, alive, or on another machine (the heartbeat's)
        study.tell(t.number, state=optuna.trial.TrialState.FAIL)
        if "skipped" not in t.user_attrs:
            retry(study, study.get_trials(deepcopy=False)[t.number])
        n += 1
    return n


def announce(study: Any, host: str, pid: int) -> None:
    """Queue the trial this worker starts next with its host and pid already written, unless
    a retry waits (the worker takes that first). A trial that ``study.optimize`` makes
    itself is RUNNING before the objective writes its pid: a worker killed in between would
    leave a trial that :func:`fail_dead` cannot tell from one starting, counted against the
    budget until the heartbeat's grace ends (after the search, on one machine)."""
    optuna = optuna_module()
    if not study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.WAITING,)):
        study.enqueue_trial({}, user_attrs={"host": host, "pid": pid})


class _Gate:
    """The lock under which a worker counts the study and starts its next trial."""

    def __init__(self, path: Path):
        self.path = path
        self.fd: int | None = None

    def __enter__(self) -> _Gate:
        if fcntl is not None:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
            fcntl.flock(fd, fcntl.LOCK_EX)
            self.fd = fd
        return self

    def release(self) -> None:
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None

    def __exit__(self, *exc: Any) -> None:
        self.release()


def work(folder: str | Path, worker: int, budget: Budget, storage: str | None, threads: int) -> int:
    """One worker's loop; returns the trials it trained."""
    optuna = optuna_module()
    folder = Path(folder)
    spec = settle(None, folder)
    url = storage_url(folder, storage)
    study = open_study(spec, url, worker)
    curves = open_study(spec, url, worker, curves=True) if len(spec.objectives) > 1 else None
    spaces = Spaces(spec)
    base = trial_config(spec, folder, first_files(folder), threads)
    size = spaces.size
    trained = skipped = 0
    while skipped < MAX_SKIPPED:
        with _Gate(folder / ".gate") as gate:
            fail_dead(study)
            n, done = counted(study)
            waiting = [  # retries of failed trials: trained past the budget, in their place
                t
                for t in study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.WAITING,))
                if "failed_trial" in t.system_attrs
            ]
            if len(done) >= size and not waiting:
                print(f"worker {worker}: every program of the space is trained", flush=True)
                break
            if over(budget, study.get_trials(deepcopy=False), n, bool(waiting)):
                break
            objective = _Objective(spec, folder, spaces, base, gate, curves, threads)
            announce(study, socket.gethostname(), os.getpid())
            study.optimize(objective, n_trials=1, catch=(Exception,))  # logged, the trial FAIL
        if objective.trained:
            trained, skipped = trained + 1, 0
        else:
            skipped += 1
    return trained


class _Invalid(SearchError):
    """A program that does not check at the search's sizes (the trial fails fast)."""


class _Objective:
    """One trial: the program the sampler picks, trained unless it was before."""

    def __init__(self, spec, folder, spaces, base, gate, curves, threads):
        self.spec, self.folder, self.spaces, self.base = spec, folder, spaces, base
        self.gate, self.curves, self.threads = gate, curves, threads
        self.trained = False

    def __call__(self, trial: Any) -> Any:
        trial.set_user_attr("host", socket.gethostname())  # before the others look at it
        trial.set_user_attr("pid", os.getpid())
        self.gate.release()  # the trial is in the storage: the others count it
        program = self.spaces.suggest(trial)
        for key, value in (
            ("program", program.key),
            ("enc", program.encoder),
            ("dec", program.decoder),
        ):
            trial.set_user_attr(key, value)
        before = self._before(trial, program)
        if before is not None:
            return before
        problem = check_program(program, self.base)
        if problem is not None:
            trial.set_user_attr("skipped", "invalid")
            trial.set_user_attr("invalid", problem)
            raise _Invalid(problem)
        try:
            with held(self.folder, program.key):
                # under the lock: a trial of this program may have ended since the first
                # look, its state not yet in the storage (its lock is let go first)
                record = ended(self.folder, program.key)
                if record is not None and _told(trial.study, record["trial"]):
                    pruned = record["pruned"] or record["bleu"] is None
                    values = None if pruned else self._values(record["bleu"], record["costs"])
                    return self._repeat(trial, record["trial"], values)
                return self._train(trial, program)
        except Busy:
            trial.set_user_attr("skipped", "busy")
            raise

    def _repeat(self, trial: Any, number: int, values: Any) -> Any:
        """Trial ``number``'s ``values`` (None: it was pruned), which this trial repeats,
        training nothing."""
        trial.set_user_attr("skipped", f"the program of trial {number}")
        if values is None:
            raise optuna_module().TrialPruned()
        return values

    def _train(self, trial: Any, program: Program) -> Any:
        """Train the trial's program (its lock held) and return the trial's values."""
        optuna = optuna_module()
        mirror = self.curves.ask() if self.curves is not None else None
        report = _reporter(trial if mirror is None else mirror)
        try:
            outcome = train_program(
                self.spec, self.folder, program, trial.number, report, self.threads
            )
        except BaseException:
            if mirror is not None:
                self.curves.tell(mirror, state=optuna.trial.TrialState.FAIL)
            raise
        self.trained = True
        trial.set_user_attr("curve", outcome.curve)
        trial.set_user_attr("steps", outcome.steps)
        if outcome.pruned or outcome.bleu is None:
            if mirror is not None:
                self.curves.tell(mirror, state=optuna.trial.TrialState.PRUNED)
            raise optuna.TrialPruned()
        if mirror is not None:
            self.curves.tell(mirror, outcome.bleu)
        trial.set_user_attr("costs", outcome.costs)
        return self._values(outcome.bleu, outcome.costs)

    def _values(self, bleu: float, costs: dict[str, float]) -> list[float]:
        """A trained program's values, in the order of the spec's objectives."""
        found = {"bleu": bleu, **costs}
        return [found[o] for o in self.spec.objectives]

    def _before(self, trial: Any, program: Program) -> Any:
        """The values of a program trained before (this trial repeats them, training
        nothing), or None."""
        optuna = optuna_module()
        for t in trial.study.get_trials(deepcopy=False):
            if t.number == trial.number or t.user_attrs.get("program") != program.key:
                continue
            if "skipped" in t.user_attrs:
                continue
            if t.state == optuna.trial.TrialState.COMPLETE:
                return self._repeat(trial, t.number, t.values if len(t.values) > 1 else t.values[0])
            if t.state == optuna.trial.TrialState.PRUNED:
                return self._repeat(trial, t.number, None)
        return None


def _told(study: Any, number: int) -> bool:
    """Whether trial ``number`` ended or will (complete, pruned, or running: about to be
    told); not one that failed (killed after it trained: a retry takes its place)."""
    optuna = optuna_module()
    states = optuna.trial.TrialState
    for t in study.get_trials(deepcopy=False):
        if t.number == number:
            return t.state in (states.COMPLETE, states.PRUNED, states.RUNNING)
    return False


def _reporter(trial: Any):
    def report(step: int, bleu: float) -> bool:
        trial.report(bleu, step)
        return bool(trial.should_prune())

    return report


def run(
    spec: Spec | None,
    folder: str | Path,
    *,
    trials: int = 0,
    hours: float = 0.0,
    study_hours: float = 0.0,
    workers: int = 1,
    executor: str = "local",
    slurm: dict[str, Any] | None = None,
    storage: str | None = None,
    threads: int = 0,
) -> dict[str, Any]:
    """Search: ``workers`` workers (local processes, or Slurm jobs through submitit) share
    the study until ``trials`` trials have trained, ``hours`` have passed, or the study's
    trials have taken ``study_hours`` in all, over every command (or every program is
    trained). ``spec`` None continues the folder's search. Returns the study's
    counts."""
    if not (trials or hours or study_hours):
        raise SearchError("give a budget: --trials N, --hours H or --study-hours H")
    if workers < 1:
        raise SearchError("--workers must be at least 1")
    optuna_module()
    folder = Path(folder)
    spec = settle(spec, folder)
    spaces = Spaces(spec)
    write_first(folder, spaces.first())
    open_study(spec, storage_url(folder, storage))  # created before the workers race to
    budget = Budget(trials, time.time() + 3600 * hours if hours else 0.0, study_hours)
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else 1
    threads = threads or max(1, cpus // workers)
    args = [(str(folder), i, budget, storage, threads) for i in range(workers)]
    if executor == "local":
        context = multiprocessing.get_context("spawn")
        others = [context.Process(target=work, args=a) for a in args[1:]]
        for p in others:
            p.start()
        try:
            work(*args[0])
        finally:
            for p in others:
                p.join()
    else:
        _submitit(folder, executor, slurm or {}, args)
    study = open_study(spec, storage_url(folder, storage))
    n, done = counted(study)
    return {"trials": n, "programs": len(done), "size": spaces.size}


def _submitit(folder: Path, executor: str, options: dict[str, Any], args: list[tuple]) -> None:
    """The workers as submitit jobs (Slurm, or submitit's local executor), with the sweep
    engine's reading of the options (adl.runtime.sweep.engines)."""
    import submitit

    from adl.runtime.sweep.engines import submitit_parameters

    cluster = "slurm" if executor == "slurm" else "local"
    pool = submitit.AutoExecutor(folder=folder / "submitit", cluster=cluster)
    pool.update_parameters(**submitit_parameters(options, cluster))
    jobs = [pool.submit(work, *a) for a in args]
    for job in jobs:
        job.result()
