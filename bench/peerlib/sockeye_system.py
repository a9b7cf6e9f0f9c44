"""Sockeye 3.1.34 in the peer benchmark: its command lines, each flag with its source.

Citations are to Sockeye 3.1.34's repository (github.com/awslabs/sockeye, tag 3.1.34):
``arguments.py`` is ``sockeye/arguments.py`` (flags and defaults), ``training.md`` is
``docs/training.md``, ``wmt_large.md`` is ``docs/tutorials/wmt_large.md``.
"""

from __future__ import annotations

import math
from pathlib import Path

from .base import LAUNCH, Own, Step, System, TrainStats, read_lines


class Sockeye(System):
    name, label = "sockeye", "Sockeye 3.1.34"

    @property
    def model(self) -> Path:
        return self.out / "model"

    def train(self, minutes: float) -> Step:
        r, d = self.recipe, self.data
        argv = [self.python, str(LAUNCH / "sockeye_train.py")]
        argv += ["--peer-stats", str(self.stats_file), "--peer-minutes", f"{minutes:g}"]
        argv += ["--source", str(d.pieces["train"][0]), "--target", str(d.pieces["train"][1])]
        argv += ["--validation-source", str(d.pieces["valid"][0])]
        argv += ["--validation-target", str(d.pieces["valid"][1])]
        argv += ["--output", str(self.model), "--overwrite-output"]
        # the recipe's Transformer: pre-norm blocks ('n' before, dropout + residual after)
        # and one tied vocabulary (arguments.py --transformer-preprocess/-postprocess,
        # --weight-tying-type)
        argv += ["--num-layers", f"{r.layers}:{r.layers}"]
        argv += ["--transformer-model-size", str(r.d_model), "--num-embed", str(r.d_model)]
        argv += ["--transformer-attention-heads", str(r.heads)]
        argv += ["--transformer-feed-forward-num-hidden", str(r.ffn)]
        argv += ["--transformer-preprocess", "n", "--transformer-postprocess", "dr"]
        argv += ["--shared-vocab", "--weight-tying-type", "src_trg_softmax"]
        p = f"{r.dropout:g}"
        argv += ["--embed-dropout", f"{p}:{p}", "--transformer-dropout-attention", p]
        argv += ["--transformer-dropout-act", p, "--transformer-dropout-prepost", p]
        # lengths: the pairs are ADL's (filtered once), at most max_len pieces a side;
        # --max-seq-len counts them "not counting BOS/EOS" (arguments.py). It also sets the
        # longest input translated whole (Sockeye splits a longer one: inference.py,
        # Translator._get_inference_input), but a word batch must cover the longest bucket
        # (data_io.py define_bucket_batch_sizes), so training for the longest validation or
        # test input would force a larger batch on long-input corpora: translation builds
        # the model for them instead (launch/sockeye_translate.py --peer-max-seq-len)
        argv += ["--max-seq-len", f"{r.max_len}:{r.max_len}"]
        # batches of about max_tokens real target words: Sockeye's default batch type
        # ("word: each batch contains approximately X target words", arguments.py
        # --batch-type, default word), without rounding the sentences to a multiple of 8
        # (--batch-sentences-multiple-of, default 8). ADL's max_tokens count padding and
        # the longer side, so Sockeye's batches hold at least as many target tokens as
        # ADL's (its max-word batches, padded to Sockeye's length buckets, held 20 % fewer)
        argv += ["--batch-type", "word", "--batch-size", str(r.max_tokens)]
        argv += ["--batch-sentences-multiple-of", "1"]
        argv += ["--optimizer", "adam", "--optimizer-betas", f"{r.betas[0]:g}:{r.betas[1]:g}"]
        argv += ["--optimizer-eps", f"{r.eps:g}"]
        # inv-sqrt-decay peaks at initial_lr / sqrt(warmup): recipe.sockeye_initial_lr
        argv += ["--learning-rate-scheduler-type", "inv-sqrt-decay"]
        argv += ["--initial-learning-rate", f"{r.sockeye_initial_lr:.10g}"]
        argv += ["--learning-rate-warmup", str(r.warmup)]
        argv += ["--label-smoothing", f"{r.label_smoothing:g}"]
        if r.clip_norm:
            argv += ["--gradient-clipping-type", "norm"]
            argv += ["--gradient-clipping-threshold", f"{r.clip_norm:g}"]
        else:
            argv += ["--gradient-clipping-type", "none"]
        # a checkpoint every valid_every updates, as ADL (arguments.py default 4000)
        argv += ["--checkpoint-interval", str(r.valid_every)]
        # validation as Sockeye's default: perplexity ("Perplexity is the default metric",
        # training.md; arguments.py --optimized-metric default perplexity), without its
        # checkpoint decoder (--decode-and-evaluate, default 500 sentences, decoded with a
        # beam of 5: checkpoint_decoder.py, DEFAULT_BEAM_SIZE), so that validating costs it
        # less than ADL's greedy sample costs ADL; the BLEU of every checkpoint is measured
        # after the clock (selection.py)
        argv += ["--optimized-metric", "perplexity", "--decode-and-evaluate", "0"]
        # every checkpoint kept, for averaging (arguments.py --keep-last-params, default -1:
        # keep all; training.md "Checkpoint averaging")
        argv += ["--keep-last-params", "-1"]
        # Sockeye wants a stopping criterion; the launcher stops it on the clock first
        argv += ["--max-seconds", str(math.ceil(60 * minutes) + 3600)]
        argv += ["--seed", str(r.seed), "--no-logfile"]
        if self.cpu:
            argv += ["--use-cpu"]
        return Step("train", argv)

    def translate(self, model: str, beam: int, split: str, output: Path) -> Step:
        r = self.recipe
        argv = [self.python, str(LAUNCH / "sockeye_translate.py")]
        argv += ["--peer-len-a", f"{r.len_a:g}", "--peer-len-b", str(r.len_b)]
        argv += ["--peer-params", str(self.model / model), "--models", str(self.model)]
        # every input whole, with room for its longest output (Data.positions), as ADL's and
        # fairseq's models translate theirs; Sockeye's configs count eos and bos
        source, target = self.data.positions(r)
        argv += ["--peer-max-seq-len", f"{source + 1}:{target + 1}"]
        argv += ["--input", str(self.data.pieces[split][0]), "--output", str(output)]
        # the length penalty is Sockeye's default, score / length (--length-penalty-alpha
        # 1.0, --length-penalty-beta 0.0), as ADL's and fairseq's
        argv += ["--beam-size", str(beam), "--batch-size", "32"]
        if self.cpu:
            argv += ["--use-cpu"]
        return Step.translation(beam, argv)

    def average(self, models: list[str], output: str) -> Step:
        # sockeye.average with several .params files averages them (arguments.py
        # add_average_args: "multiple .params files (manual checkpoint selection)";
        # training.md "Checkpoint averaging")
        argv = [self.python, "-m", "sockeye.average", *(str(self.model / m) for m in models)]
        return Step(f"average-{len(models)}", argv + ["--output", str(self.model / output)])

    def own_practice(self, stats: TrainStats) -> list[Own]:
        """Sockeye's own checkpoint averaging: ``sockeye-average`` over the model folder
        picks the 4 checkpoints of lowest validation perplexity from its ``metrics`` file
        (average.py find_checkpoints; arguments.py add_average_args: -n 4, --strategy
        best, --metric perplexity are its defaults, written out here; training.md
        "Checkpoint averaging")."""
        name = "own-best4-perplexity.params"
        argv = [self.python, "-m", "sockeye.average", str(self.model), "-n", "4"]
        argv += ["--strategy", "best", "--metric", "perplexity"]
        step = Step("own-sockeye-average", argv + ["--output", str(self.model / name)])
        label = "sockeye-average: the 4 best by validation perplexity"
        return [Own("sockeye-average", label, name, [step])]

    def hypotheses(self, output: Path, split: str) -> list[str | None]:
        return list(self.spm_decode(read_lines(output)))

    def checkpoint_path(self, name: str) -> Path:
        return self.model / name
