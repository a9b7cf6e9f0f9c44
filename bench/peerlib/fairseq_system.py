"""fairseq 0.12.3 in the peer benchmark: its command lines, each flag with its source.

Citations are to fairseq's repository (github.com/facebookresearch/fairseq, tag v0.12.3):
``configs.py`` is ``fairseq/dataclass/configs.py`` (flags and defaults), ``translation.md``
is ``examples/translation/README.md``, ``scaling_nmt.md`` is
``examples/scaling_nmt/README.md``, ``generator`` is ``fairseq/sequence_generator.py``.
"""

from __future__ import annotations

from pathlib import Path

from .base import LAUNCH, Own, Step, System, TrainStats, read_lines

SUBSET = {"valid": "valid", "sample": "valid1", "test": "test"}  # fairseq-preprocess' names


class Fairseq(System):
    name, label = "fairseq", "fairseq 0.12.3"

    @property
    def bin(self) -> Path:
        return self.out / "bin"

    @property
    def checkpoints(self) -> Path:
        return self.out / "checkpoints"

    def _tool(self, name: str) -> str:
        return str(Path(self.python).parent / f"fairseq-{name}")

    def prepare(self) -> list[Step]:
        d = self.data
        prefix = lambda split: str(d.pieces[split][0].with_suffix(""))
        argv = [self._tool("preprocess"), "--source-lang", "src", "--target-lang", "tgt"]
        argv += ["--trainpref", prefix("train")]
        # a second validation prefix becomes the subset valid1: the validation sample
        argv += ["--validpref", f"{prefix('valid')},{prefix('sample')}"]
        argv += ["--testpref", prefix("test"), "--destdir", str(self.bin)]
        argv += ["--joined-dictionary", "--workers", "1"]
        return [Step("prepare", argv)]

    def train(self, minutes: float) -> Step:
        r = self.recipe
        argv = [self.python, str(LAUNCH / "fairseq_train.py"), "--peer-stats"]
        argv += [str(self.stats_file), str(self.bin), "--task", "translation"]
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
        # batches filled like ADL's: at most max_tokens (sentences x longest side, with eos)
        # and not rounded down to a multiple of 8 sentences (configs.py
        # --required-batch-size-multiple, default 8)
        argv += ["--max-tokens", str(r.max_tokens), "--required-batch-size-multiple", "1"]
        # one data-loading worker beside the training, as ADL's prefetch thread
        # (configs.py --num-workers, default 1)
        argv += ["--num-workers", "1"]
        # every validation and test input fits the positions (configs.py
        # --max-source-positions/--max-target-positions count eos; default 1024)
        argv += self.positions()
        # validation as fairseq's default, the validation loss, every valid_every updates;
        # no --eval-bleu (translation.md's recipe decodes the whole validation set with a
        # beam of 5 at every validation): the BLEU of every checkpoint is measured after
        # the clock (selection.py)
        argv += ["--validate-interval-updates", str(r.valid_every)]
        # on the validation set only: the sample (subset valid1) is for fairseq-generate
        # (configs.py --ignore-unused-valid-subsets: "do not raise error if valid subsets
        # are ignored")
        argv += ["--ignore-unused-valid-subsets"]
        # a checkpoint every valid_every updates, all kept for averaging (configs.py
        # --keep-interval-updates, default -1: keep all; scaling_nmt.md: "average the last
        # few checkpoints"), none at an epoch's end
        argv += ["--save-interval-updates", str(r.valid_every), "--keep-interval-updates", "-1"]
        argv += ["--validate-interval", "1000000", "--save-interval", "1000000"]
        argv += ["--no-epoch-checkpoints", "--save-dir", str(self.checkpoints)]
        # checked after every update against the launcher's clock (fairseq_train.py)
        argv += ["--stop-time-hours", f"{minutes / 60:.6g}", "--seed", str(r.seed)]
        argv += ["--log-format", "json", "--log-interval", "50", "--no-progress-bar"]
        if self.cpu:
            argv += ["--cpu"]
        return Step("train", argv)

    def positions(self) -> list[str]:
        """``--max-source/target-positions`` (configs.py, with eos; default 1024): every
        validation and test input and its longest output (``Data.positions``), and on the
        target side every reference too, which fairseq-generate reads with its input. The
        sinusoidal positions have no weights, so the numbers cost training nothing."""
        source, target = self.data.positions(self.recipe)
        target = max(target, self.data.longest_target)
        return [
            "--max-source-positions",
            str(source + 1),
            "--max-target-positions",
            str(target + 1),
        ]

    def translate(self, model: str, beam: int, split: str, output: Path) -> Step:
        r = self.recipe
        argv = [self._tool("generate"), str(self.bin), "--gen-subset", SUBSET[split]]
        argv += ["--source-lang", "src", "--target-lang", "tgt"]
        argv += ["--path", str(self.checkpoints / model)]
        argv += ["--beam", str(beam), "--nbest", "1", "--max-tokens", "4096"]
        # fairseq-generate drops no test line for its reference's length: it fails on a pair
        # longer than the task's or the model's positions (fairseq_task.py
        # filter_indices_by_size; the task's default 1024), so both take the training's
        argv += self.positions()
        # at most len_a x source + len_b pieces (configs.py --max-len-a/--max-len-b, default
        # 0 and 200: at most 200 pieces). fairseq applies it per batch, to the batch's
        # longest source with eos (generator: src_tokens.size(1)), so len_b less the whole
        # part of len_a gives every sentence at least ADL's limit
        argv += ["--max-len-a", f"{r.len_a:g}", "--max-len-b", str(r.len_b - int(r.len_a))]
        # the length penalty is fairseq's default, score / length (--lenpen 1), as ADL's
        # fairseq 0.12.3 batches in multiples of 8 sentences by default, and then loses the
        # last sentence of the sorted set (its longest) when the count is not a multiple: 1
        argv += ["--required-batch-size-multiple", "1"]
        argv += ["--results-path", str(self.results(output))]
        if self.cpu:
            argv += ["--cpu"]
        # its own checkpoints hold argparse objects: torch 2.6+ refuses them by default
        env = {"TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD": "1"}
        return Step.translation(beam, argv, env)

    def checkpoint_path(self, name: str) -> Path:
        return self.checkpoints / name

    @staticmethod
    def results(output: Path) -> Path:
        """The folder fairseq-generate writes the translations of ``output`` to."""
        return Path(output).with_name(Path(output).name + ".fairseq")

    def average(self, models: list[str], output: str) -> Step:
        # the mean of the weights, as fairseq's scripts/average_checkpoints.py --inputs
        # (scaling_nmt.md); the script is not in the installable source (fairseq_average.py)
        argv = [self.python, str(LAUNCH / "fairseq_average.py"), "--inputs"]
        argv += [str(self.checkpoints / m) for m in models]
        return Step(f"average-{len(models)}", argv + ["--output", str(self.checkpoints / output)])

    def own_practice(self, stats: TrainStats) -> list[Own]:
        """fairseq's own practice: the average of the last 5 checkpoints (scaling_nmt.md:
        ``average_checkpoints.py --num-update-checkpoints 5``, the update checkpoints it
        saved, here by their recorded order), and ``checkpoint_best.pt``, the checkpoint of
        lowest validation loss, which fairseq-train keeps by default (configs.py
        --best-checkpoint-metric loss)."""
        last = [c.name for c in stats.checkpoints[-5:]]
        name = f"own-last{len(last)}.pt"
        step = self.average(last, name)
        step.name = "own-fairseq-average"
        return [
            Own("fairseq-last5", "average of the last 5 checkpoints", name, [step]),
            Own("fairseq-best", "checkpoint_best.pt (validation loss)", "checkpoint_best.pt"),
        ]

    def hypotheses(self, output: Path, split: str) -> list[str | None]:
        found: dict[int, str] = {}
        for line in read_lines(self.results(output) / f"generate-{SUBSET[split]}.txt"):
            if line.startswith("H-"):
                head, _score, *text = line.split("\t")
                found[int(head[2:])] = text[0] if text else ""
        ids = sorted(found)
        pieces = self.spm_decode([found[i] for i in ids])
        hyps: list[str | None] = [None] * int(self.data.counts[split])
        for i, h in zip(ids, pieces):
            hyps[i] = h
        return hyps
