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

from adl.runtime.config import Config, load_config
from adl.runtime.data.tokenizer import Tokenizers
from adl.runtime.decode.search import greedy
from adl.runtime.decode.translator import Translator, load_model
from adl.runtime.errors import CheckpointError, ConfigError, DataError, TrainingStopped, UserError
from adl.runtime.model.checkpoint import average_run, load_for_inference
from adl.runtime.run.configure import configure
from adl.runtime.rundir import RunDir
from adl.runtime.training.train import Summary, Trainer, train

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
    "Translator",
    "load_model",
    "train",
    "translate",
]


def translate(model, tokenizers, lines, *, beam: int = 1, device: str = "cpu", **options):
    """Translations of raw sentences, greedy unless ``beam``: a shortcut for
    ``Translator(model, tokenizers, device).translate(lines, beam=beam, **options)``."""
    if not lines:
        return []
    return Translator(model, tokenizers, device).translate(list(lines), beam=beam, **options)
