"""``adl score``: forced-decoding scores of given translations, and contrastive accuracy.

Print, for each source/target pair, the model's log-probability of the target (summed over
its pieces and the final eos) and that sum per piece, tab-separated; a summary goes to
standard error. Pairs come from --src and --tgt, or as 'source<TAB>target' lines from
--input or standard input. With --contrastive, read a contrastive set (JSON lines with
source, reference and variants, or TSV source<TAB>reference<TAB>variant...) and print the
accuracy: the share of (reference, variant) decisions where the reference scores higher.
"""

from __future__ import annotations

import argparse
import sys

from .common import UsageError
from .translate import _open_output, add_model_choice, load_translator

HELP = "score given translations with a trained run (forced decoding)"


def arguments(p: argparse.ArgumentParser) -> None:
    """The arguments of ``adl score``."""
    add_model_choice(p)
    p.add_argument("--src", metavar="FILE", help="source sentences, one per line")
    p.add_argument("--tgt", metavar="FILE", help="their translations, one per line")
    p.add_argument(
        "--input", metavar="FILE", help="TSV pairs or a contrastive set (default: standard input)"
    )
    p.add_argument("--output", metavar="FILE", help="default: standard output")
    p.add_argument(
        "--contrastive", action="store_true", help="read a contrastive set, print accuracy"
    )
    p.add_argument(
        "--batch-size", type=int, default=64, metavar="PAIRS", help="pairs per batch (64)"
    )


def _read_input(args: argparse.Namespace) -> tuple[list[str], str]:
    from adl.runtime.errors import DataError

    if args.input is None:
        return sys.stdin.read().splitlines(), "<stdin>"
    try:
        with open(args.input, encoding="utf-8") as f:
            return f.read().splitlines(), args.input
    except OSError as exc:
        raise DataError(f"{args.input}: cannot read: {exc.strerror}") from None


def run(args: argparse.Namespace) -> int:
    from adl.runtime.data.lines import read_lines
    from adl.runtime.decode import forced

    if args.batch_size < 1:
        raise UsageError("--batch-size must be at least 1")
    if (args.src is None) != (args.tgt is None):
        raise UsageError("give --src and --tgt together (or TSV pairs through --input)")
    if args.src is not None and (args.input is not None or args.contrastive):
        raise UsageError("--src/--tgt are pairs to score: not with --input or --contrastive")
    if args.src is not None:
        sources = read_lines(args.src, allow_empty=True)
        targets = read_lines(args.tgt, allow_empty=True)
        if len(sources) != len(targets):
            raise UsageError(f"--src has {len(sources):,} lines but --tgt {len(targets):,}")
        lines, name = None, args.src
    else:
        lines, name = _read_input(args)
    translator = load_translator(args)
    out = sys.stdout if args.output is None else _open_output(args.output)
    try:
        if args.contrastive:
            assert lines is not None
            result = forced.contrastive(
                translator, forced.read_contrastive(lines, name), args.batch_size
            )
            out.write(
                f"accuracy {result.accuracy:.4f} ({result.right:,} of {result.decisions:,} "
                f"decisions); items with every variant beaten {result.item_accuracy:.4f} "
                f"({result.items_right:,} of {result.items:,})\n"
            )
            return 0
        if lines is not None:
            sources, targets = forced.read_tsv_pairs(lines, name)
        scored = forced.score_pairs(translator, sources, targets, args.batch_size)
        for s in scored:
            out.write(f"{s.total:.4f}\t{s.per_token:.4f}\n")
    finally:
        if out is not sys.stdout:
            out.close()
    total = sum(s.total for s in scored)
    pieces = sum(s.pieces for s in scored)
    print(
        f"adl score: {len(scored):,} pairs, log-probability {total:.4f}, "
        f"{total / max(pieces, 1):.4f} per piece ({pieces:,} pieces)",
        file=sys.stderr,
    )
    return 0
