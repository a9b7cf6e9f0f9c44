"""The systems of the peer benchmark: their command lines, and what their runs leave behind.

Every system trains on the same pairs (one sentencepiece model, one length filter) with the
recipe of ``recipe.py``, in its own process with the same threads, then translates the
test set from its best checkpoint, greedy and with a beam. The command lines are built
here, without running anything, so that tests can read them.
"""

from __future__ import annotations

import json
import math
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

from .recipe import ARCH, Recipe

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
NO_LIMIT_STEPS = 100_000_000  # ADL needs a step limit; the minutes stop the run first


@dataclass
class Data:
    """The prepared corpus of one benchmark run (``prepare.py`` writes it)."""

    root: Path  # the benchmark's data folder
    spm: Path  # the joint sentencepiece model every system uses
    raw: dict[str, tuple[Path, Path]]  # split -> (source, target) text, as given
    pieces: dict[str, tuple[Path, Path]]  # split -> sentencepiece pieces (train filtered)
    test_size: int = 0  # sentences of the split decoded (test, or valid with --split valid)
    counts: dict[str, int] = field(default_factory=dict)  # pairs per split, train dropped


@dataclass
class Step:
    """One command of a system's job."""

    name: str  # prepare | train | greedy | beam
    argv: list[str]
    env: dict[str, str] = field(default_factory=dict)  # added to the environment
    timeout: float | None = None  # seconds; the process is stopped after this


class System:
    name = ""
    label = ""
    split = "test"  # the split decoded after training ("valid" when tuning a recipe)

    def __init__(self, recipe: Recipe, data: Data, out: Path, python: str, device: str):
        self.recipe, self.data, self.out, self.python, self.device = (
            recipe,
            data,
            Path(out),
            python,
            device,
        )

    @property
    def cpu(self) -> bool:
        return not self.device.startswith("cuda")

    def prepare(self) -> list[Step]:
        return []

    def train(self, minutes: float) -> Step:
        raise NotImplementedError

    def decode(self, beam: int) -> Step:
        raise NotImplementedError

    def hypotheses(self, beam: int) -> list[str | None]:
        """The test translations in order; None where the system left a sentence out."""
        raise NotImplementedError

    def stats(self) -> dict:
        """updates, target tokens seen, training seconds, best update (what is known)."""
        raise NotImplementedError

    def hyp_file(self, beam: int) -> Path:
        return self.out / f"{self.split}.beam{beam}.hyp"

    # shared helpers
    def _decode_pieces(self, lines: list[str]) -> list[str]:
        import sentencepiece as spm

        sp = spm.SentencePieceProcessor(model_file=str(self.data.spm))
        return [sp.decode_pieces(line.split()) for line in lines]


# --- ADL -------------------------------------------------------------------------------


class ADL(System):
    name, label = "adl", "ADL"

    def train(self, minutes: float) -> Step:
        r, d = self.recipe, self.data
        argv = [self.python, "-m", "adl", "train", *(str(ROOT / f) for f in ARCH)]
        argv += ["--train-src", str(d.raw["train"][0]), "--train-tgt", str(d.raw["train"][1])]
        argv += ["--valid-src", str(d.raw["valid"][0]), "--valid-tgt", str(d.raw["valid"][1])]
        argv += ["--preset", r.preset, "--out", str(self.out / "run")]
        sets = [
            *r.sets,
            f"data.spm_model={d.spm}",
            f"train.max_minutes={minutes:g}",
            f"train.max_steps={NO_LIMIT_STEPS}",
            f"train.device={self.device}",
            "train.tensorboard=false",
        ]
        for item in sets:
            argv += ["--set", item]
        return Step("train", argv)

    def decode(self, beam: int) -> Step:
        argv = [self.python, "-m", "adl", "translate", "--model", str(self.out / "run")]
        argv += ["--checkpoint", "best", "--beam", str(beam), "--device", self.device]
        argv += ["--input", str(self.data.raw[self.split][0]), "--output", str(self.hyp_file(beam))]
        return Step("beam" if beam > 1 else "greedy", argv)

    def hypotheses(self, beam: int) -> list[str | None]:
        return list(read_lines(self.hyp_file(beam)))

    def stats(self) -> dict:
        return adl_stats(self.out / "run")


