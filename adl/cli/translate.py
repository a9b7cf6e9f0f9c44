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
        "--int8",
        choices=("dynamic", "weight"),
        help="decode with int8 linear layers made by torchao (the quant extra; CPU only): "
        "dynamic, int8 weights and activations; weight, int8 weights only",
    )
    p.add_argument(
        "--compiled",
        metavar="MODE",
        help="decode through the model's step compiled by torch.compile in MODE (default, "
        "reduce-overhead: CUDA graphs on a GPU, max-autotune...), over a static cache; an "
        "encoder-decoder whose decoder has dot-product attention, positions, feed-forward "
        "and norms",
    )
    p.add_argument(
        "--decode-attention",
        choices=("soft", "hard"),
        help="decode the decoder's dot-product attention with standard attention or with hard "
        "retrieval (Xu et al. 2020), whatever the model was trained with (default: as trained)",
    )


def add_search_options(p: argparse.ArgumentParser, nbest: bool = False) -> None:
    """``--model`` and the rest of :func:`add_model_choice`, and one flag per search option
    of :class:`~adl.runtime.search_options.SearchOptions`: its name with dashes, its
    default and its meaning as it has them (``nbest``: ``--nbest`` too)."""
    import dataclasses

    from adl.runtime.search_options import DEFAULTS, PENALTIES, RENAMED, SearchOptions

    add_model_choice(p)
    old_names = {new: old for old, new in RENAMED.items()}
    for f in dataclasses.fields(SearchOptions):
        if f.name == "nbest" and not nbest:
            continue
        default = getattr(DEFAULTS, f.name)
        kind = {"int": int, "float": float}.get(str(f.type), str)
        choices = PENALTIES if f.name == "penalty" else None
        p.add_argument(
            "--" + f.name.replace("_", "-"),
            type=kind,
            default=default,
            choices=choices,
            metavar=None if choices else f.metadata["metavar"],
            help=f"{f.metadata['help']} (default {default})",
        )
        if f.name in old_names:  # the previous release's flag, kept one release
            p.add_argument(
                "--" + old_names[f.name].replace("_", "-"),
                dest=f.name,
                type=kind,
                choices=choices,
                default=argparse.SUPPRESS,
                action=Renamed,
                help=argparse.SUPPRESS,
            )


class Renamed(argparse.Action):
    """A flag of the previous release, kept one release: it sets its new name's value and
    says so on standard error."""

    def __call__(self, parser, namespace, values, option_string=None):
        new = "--" + self.dest.replace("_", "-")
        print(
            f"{parser.prog}: warning: {option_string} is renamed {new}; {option_string} goes "
            "in the next release",
            file=sys.stderr,
        )
        setattr(namespace, self.dest, values)


def arguments(p: argparse.ArgumentParser) -> None:
    """The arguments of ``adl translate``."""
    add_search_options(p, nbest=True)
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


def search_options(args: argparse.Namespace):
    """The :class:`~adl.runtime.search_options.SearchOptions` of the command line, made (and
    so checked) once; an option out of range is a usage error."""
    import dataclasses

    from adl.runtime.errors import ConfigError
    from adl.runtime.search_options import SearchOptions

    names = [f.name for f in dataclasses.fields(SearchOptions)]
    given = {name: getattr(args, name) for name in names if hasattr(args, name)}
    try:
        return SearchOptions(**given)
    except ConfigError as exc:
        raise UsageError(str(exc)) from None


def load_translator(args: argparse.Namespace):
    """The model (or ensemble) that ``args`` names, on its device."""
    from adl.runtime.training.distributed import pick_device

    device = pick_device(args.device)
    if getattr(args, "engine", "adl") == "ctranslate2":
        from adl.runtime.decode.ct2_translator import Ct2Translator

        if len(args.model) > 1:
            raise UsageError("--engine ctranslate2 decodes one model: give one --model")
        if getattr(args, "int8", None):
            raise UsageError("--int8 is for --engine adl (CTranslate2: --compute-type int8)")
        if getattr(args, "compiled", None):
            raise UsageError("--compiled is for --engine adl")
        return Ct2Translator.load(args.model[0], str(device), args.compute_type)
    from adl.runtime.decode.driver import loading_for
    from adl.runtime.decode.translator import Translator

    with loading_for(getattr(args, "workers", 1)):
        return Translator.load(
            args.model,
            args.checkpoint,
            device,
            args.decode_attention,
            args.ensemble_mode,
            getattr(args, "int8", None),
            getattr(args, "compiled", None),
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


def _translate_stream(args, translator, options, source, total, write) -> None:
    """Translate numbered lines as they come from ``source`` (a LineStream) with the search
    ``options``, batching what is already read, writing each output line at once; a
    warning per cut line."""
    from adl.runtime.decode.translator import translate_stream

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

    options = search_options(args)  # before the model loads
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
        _translate_stream(args, translator, options, source, total, write)
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
