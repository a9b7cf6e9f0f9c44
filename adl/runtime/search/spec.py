"""What a search is: its two spaces and the settings every trial trains with, kept in the
search folder as ``search.json`` so that every worker, and a restart, searches the same.

A restart (the same ``adl search`` again, or a worker started later) compares what it is
given with the folder's ``search.json`` and refuses a change that would make the study's
trials incomparable (another space, other data or training settings); the budget (trials,
hours) and the number of workers may change.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

from adl.runtime.errors import UserError

INSTALL = "adl search needs Optuna: pip install 'adl[search]' (or pip install optuna)"
OBJECTIVES = {  # name -> (direction, what it is)
    "bleu": ("maximize", "validation BLEU: the best validation of the trial"),
    "params": ("minimize", "parameters of the model (embeddings and output layer included)"),
    "speed": (
        "maximize",
        "greedy decoding speed, sentences/s as a ratio to the space's first program's, "
        "measured side by side (adl.runtime.cost)",
    ),
    "memory": ("minimize", "training peak memory in MiB (adl.runtime.cost)"),
}
PRUNERS = ("halving", "hyperband", "none")
SEARCH_FILE = "search.json"


class SearchError(UserError):
    """A search that cannot run as asked (the message says why)."""


def optuna_module() -> Any:
    """Optuna, or a :class:`SearchError` saying how to install it."""
    try:
        import optuna
    except ImportError:
        raise SearchError(INSTALL) from None
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    return optuna


@dataclass
class Spec:
    """A search's spaces and settings (what every trial shares)."""

    encoder: str  # the encoder space's text
    decoder: str  # the decoder space's text
    encoder_name: str = "enc.space.adl"  # where the texts came from (messages)
    decoder_name: str = "dec.space.adl"
    train: list[str] = field(default_factory=list)  # [SRC, TGT] files, or [PAIRS]
    valid: list[str] = field(default_factory=list)
    preset: str = "demo"
    sets: list[str] = field(default_factory=list)  # run settings over the preset (--set)
    objectives: list[str] = field(default_factory=lambda: ["bleu"])
    steps: int = 0  # updates of a trial at most (0: the preset's max_steps)
    valid_every: int = 0  # updates between validations, the pruner's rungs (0: the preset's)
    pruner: str = "halving"  # halving | hyperband | none
    seed: int = 1  # every trial's training seed
    sampler_seed: int = 0  # the sampler's
    cost_length: int = 32  # sentence length of the cost measurements
    study: str = "search"  # the study's name in the storage

    @classmethod
    def of(
        cls,
        encoder: str | os.PathLike[str],
        decoder: str | os.PathLike[str],
        **settings: Any,
    ) -> Spec:
        """A spec from two space files (a program is a space of one)."""
        texts = []
        for path in (Path(encoder), Path(decoder)):
            try:
                texts.append(path.read_text(encoding="utf-8"))
            except OSError as exc:
                raise SearchError(f"{path}: cannot read: {exc.strerror or exc}") from None
        spec = cls(texts[0], texts[1], str(encoder), str(decoder), **settings)
        spec.train = [os.path.abspath(p) for p in spec.train]
        spec.valid = [os.path.abspath(p) for p in spec.valid]
        return spec.checked()

    def checked(self) -> Spec:
        problems = [f"unknown objective '{o}'" for o in self.objectives if o not in OBJECTIVES]
        if not self.objectives or len(self.objectives) > 2:
            problems.append("give one objective, or two for a Pareto front")
        if len(set(self.objectives)) != len(self.objectives):
            problems.append("an objective is given twice")
        if "bleu" not in self.objectives:
            problems.append("the objectives must include bleu (the validation curve prunes)")
        if self.pruner not in PRUNERS:
            problems.append(f"--pruner is one of {', '.join(PRUNERS)}, not {self.pruner!r}")
        if not self.train or not self.valid:
            problems.append("a search needs training and validation data (--train, --valid)")
        if self.steps < 0 or self.valid_every < 0:
            problems.append("--steps and --valid-every are positive")
        if problems:
            raise SearchError("; ".join(problems))
        return self

    @property
    def directions(self) -> list[str]:
        return [OBJECTIVES[o][0] for o in self.objectives]

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Spec:
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in known})


def load(folder: Path) -> Spec:
    """The spec of a search folder."""
    path = folder / SEARCH_FILE
    try:
        return Spec.from_json(json.loads(path.read_text(encoding="utf-8")))
    except FileNotFoundError:
        raise SearchError(f"{folder}: not a search folder (no {SEARCH_FILE})") from None


def settle(spec: Spec | None, folder: Path) -> Spec:
    """The folder's spec: ``spec`` written there for a new search, or checked against the
    one there (a change is refused, naming what changed)."""
    path = folder / SEARCH_FILE
    if not path.is_file():
        if spec is None:
            raise SearchError(f"{folder}: not a search folder (no {SEARCH_FILE})")
        folder.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(spec.to_json(), indent=2) + "\n", encoding="utf-8")
        tmp.replace(path)
        return spec
    stored = load(folder)
    if spec is not None:
        changed = differences(stored, spec)
        if changed:
            raise SearchError(
                f"{folder} searches with other settings ({', '.join(changed)}): give the "
                "same ones to continue it, or another --out for a new search"
            )
    return stored


def differences(a: Spec, b: Spec) -> Sequence[str]:
    skip = {"encoder_name", "decoder_name"}
    return [
        f.name
        for f in fields(Spec)
        if f.name not in skip and getattr(a, f.name) != getattr(b, f.name)
    ]
