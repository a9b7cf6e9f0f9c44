"""``adl eval``: BLEU and chrF with sacrebleu, of a run's translations or of a file.

Translate --src with --model and score it against --ref, or score an existing --hyp file
against --ref.
"""

from __future__ import annotations

import argparse

from .common import UsageError
from .translate import (
    _translate_stream,
    _write,
    add_search_options,
    load_translator,
    search_options,
)

HELP = "BLEU and chrF (sacrebleu) of a run or of a hypothesis file"


def arguments(p: argparse.ArgumentParser) -> None:
    """The arguments of ``adl eval``."""
    p.add_argument("--ref", required=True, metavar="FILE", help="references, one per line")
    p.add_argument("--hyp", metavar="FILE", help="translations to score (instead of --model)")
    p.add_argument("--src", metavar="FILE", help="source sentences to translate with --model")
    p.add_argument("--output", metavar="FILE", help="also write the translations here")
    add_search_options(p)
    for action in p._actions:  # --model is needed only without --hyp
        if action.dest == "model":
            action.required = False


def run(args: argparse.Namespace) -> int:
    from adl.runtime.data.lines import LineStream, read_lines
    from adl.runtime.decode.bleu import report, score

    refs = read_lines(args.ref, allow_empty=True)
    if args.hyp is not None:
        if args.model is not None or args.src is not None:
            raise UsageError("give --hyp, or --model with --src, not both")
        hyps = read_lines(args.hyp, allow_empty=True)
        hyp_name = args.hyp
    else:
        if args.model is None or args.src is None:
            raise UsageError("give --model RUN and --src FILE (or --hyp FILE)")
        options = search_options(args)  # before the model loads
        sources = read_lines(args.src, allow_empty=True)  # all of it is valid before decoding
        translator = load_translator(args)
        hyps = []
        with open(args.src, "rb") as f:
            stream = LineStream(f, args.src)
            _translate_stream(args, translator, options, stream, len(sources), hyps.append)
        hyp_name = f"translations of {args.src}"
        if args.output:
            _write(args.output, hyps)
    print(report(score(hyps, refs, hyp_name, args.ref)))
    return 0
