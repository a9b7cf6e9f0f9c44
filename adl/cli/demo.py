"""``adl demo``: the main job on the bundled default data (what ``make demo`` runs).

Fetch the English-French Bible corpus, train the Transformer of architectures/ with the demo
preset, translate the test set with beam search, print BLEU, chrF and sample translations,
and draw pictures.
"""

from __future__ import annotations

import argparse

from .common import add_bible_options, add_set_option

HELP = "fetch the default corpus, train the Transformer, score it"


def arguments(p: argparse.ArgumentParser) -> None:
    """The arguments of ``adl demo``."""
    p.add_argument("--out", default="runs/demo", help="run folder (default runs/demo)")
    p.add_argument("--data", default="data/bible", help="corpus folder (default data/bible)")
    add_bible_options(p, max_words=20)
    p.add_argument("--preset", default="demo", help="training preset (default demo)")
    add_set_option(p, "a setting over the preset, e.g. --set max_steps=200")
    p.add_argument(
        "--max-sentences",
        type=int,
        default=0,
        metavar="N",
        help="train and test on the first N sentence pairs only (a quick check)",
    )
    p.add_argument("--beam", type=int, default=4, help="beam size for the test set (default 4)")


def run(args: argparse.Namespace) -> int:
    from adl.runtime.run.demo import demo

    demo(
        args.out,
        args.data,
        args.pair,
        args.max_words,
        args.wheel,
        preset=args.preset,
        sets=tuple(args.sets),
        max_sentences=args.max_sentences,
        beam=args.beam,
    )
    return 0