def adl_stats(run: Path) -> dict:
    """Updates and target tokens of an ADL run: the tokens are counted by replaying the
    run's own batch order (deterministic in its seed) over its filtered training data."""
    import torch
    import yaml

    from adl.runtime.batching import BatchStream
    from adl.runtime.config import from_dict
    from adl.runtime.data import encode_pairs, read_parallel
    from adl.runtime.tokenizer import Tokenizers

    last = torch.load(run / "checkpoints" / "last.pt", map_location="cpu", weights_only=True)
    steps = int(last["step"])
    cfg = from_dict(yaml.safe_load((run / "config.yaml").read_text(encoding="utf-8")))
    tok = Tokenizers.load(run / "tokenizer")
    text = read_parallel(cfg.data.train_src, cfg.data.train_tgt)
    data = encode_pairs(text, tok.encode_src, tok.encode_tgt, cfg.data.max_len, cfg.data.max_ratio)
    stream = BatchStream(data, cfg.train.max_tokens, cfg.train.max_sentences, cfg.train.seed)
    tokens, left, epoch = 0, steps * cfg.train.accumulate, 1
    lengths = data.tgt.lengths + 1  # with eos, as the loss counts them
    while left > 0:
        batches = stream.batches(epoch)[:left]
        tokens += sum(int(lengths[b].sum()) for b in batches)
        left -= len(batches)
        epoch += 1
    trainer = last["trainer"]
    best: int | str | None = trainer.get("best_step")
    averaged = torch.load(
        run / "checkpoints" / "best.pt", map_location="cpu", weights_only=True
    ).get("averaged_steps")
    if averaged:  # train.average_last made best.pt the average of these steps
        best = f"avg {averaged[0]:,}–{averaged[-1]:,}"
    seconds = None
    log = run / "train.log"
    if log.is_file():
        found = re.findall(r"done \(.*?\) at step [\d,]+ in ([\d:hms. ]+)", log.read_text())
        seconds = found[-1].strip() if found else None
    return {
        "updates": steps,
        "tokens": tokens,
        "best_update": best,
        "epochs": float(last.get("epoch", 0.0)),
        "train_time": seconds,
        "pairs": data.stats.kept,
        "dropped": data.stats.too_long + data.stats.bad_ratio,
    }


# --- Sockeye 3 -------------------------------------------------------------------------


class Sockeye(System):
    name, label = "sockeye", "Sockeye 3.1.34"

    def train(self, minutes: float) -> Step:
        r, d = self.recipe, self.data
        argv = [self.python, str(HERE / "sockeye_train.py")]
        argv += ["--peer-stats", str(self.out / "stats.json"), "--peer-minutes", f"{minutes:g}"]
        argv += ["--source", str(d.pieces["train"][0]), "--target", str(d.pieces["train"][1])]
        argv += ["--validation-source", str(d.pieces["valid"][0])]
        argv += ["--validation-target", str(d.pieces["valid"][1])]
        argv += ["--output", str(self.out / "model"), "--overwrite-output"]
        # sizes: 2+2 pre-norm blocks ('n' before, dropout+residual after), tied vocabulary
        argv += ["--num-layers", f"{r.layers}:{r.layers}"]
        argv += ["--transformer-model-size", str(r.d_model), "--num-embed", str(r.d_model)]
        argv += ["--transformer-attention-heads", str(r.heads)]
        argv += ["--transformer-feed-forward-num-hidden", str(r.ffn)]
        argv += ["--transformer-preprocess", "n", "--transformer-postprocess", "dr"]
        argv += ["--shared-vocab", "--weight-tying-type", "src_trg_softmax"]
        p = f"{r.dropout:g}"
        argv += ["--embed-dropout", f"{p}:{p}", "--transformer-dropout-attention", p]
        argv += ["--transformer-dropout-act", p, "--transformer-dropout-prepost", p]
        # the same pairs as ADL (pre-filtered); the limit also sets Sockeye's positions
        longest = r.max_len or 1024
        argv += ["--max-seq-len", f"{longest}:{longest}"]
        argv += ["--batch-type", "word", "--batch-size", str(r.max_tokens)]
        argv += ["--optimizer", "adam", "--optimizer-betas", f"{r.betas[0]:g}:{r.betas[1]:g}"]
        argv += ["--optimizer-eps", f"{r.eps:g}"]
        argv += ["--learning-rate-scheduler-type", "inv-sqrt-decay"]
        argv += ["--initial-learning-rate", f"{r.sockeye_initial_lr:.10g}"]
        argv += ["--learning-rate-warmup", str(r.warmup)]
        argv += ["--label-smoothing", f"{r.label_smoothing:g}"]
        if r.clip_norm:
            argv += ["--gradient-clipping-type", "norm"]
            argv += ["--gradient-clipping-threshold", f"{r.clip_norm:g}"]
        else:
            argv += ["--gradient-clipping-type", "none"]
        argv += ["--checkpoint-interval", str(r.valid_every)]
        metric = {"ppl": "perplexity", "loss": "perplexity", "acc": "accuracy"}.get(
            r.best_metric, r.best_metric
        )
        argv += ["--optimized-metric", metric]
        argv += ["--decode-and-evaluate", "-1" if r.decodes_validation else "0"]
        # Sockeye wants a stopping criterion of its own; sockeye_train.py stops at the minute
        argv += ["--max-seconds", str(math.ceil(60 * minutes))]
        argv += ["--keep-last-params", "2", "--seed", str(r.seed), "--no-logfile"]
        if self.cpu:
            argv += ["--use-cpu"]
        return Step("train", argv)

    def decode(self, beam: int) -> Step:
        argv = [self.python, "-m", "sockeye.translate", "--models", str(self.out / "model")]
        argv += ["--input", str(self.data.pieces[self.split][0])]
        argv += ["--output", str(self.hyp_file(beam).with_suffix(".pieces"))]
        argv += ["--beam-size", str(beam), "--batch-size", "32"]
        if self.cpu:
            argv += ["--use-cpu"]
        return Step("beam" if beam > 1 else "greedy", argv)

    def hypotheses(self, beam: int) -> list[str | None]:
        return self._decode_pieces(list(read_lines(self.hyp_file(beam).with_suffix(".pieces"))))

    def stats(self) -> dict:
        stats = json.loads((self.out / "stats.json").read_text())
        best = None
        link = self.out / "model" / "params.best"
        if link.exists():  # params.best -> params.00012: checkpoint 12
            number = str(int(link.resolve().name.split(".")[-1]))
            best = stats.get("checkpoints", {}).get(number)
        return {
            "updates": stats["updates"],
            "tokens": stats["tokens"],
            "best_update": best,
            "train_time": stats.get("train_time"),
        }


