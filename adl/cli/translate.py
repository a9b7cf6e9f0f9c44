"""``adl translate`` and ``adl eval``: decode and score with a trained run."""

from __future__ import annotations

import argparse
import sys


def add_search_options(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--model",
        required=True,
        metavar="RUN",
        help="a run directory of adl train (or a checkpoint file)",
    )
    p.add_argument(
        "--checkpoint",
        default="best",
        metavar="WHICH",
        help="best, last, average, or a file in RUN/checkpoints (default best)",
    )
    p.add_argument(
        "--beam", type=int, default=5, metavar="K", help="beam size (1: greedy; default 5)"
    )
    p.add_argument(
        "--batch-size",
        type=int,
        default=4096,
        metavar="TOKENS",
        help="source tokens x beam per batch (default 4096)",
    )
    p.add_argument(
        "--length-penalty",
        default="fairseq",
        choices=("fairseq", "gnmt", "none"),
        help="fairseq: score/length^alpha; gnmt: score/((5+length)/6)^alpha",
    )
    p.add_argument("--alpha", type=float, default=1.0, help="length penalty exponent (default 1.0)")
    p.add_argument(
        "--max-len-a",
        type=float,
        default=1.5,
        metavar="A",
        help="at most A x source length + B tokens (default 1.5)",
    )
    p.add_argument("--max-len-b", type=int, default=10, metavar="B", help="(default 10)")
    p.add_argument("--device", default="auto", help="auto, cpu, cuda or cuda:N")
    p.add_argument(
        "--decode-attention",
        choices=("soft", "hard"),
        help="decode the decoder's dot-product attention with standard attention or with hard "
        "retrieval (Xu et al. 2020), whatever the model was trained with (default: as trained)",
    )


def add_parser(sub: argparse._SubParsersAction) -> None:
    t = sub.add_parser(
        "translate",
        help="translate text with a trained run",
        description="Translate one sentence per line, from standard input or "
        "--input, to standard output or --output.",
    )
    add_search_options(t)
    t.add_argument("--input", metavar="FILE", help="default: standard input")
    t.add_argument("--output", metavar="FILE", help="default: standard output")
    t.add_argument(
        "--nbest",
        type=int,
        default=1,
        metavar="N",
        help="write the N best as 'index ||| text ||| score ||| normalized'",
    )
    t.set_defaults(run=run_translate)

    e = sub.add_parser(
        "eval",
        help="BLEU and chrF (sacrebleu) of a run or of a hypothesis file",
        description="Translate --src with --model and score it against --ref, "
        "or score an existing --hyp file against --ref.",
    )
    e.add_argument("--ref", required=True, metavar="FILE", help="references, one per line")
    e.add_argument("--hyp", metavar="FILE", help="translations to score (instead of --model)")
    e.add_argument("--src", metavar="FILE", help="source sentences to translate with --model")
    e.add_argument("--output", metavar="FILE", help="also write the translations here")
    add_search_options(e)
    e.set_defaults(run=run_eval)
    for action in e._actions:  # --model is needed only without --hyp
        if action.dest == "model":
            action.required = False


def _options(args: argparse.Namespace):
    from adl.runtime.search import SearchOptions

    from .common import UsageError

    if args.beam < 1:
        raise UsageError("--beam must be at least 1")
    nbest = getattr(args, "nbest", 1)
    if not 1 <= nbest <= args.beam:
        raise UsageError(f"--nbest must be between 1 and the beam size ({args.beam})")
    return SearchOptions(
        beam=args.beam,
        nbest=nbest,
        penalty=args.length_penalty,
        alpha=args.alpha,
        len_a=args.max_len_a,
        len_b=args.max_len_b,
        max_tokens=args.batch_size,
    )


def _translate(args: argparse.Namespace, lines: list[str]):
    from adl import runtime
    from adl.runtime.distributed import pick_device
    from adl.runtime.inference import Counter, translate_lines

    options = _options(args)
    device = pick_device(args.device)
    model, tokenizers = runtime.load_for_inference(
        args.model, args.checkpoint, device, decode_attention=args.decode_attention
    )
    counter = Counter(len(lines)) if args.input_is_file else None
    try:
        return translate_lines(model, tokenizers, lines, options, device, counter)
    finally:
        if counter is not None:
            counter.close()


def _write(path: str | None, lines: list[str]) -> None:
    text = "".join(line + "\n" for line in lines)
    if path is None:
        sys.stdout.write(text)
    else:
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)


def run_translate(args: argparse.Namespace) -> int:
    from adl.runtime.inference import nbest_lines, read_lines

    _options(args)
    lines = read_lines(args.input)
    args.input_is_file = args.input is not None
    results = _translate(args, lines)
    if args.nbest > 1:
        _write(args.output, nbest_lines(results))
    else:
        _write(args.output, [hyps[0][0] for hyps in results])
    return 0


def run_eval(args: argparse.Namespace) -> int:
    from adl.runtime.inference import read_lines, report, score

    from .common import UsageError

    refs = read_lines(args.ref)
    if args.hyp is not None:
        if args.model is not None or args.src is not None:
            raise UsageError("give --hyp, or --model with --src, not both")
        hyps = read_lines(args.hyp)
        hyp_name = args.hyp
    else:
        if args.model is None or args.src is None:
            raise UsageError("give --model RUN and --src FILE (or --hyp FILE)")
        args.input_is_file = True
        hyps = [h[0][0] for h in _translate(args, read_lines(args.src))]
        hyp_name = f"translations of {args.src}"
        if args.output:
            _write(args.output, hyps)
    print(report(score(hyps, refs, hyp_name, args.ref)))
    return 0
