"""The systems of the peer benchmark: ADL and a plain PyTorch loop here, Sockeye 3 and
fairseq in their own modules, and ``make`` to get one by name.

Every system trains on the same pairs (one sentencepiece model, one length filter) with the
recipe of ``recipe.py``, in its own process with the same threads, on the benchmark's clock
(``launch/peerclock.py``), and translates within the same length limit. On the clock every
system validates only its loss (or perplexity) and keeps its checkpoints; after the clock
``selection.py`` translates, averages and scores them, with one rule and one sacrebleu call
for all, ADL included.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from adl.runtime.rundir import step_of

from .base import LAUNCH, ROOT, Data, Step, System
from .fairseq_system import Fairseq
from .recipe import ARCH, Recipe
from .sockeye_system import Sockeye

NO_LIMIT_STEPS = 100_000_000  # ADL needs a step limit; the minutes stop the run first
# On the clock ADL validates as the peers do: only its loss, every valid_every updates (the
# preset's greedy BLEU of the validation sample and its in-run averages cost ADL 1-7 % of its
# clock), and it keeps every checkpoint; selection.py chooses among them after the clock, by
# the recipe's rule.
VALIDATE_AS_PEERS = (
    "train.bleu=false",
    "train.best_metric=loss",
    "train.average_last=0",
    "train.keep_last=0",
)


class ADL(System):
    name, label = "adl", "ADL"

    @property
    def run(self) -> Path:
        return self.out / "run"

    def train(self, minutes: float) -> Step:
        r, d = self.recipe, self.data
        argv = [self.python, str(LAUNCH / "adl_train.py"), "--peer-stats", str(self.stats_file)]
        argv += [*(str(ROOT / f) for f in ARCH)]
        argv += ["--train-src", str(d.raw["train"][0]), "--train-tgt", str(d.raw["train"][1])]
        argv += ["--valid-src", str(d.raw["valid"][0]), "--valid-tgt", str(d.raw["valid"][1])]
        argv += ["--preset", r.preset, "--out", str(self.run)]
        sets = [
            *r.sets,
            *r.adl_sets(),  # the fields a recipe search changes, and the seed
            *VALIDATE_AS_PEERS,
            f"data.spm_model={d.spm}",
            f"train.max_minutes={minutes:g}",
            f"train.max_steps={NO_LIMIT_STEPS}",
            f"train.device={self.device}",
            "train.tensorboard=false",
        ]
        for item in sets:
            argv += ["--set", item]
        return Step("train", argv)

    def translate(self, model: str, beam: int, split: str, output: Path) -> Step:
        argv = [self.python, "-m", "adl", "translate", "--model", str(self.run)]
        argv += ["--checkpoint", model, *self.search_args(beam, split, output)]
        return Step.translation(beam, argv)

    def checkpoint_path(self, name: str) -> Path:
        return self.run / "checkpoints" / name

    def average(self, models: list[str], output: str) -> Step:
        """``adl average RUN --steps ...``: the step-N.pt files the launcher recorded."""
        steps = ",".join(str(step_of(m)) for m in models)
        argv = [self.python, "-m", "adl", "average", str(self.run), "--steps", steps]
        return Step(f"average-{len(models)}", argv + ["--out", str(self.checkpoint_path(output))])


class TorchLoop(System):
    name, label = "torch", "nn.Transformer loop"

    def _script(self, command: str) -> list[str]:
        return [self.python, str(LAUNCH / "torch_loop.py"), command]

    def train(self, minutes: float) -> Step:
        r, d = self.recipe, self.data
        argv = [*self._script("train"), "--out", str(self.out)]
        argv += ["--spm", str(d.spm), "--minutes", f"{minutes:g}", "--device", self.device]
        argv += ["--train", str(d.pieces["train"][0]), str(d.pieces["train"][1])]
        argv += ["--valid", str(d.raw["valid"][0]), str(d.raw["valid"][1])]
        argv += ["--recipe", json.dumps(r.to_dict())]
        return Step("train", argv)

    def translate(self, model: str, beam: int, split: str, output: Path) -> Step:
        argv = [*self._script("decode"), "--out", str(self.out), "--checkpoint", model]
        argv += ["--spm", str(self.data.spm), *self.search_args(beam, split, output)]
        return Step.translation(beam, argv)

    def checkpoint_path(self, name: str) -> Path:
        return self.out / "checkpoints" / name

    def average(self, models: list[str], output: str) -> Step:
        folder = self.out / "checkpoints"
        argv = [*self._script("average"), "--inputs", *(str(folder / m) for m in models)]
        return Step(f"average-{len(models)}", argv + ["--output", str(folder / output)])


SYSTEMS: dict[str, type[System]] = {s.name: s for s in (ADL, Sockeye, Fairseq, TorchLoop)}


def labels(names) -> dict[str, str]:
    """name -> the label a table shows, for each of ``names`` that is a system here."""
    return {n: SYSTEMS[n].label for n in names if n in SYSTEMS}


def make(
    name: str, recipe: Recipe, data: Data, out: Path, device: str, venv: Path | None = None
) -> System:
    """A system by name; peers run with their own virtualenv's python."""
    python = sys.executable if venv is None else str(venv / "bin" / "python")
    return SYSTEMS[name](recipe, data, out, python, device)
