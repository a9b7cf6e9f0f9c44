"""What every system of the peer benchmark is: its data, its commands, what its runs leave.

A system is asked for command lines (``Step``), never run here, so that tests can read them:
``train`` (one process, stopped by the clock, writing a checkpoint every ``valid_every``
updates and ``stats.json`` through one of the launchers in ``launch/``), ``translate``
(greedy or beam search of a checkpoint, an average, or the chosen model) and ``average``
(the toolkit's own checkpoint averaging). ``selection.py`` and ``runs.py`` run them.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from .recipe import Recipe

HERE = Path(__file__).resolve().parent
LAUNCH = HERE / "launch"
ROOT = HERE.parent.parent


@dataclass
class Data:
    """The prepared corpus of one benchmark run (``prepare.py`` writes it)."""

    root: Path  # the benchmark's data folder
    spm: Path  # the joint sentencepiece model every system uses
    raw: dict[str, tuple[Path, Path]]  # split -> (source, target) text, as given
    pieces: dict[str, tuple[Path, Path]]  # split -> sentencepiece pieces (train filtered)
    counts: dict[str, float] = field(default_factory=dict)  # pairs per split, train dropped
    longest_source: int = 0  # pieces of the longest validation or test source
    longest_target: int = 0  # pieces of the longest validation or test reference

    def positions(self, recipe: Recipe) -> tuple[int, int]:
        """The source and target lengths every peer is built for: no validation or test
        input is cut or split, and no output limit (``len_a`` x source + ``len_b``) is
        capped by a model's positions."""
        source = max(recipe.max_len, self.longest_source)
        return source, max(recipe.max_len, int(recipe.len_a * source + recipe.len_b) + 1)


@dataclass
class Step:
    """One command of a system's job."""

    name: str  # train | average-K | valid-NAME | greedy | beam, also the log's name
    argv: list[str]
    env: dict[str, str] = field(default_factory=dict)  # added to the environment
    timeout: float | None = None  # seconds; the process is stopped after this

    @classmethod
    def translation(cls, beam: int, argv: list[str], env: dict[str, str] | None = None) -> Step:
        """A test-set translation: named ``greedy`` (beam 1) or ``beam``, as the job's
        outputs and logs are."""
        return cls("greedy" if beam == 1 else "beam", argv, env or {})


@dataclass(frozen=True)
class Checkpoint:
    """One checkpoint of a run, and where the clock and the data were when it was made."""

    update: int
    seconds: float  # from the start of the first update to the end of this checkpoint's
    tokens: int  # target tokens (with eos) trained on up to this update
    name: str  # what the system calls it (a file name, Sockeye's params.NNNNN)


@dataclass
class TrainStats:
    """What a launcher's ``stats.json`` says about a run."""

    updates: int
    tokens: int
    seconds: float  # of training: from the start of the first update to the end of the last
    checkpoints: list[Checkpoint]

    @classmethod
    def read(cls, path: Path) -> TrainStats:
        d = json.loads(Path(path).read_text(encoding="utf-8"))
        points = [Checkpoint(**c) for c in d.get("checkpoints", [])]
        return cls(int(d["updates"]), int(d["tokens"]), float(d["seconds"]), points)


@dataclass
class Own:
    """A peer's own practice for choosing its tested model, beside the common rule
    (``selection.py``): the steps that make the model (none: a file the training wrote)."""

    name: str  # the column's key: sockeye-average, fairseq-last5, fairseq-best
    label: str  # what the tables say
    model: str  # what ``translate`` is given
    steps: list[Step] = field(default_factory=list)


class System:
    """A toolkit's commands for the recipe. ``out`` is the run's folder; a model to translate
    is named by a checkpoint's name or an average's file name."""

    name = ""
    label = ""

    def __init__(self, recipe: Recipe, data: Data, out: Path, python: str, device: str):
        self.recipe, self.data, self.out = recipe, data, Path(out)
        self.python, self.device = python, device

    @property
    def cpu(self) -> bool:
        return not self.device.startswith("cuda")

    @property
    def stats_file(self) -> Path:
        return self.out / "stats.json"

    def prepare(self) -> list[Step]:
        return []

    def train(self, minutes: float) -> Step:
        raise NotImplementedError

    def translate(self, model: str, beam: int, split: str, output: Path) -> Step:
        """Translate ``split`` (``sample``: the validation sample; ``test``) into ``output``
        with ``model``, greedy (``beam`` 1) or with a beam, within the recipe's length limit."""
        raise NotImplementedError

    def search_args(self, beam: int, split: str, output: Path) -> list[str]:
        """The flags ADL's ``translate`` and the plain loop's share: the beam, the device, the
        recipe's length limit (``--len-a``, ``--len-b``), the split's raw text in, ``output``
        out."""
        r = self.recipe
        argv = ["--beam", str(beam), "--device", self.device]
        argv += ["--len-a", f"{r.len_a:g}", "--len-b", str(r.len_b)]
        return argv + ["--input", str(self.data.raw[split][0]), "--output", str(output)]

    def average(self, models: list[str], output: str) -> Step:
        """Average ``models`` (checkpoint names) into the file ``output`` (in ``out``)."""
        raise NotImplementedError

    def checkpoint_path(self, name: str) -> Path:
        """The file of a checkpoint or an average the system made."""
        raise NotImplementedError

    def own_practice(self, stats: TrainStats) -> list[Own]:
        """The toolkit's own ways of choosing the tested model (ADL's is the common rule)."""
        return []

    def hypotheses(self, output: Path, split: str) -> list[str | None]:
        """The translations ``translate`` wrote, detokenised, in order (None: left out)."""
        return list(read_lines(output))

    def stats(self) -> TrainStats:
        return TrainStats.read(self.stats_file)

    def spm_decode(self, lines: list[str]) -> list[str]:
        """Sentencepiece pieces (space-separated) back to text."""
        import sentencepiece as spm

        sp = spm.SentencePieceProcessor(model_file=str(self.data.spm))
        return [sp.decode_pieces(line.split()) for line in lines]


def read_lines(path: Path) -> list[str]:
    """The lines of a text file ([] when there is none)."""
    if not Path(path).is_file():
        return []
    lines = Path(path).read_text(encoding="utf-8").split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return lines