# --- fairseq ---------------------------------------------------------------------------


class Fairseq(System):
    name, label = "fairseq", "fairseq 0.12.3"

    @property
    def bin(self) -> Path:
        return self.out / "bin"

    def _tool(self, name: str) -> str:
        return str(Path(self.python).parent / f"fairseq-{name}")

    def prepare(self) -> list[Step]:
        d = self.data
        prefix = lambda split: str(d.pieces[split][0].with_suffix(""))
        argv = [self._tool("preprocess"), "--source-lang", "src", "--target-lang", "tgt"]
        argv += ["--trainpref", prefix("train"), "--validpref", prefix("valid")]
        argv += ["--testpref", prefix("test"), "--destdir", str(self.bin)]
        argv += ["--joined-dictionary", "--workers", "1"]
        return [Step("prepare", argv)]

    def train(self, minutes: float) -> Step:
        r = self.recipe
        argv = [self._tool("train"), str(self.bin), "--task", "translation"]
        argv += ["--source-lang", "src", "--target-lang", "tgt", "--arch", "transformer"]
        for side in ("encoder", "decoder"):
            argv += [f"--{side}-layers", str(r.layers), f"--{side}-embed-dim", str(r.d_model)]
            argv += [f"--{side}-ffn-embed-dim", str(r.ffn)]
            argv += [f"--{side}-attention-heads", str(r.heads), f"--{side}-normalize-before"]
        argv += ["--share-all-embeddings"]
        p = f"{r.dropout:g}"
        argv += ["--dropout", p, "--attention-dropout", p, "--activation-dropout", p]
        argv += ["--optimizer", "adam", "--adam-betas", f"({r.betas[0]:g}, {r.betas[1]:g})"]
        argv += ["--adam-eps", f"{r.eps:g}", "--lr", f"{r.lr:g}"]
        argv += ["--lr-scheduler", "inverse_sqrt", "--warmup-updates", str(r.warmup)]
        argv += ["--warmup-init-lr", "0", "--clip-norm", f"{r.clip_norm:g}"]
        argv += ["--criterion", "label_smoothed_cross_entropy"]
        argv += ["--label-smoothing", f"{r.label_smoothing:g}"]
        argv += ["--max-tokens", str(r.max_tokens), "--seed", str(r.seed)]
        # validate and save every valid_every updates only (not at each epoch's end too)
        argv += ["--validate-interval-updates", str(r.valid_every)]
        argv += ["--save-interval-updates", str(r.valid_every), "--keep-interval-updates", "1"]
        argv += ["--validate-interval", "1000000", "--save-interval", "1000000"]
        argv += ["--no-epoch-checkpoints", "--save-dir", str(self.out / "checkpoints")]
        if r.decodes_validation:
            argv += ["--eval-bleu", "--eval-bleu-args", '{"beam": 1}']
            argv += ["--eval-bleu-remove-bpe", "sentencepiece"]
            argv += ["--best-checkpoint-metric", "bleu", "--maximize-best-checkpoint-metric"]
        elif r.best_metric == "acc":
            raise ValueError("fairseq has no validation accuracy: choose another best_metric")
        argv += ["--stop-time-hours", f"{minutes / 60:.6g}"]
        argv += ["--num-workers", "0", "--log-format", "json", "--log-interval", "50"]
        argv += ["--no-progress-bar"]
        if self.cpu:
            argv += ["--cpu"]
        return Step("train", argv)

    def decode(self, beam: int) -> Step:
        argv = [self._tool("generate"), str(self.bin), "--gen-subset", self.split]
        argv += ["--source-lang", "src", "--target-lang", "tgt"]
        argv += ["--path", str(self.out / "checkpoints" / "checkpoint_best.pt")]
        argv += ["--beam", str(beam), "--nbest", "1", "--max-tokens", "4096"]
        # fairseq 0.12.3 batches in multiples of 8 sentences by default, and then loses the
        # last sentence of the sorted set (its longest) when the count is not a multiple: 1
        argv += ["--required-batch-size-multiple", "1"]
        argv += ["--num-workers", "0", "--results-path", str(self.out / f"generate.beam{beam}")]
        if self.cpu:
            argv += ["--cpu"]
        # its own checkpoints hold argparse objects: torch 2.6+ refuses them by default
        env = {"TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD": "1"}
        return Step("beam" if beam > 1 else "greedy", argv, env)

    def hypotheses(self, beam: int) -> list[str | None]:
        out = self.out / f"generate.beam{beam}" / f"generate-{self.split}.txt"
        found: dict[int, str] = {}
        for line in read_lines(out):
            if line.startswith("H-"):
                head, _score, *text = line.split("\t")
                found[int(head[2:])] = text[0] if text else ""
        ids = sorted(found)
        pieces = self._decode_pieces([found[i] for i in ids])
        hyps: list[str | None] = [None] * self.data.counts.get(self.split, self.data.test_size)
        for i, h in zip(ids, pieces):
            hyps[i] = h
        return hyps

    def stats(self) -> dict:
        """From its JSON log: the epoch summaries' mean target tokens per update x updates."""
        updates = tokens = 0
        best = seconds = best_value = None
        for line in read_lines(self.out / "train.log"):
            start = line.find("{")
            if start < 0:
                continue
            try:
                rec = json.loads(line[start:])
            except json.JSONDecodeError:
                continue
            if "train_wpb" in rec and "train_num_updates" in rec:
                done = int(float(rec["train_num_updates"]))
                tokens += round(float(rec["train_wpb"]) * (done - updates))
                updates = done
                seconds = float(rec.get("train_train_wall", 0.0))
            key = "valid_bleu" if self.recipe.decodes_validation else "valid_loss"
            if key in rec and "valid_num_updates" in rec:
                # fairseq keeps the checkpoint whose metric is at least as good as the best
                # so far (ties go to the later one): the same rule here
                value = float(rec[key]) * (1 if key == "valid_bleu" else -1)
                if best_value is None or value >= best_value:
                    best_value, best = value, int(float(rec["valid_num_updates"]))
        return {"updates": updates, "tokens": tokens, "best_update": best, "train_time": seconds}


