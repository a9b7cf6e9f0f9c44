"""The ADL runtime: trains, decodes and scores the models ``adl.build`` compiles.

    from adl import runtime
    config = runtime.configure(["enc.adl", "dec.adl"], preset="tiny",
                               train=("data/train.en", "data/train.de"),
                               valid=("data/valid.en", "data/valid.de"))
    summary = runtime.train(config, "runs/tiny")
    model, tokenizers = runtime.load_for_inference("runs/tiny", "best")
    runtime.translate(model, tokenizers, ["a sentence"])

It uses only adl's public API. ``adl train`` and ``adl average`` are thin layers over it.
"""

from .checkpoint import average_run, load_for_inference
from .config import Config, load_config
from .configure import configure
from .errors import CheckpointError, ConfigError, DataError, TrainingStopped, UserError
from .rundir import RunDir
from .search import greedy, translate
from .tokenizer import Tokenizers
from .train import Summary, Trainer, train

__all__ = [
    "CheckpointError",
    "Config",
    "ConfigError",
    "DataError",
    "RunDir",
    "Summary",
    "Tokenizers",
    "Trainer",
    "TrainingStopped",
    "UserError",
    "average_run",
    "configure",
    "greedy",
    "load_config",
    "load_for_inference",
    "train",
    "translate",
]
