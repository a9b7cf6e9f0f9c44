"""The ADL runtime: trains, decodes and scores the models ``adl.build`` compiles.

    from adl import runtime
    config = runtime.configure(["enc.adl", "dec.adl"], preset="tiny",
                               train=("data/train.en", "data/train.de"),
                               valid=("data/valid.en", "data/valid.de"))
    summary = runtime.train(config, "runs/tiny")
    model, tokenizers = runtime.load_for_inference("runs/tiny", "best")
    runtime.translate(model, tokenizers, ["a sentence"])

It uses only adl's public API. ``adl train`` and ``adl average`` are thin layers over it.

The names below are loaded on first use, so that importing a light module of the runtime
(``adl.runtime.config``, ``adl.runtime.search_options``: what ``adl --help`` reads) does not
load torch and the rooms.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from adl.runtime.config import Config, load_config
    from adl.runtime.data.tokenizer import Tokenizers
    from adl.runtime.decode.search import greedy
    from adl.runtime.decode.translator import Translator, load_model
    from adl.runtime.errors import (
        CheckpointError,
        ConfigError,
        DataError,
        TrainingStopped,
        UserError,
    )
    from adl.runtime.model.checkpoint import average_run, load_for_inference
    from adl.runtime.run.configure import configure
    from adl.runtime.rundir import RunDir
    from adl.runtime.search_options import SearchOptions
    from adl.runtime.training.train import Summary, Trainer, train

# name -> the module it comes from
_HOMES = {
    "Config": "adl.runtime.config",
    "load_config": "adl.runtime.config",
    "Tokenizers": "adl.runtime.data.tokenizer",
    "greedy": "adl.runtime.decode.search",
    "Translator": "adl.runtime.decode.translator",
    "load_model": "adl.runtime.decode.translator",
    "CheckpointError": "adl.runtime.errors",
    "ConfigError": "adl.runtime.errors",
    "DataError": "adl.runtime.errors",
    "TrainingStopped": "adl.runtime.errors",
    "UserError": "adl.runtime.errors",
    "average_run": "adl.runtime.model.checkpoint",
    "load_for_inference": "adl.runtime.model.checkpoint",
    "configure": "adl.runtime.run.configure",
    "RunDir": "adl.runtime.rundir",
    "SearchOptions": "adl.runtime.search_options",
    "Summary": "adl.runtime.training.train",
    "Trainer": "adl.runtime.training.train",
    "train": "adl.runtime.training.train",
}

__all__ = [
    "CheckpointError",
    "Config",
    "ConfigError",
    "DataError",
    "RunDir",
    "SearchOptions",
    "Summary",
    "Tokenizers",
    "Trainer",
    "TrainingStopped",
    "Translator",
    "UserError",
    "average_run",
    "configure",
    "greedy",
    "load_config",
    "load_for_inference",
    "load_model",
    "train",
    "translate",
]


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'adl.runtime' has no attribute {name!r}")
    value = getattr(importlib.import_module(home), name)
    globals()[name] = value  # loaded once
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_HOMES})


def translate(model, tokenizers, lines, *, device: str = "cpu", **options):
    """Translations of raw sentences with the search options given (``beam=1``: greedy;
    the others as :class:`SearchOptions` has them): a shortcut for
    ``Translator(model, tokenizers, device).translate(lines, **options)``."""
    from adl.runtime.decode.translator import Translator

    if not lines:
        return []
    return Translator(model, tokenizers, device).translate(list(lines), **options)