# --- a plain PyTorch loop ----------------------------------------------------------------


class TorchLoop(System):
    name, label = "torch", "nn.Transformer loop"

    def train(self, minutes: float) -> Step:
        r, d = self.recipe, self.data
        argv = [self.python, str(HERE / "torch_loop.py"), "train", "--out", str(self.out)]
        argv += ["--spm", str(d.spm), "--minutes", f"{minutes:g}", "--device", self.device]
        argv += ["--train", str(d.pieces["train"][0]), str(d.pieces["train"][1])]
        argv += ["--valid", str(d.raw["valid"][0]), str(d.raw["valid"][1])]
        argv += ["--recipe", json.dumps(r.to_dict())]
        return Step("train", argv)

    def decode(self, beam: int) -> Step:
        argv = [self.python, str(HERE / "torch_loop.py"), "decode", "--out", str(self.out)]
        argv += ["--spm", str(self.data.spm), "--device", self.device, "--beam", str(beam)]
        argv += ["--input", str(self.data.raw[self.split][0]), "--output", str(self.hyp_file(beam))]
        return Step("beam" if beam > 1 else "greedy", argv)

    def hypotheses(self, beam: int) -> list[str | None]:
        return list(read_lines(self.hyp_file(beam)))

    def stats(self) -> dict:
        return json.loads((self.out / "stats.json").read_text())


SYSTEMS: dict[str, type[System]] = {s.name: s for s in (ADL, Sockeye, Fairseq, TorchLoop)}


def read_lines(path: Path):
    if not Path(path).is_file():
        return []
    text = Path(path).read_text(encoding="utf-8")
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return lines


def make(
    name: str,
    recipe: Recipe,
    data: Data,
    out: Path,
    device: str,
    venv: Path | None = None,
    split: str = "test",
) -> System:
    """A system by name; peers run with their own virtualenv's python."""
    cls = SYSTEMS[name]
    python = sys.executable if venv is None else str(venv / "bin" / "python")
    system = cls(recipe, data, out, python, device)
    system.split = split
    return system
