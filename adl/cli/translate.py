"""``adl translate``: decode with a trained run (or an ensemble); its search options are
shared with ``adl eval`` and ``adl score``.

Translate one sentence per line, from standard input or --input, to standard output or
--output.
"""

from __future__ import annotations

import argparse
import sys

from .common import UsageError, add_checkpoint_option

HELP = "translate text with a trained run"


def add_model_choice(p: argparse.ArgumentParser) -> None:
    """``--model RUN [RUN ...]`` (several: an ensemble), ``--checkpoint``, ``--device``,
    ``--decode-attention`` and ``--ensemble-mode``: which model a decoding command loads."""
    p.add_argument(
        "--model",
        required=True,
        nargs="+",
        metavar="RUN",
        help="a run directory of adl train, a checkpoint file, or a folder of adl export; "
        "several: an ensemble (their vocabularies must be the same)",
    )
    add_checkpoint_option(p)
    p.add_argument(
        "--ensemble-mode",
        default="linear",
        choices=("linear", "log_linear"),
        help="how an ensemble combines its models at each step: linear, the average "
        "probability (default); log_linear, the average log-probability",
    )
    p.add_argument("--device", default="auto", help="auto, cpu, cuda or cuda:N")
    p.add_argument(
        "--decode-attention",
        choices=("soft", "hard"),
        help="decode the decoder's dot-product attention with standard attention or with hard "
        "retrieval (Xu et al. 2020), whatever the model was trained with (default: as trained)",
    )


def add_search_options(p: argparse.ArgumentParser) -> None:
    add_model_choice(p)
    p.add_argument(
        "--beam", type=int, default=5, metavar="K", help="beam size (1: greedy; default 5)"
    )
    p.add_argument(
        "--batch-size",
        type=int,
        default=4096,
        metavar="TOKENS",
        help="source tokens x beam per batch (default 4096); adl translate batches the "
        "lines already read, up to TOKENS / beam lines",
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


def arguments(p: argparse.ArgumentParser) -> None:
    """The arguments of ``adl translate``."""
    add_search_options(p)
    p.add_argument(
        "--engine",
        choices=("adl", "ctranslate2"),
        default="adl",
        help="adl: the PyTorch model; ctranslate2: the CTranslate2 model of a folder written "
        "by adl export --ctranslate2 (default adl)",
    )
    p.add_argument(
        "--compute-type",
        default="default",
        metavar="TYPE",
        help="CTranslate2's compute type (default: as exported; int8, float32, ...)",
    )
    p.add_argument("--input", metavar="FILE", help="default: standard input")
    p.add_argument("--output", metavar="FILE", help="default: standard output")
    p.add_argument(
        "--nbest",
        type=int,
        default=1,
        metavar="N",
        help="write the N best as 'index ||| text ||| score ||| normalized'",
    )


def _options(args: argparse.Namespace):
    from adl.runtime.decode.search import SearchOptions
    from adl.runtime.decode.translator import check_options

    if args.beam < 1:
        raise UsageError("--beam must be at least 1")
    nbest = getattr(args, "nbest", 1)
    if not 1 <= nbest <= args.beam:
        raise UsageError(f"--nbest must be between 1 and the beam size ({args.beam})")
    return check_options(
        SearchOptions(
            beam=args.beam,
            nbest=nbest,
            penalty=args.length_penalty,
            alpha=args.alpha,
            len_a=args.max_len_a,
            len_b=args.max_len_b,
            max_tokens=args.batch_size,
        )
    )


def load_translator(args: argparse.Namespace):
    """The model (or ensemble) that ``args`` names, on its device."""
    from adl.runtime.training.distributed import pick_device

    device = pick_device(args.device)
    if getattr(args, "engine", "adl") == "ctranslate2":
        from adl.runtime.decode.ct2 import Ct2Translator

        if len(args.model) > 1:
            raise UsageError("--engine ctranslate2 decodes one model: give one --model")
        return Ct2Translator.load(args.model[0], str(device), args.compute_type)
    from adl.runtime.decode.translator import Translator

    return Translator.load(
        args.model, args.checkpoint, device, args.decode_attention, args.ensemble_mode
    )


def _progress(total: int | None):
    """A tqdm bar on standard error, drawn only on a terminal."""
    from tqdm import tqdm

    return tqdm(
        total=total,
        unit=" sentences",
        file=sys.stderr,
        disable=not sys.stderr.isatty(),
        leave=False,
        dynamic_ncols=True,
    )


def _translate_stream(args, translator, source, total, write) -> None:
    """Translate numbered lines as they come from ``source`` (a LineStream), batching what
    is already read, writing each output line at once; a warning per cut line."""
    from adl.runtime.decode.translator import translate_stream

    options = _options(args)
    most = max(1, options.max_tokens // options.beam)
    bar = _progress(total)
    name = source.name

    def warn(number: int, message: str) -> None:
        bar.write(f"adl {args.command}: warning: {name}:{number}: {message}", file=sys.stderr)

    try:
        translate_stream(
            translator, iter(lambda: source.take(most), []), write, options, warn, bar.update
        )
    finally:
        bar.close()


def _count_lines(path: str) -> int | None:
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError:
        return None
    return data.count(b"\n") + (1 if data and not data.endswith(b"\n") else 0)


def run(args: argparse.Namespace) -> int:
    from adl.runtime.data.lines import LineStream
    from adl.runtime.errors import DataError

    _options(args)
    translator = load_translator(args)
    if args.input is None:
        source, total = LineStream(sys.stdin.buffer, "<stdin>"), None
    else:
        try:
            source = LineStream(open(args.input, "rb"), args.input)
        except OSError as exc:
            raise DataError(f"{args.input}: cannot read: {exc.strerror}") from None
        total = _count_lines(args.input)
    out = sys.stdout if args.output is None else _open_output(args.output)

    def write(line: str) -> None:
        out.write(line + "\n")
        out.flush()

    try:
        _translate_stream(args, translator, source, total, write)
    finally:
        if args.input is not None:
            source.stream.close()
        if out is not sys.stdout:
            out.close()
    return 0


def _open_output(path: str):
    from adl.runtime.errors import DataError

    try:
        return open(path, "w", encoding="utf-8")
    except OSError as exc:
        raise DataError(f"{path}: cannot write: {exc.strerror}") from None


def _write(path: str | None, lines: list[str]) -> None:
    text = "".join(line + "\n" for line in lines)
    if path is None:
        sys.stdout.write(text)
    else:
        with _open_output(path) as f:
            f.write(text)
