"""The cost of validation as a share of a run, with BLEU on the whole validation set (the old
default) and on the fixed sample of ``train.valid_bleu_sentences`` (the new one).

    python bench/validation_cost.py --preset demo --train data/bible/train \\
        --valid data/bible/valid --langs en fr [--steps 20] [--warm 0] [--set KEY=VALUE ...]

One process, in this order: the preset's Trainer on the data, ``--warm`` updates (0 leaves
the model untrained: its greedy translations run to the length limit, the worst case for
decoding), then a validation decoding every sentence, ``--steps`` timed updates, and a
validation decoding the sample, so that a busy machine slows each part alike. Printed: the
mean update time, each validation's time, and the share of a run each would take at the
preset's ``train.valid_every``: validation / (validation + valid_every x update).
"""

from __future__ import annotations

import argparse
import tempfile
import time

from adl import runtime


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--preset", default="demo")
    p.add_argument(
        "--files", nargs="+", default=None, help="the .adl files (default: the preset's)"
    )
    p.add_argument("--train", required=True)
    p.add_argument("--valid", required=True)
    p.add_argument("--langs", nargs=2, default=None)
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--warm", type=int, default=0)
    p.add_argument("--set", action="append", default=[], dest="sets")
    args = p.parse_args()

    from adl.runtime.config import preset_files
    from adl.runtime.run.configure import data_files

    files = args.files or sorted(
        (str(f) for f in preset_files(args.preset)), key=lambda f: not f.endswith(".enc.adl")
    )
    if len(files) != 2:
        p.error(f"the preset names {len(files)} files: give the model with --files")
    config = runtime.configure(
        files,
        preset=args.preset,
        sets=args.sets,
        train=data_files(args.train, args.langs, None, None, "train"),
        valid=data_files(args.valid, args.langs, None, None, "valid"),
    )
    t = config.train
    with tempfile.TemporaryDirectory() as tmp:
        trainer = runtime.Trainer(config, f"{tmp}/run")
        try:
            for _ in range(args.warm):
                trainer._update([next(trainer.state.stream) for _ in range(t.accumulate)])
            n = len(trainer.state.valid_data)

            def validation(sentences: int) -> float:
                t.valid_bleu_sentences = sentences
                started = time.monotonic()
                trainer.validate()
                return time.monotonic() - started

            whole = validation(0)
            started = time.monotonic()
            for _ in range(args.steps):
                trainer._update([next(trainer.state.stream) for _ in range(t.accumulate)])
            step = (time.monotonic() - started) / args.steps
            k = runtime.load_config(args.preset).train.valid_bleu_sentences
            sample = validation(k)
        finally:
            trainer.close()
    share = lambda v: v / (v + t.valid_every * step)
    print(
        f"preset {args.preset}: {n:,} validation pairs, valid_every {t.valid_every}, "
        f"{args.warm} warm-up updates"
    )
    print(f"update: {step:.3f}s (mean of {args.steps})")
    print(f"validation, BLEU on all {n:,}: {whole:.2f}s = {100 * share(whole):.1f} % of a run")
    print(
        f"validation, BLEU on {min(k, n) if k else n:,} (train.valid_bleu_sentences={k}): "
        f"{sample:.2f}s = {100 * share(sample):.1f} % of a run"
    )
    print(f"ratio sample / all: {sample / whole:.2f}")


if __name__ == "__main__":
    main()
