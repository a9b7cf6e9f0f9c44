"""``adl viz``: pictures as PNG files (runtime.viz does the work).

adl viz pattern 'gauss_att(l, r)' --length 10             heads of a hard-coded layer
adl viz attention --model RUN --src "a sentence"           a trained model's attention
adl viz curves RUN                                         learning curves

Write PNG pictures: the heads of a hard-coded attention layer, a trained model's attention
on one sentence, or a run's learning curves.
"""

from __future__ import annotations

import argparse

from .common import add_checkpoint_option

HELP = "draw attention patterns, attention and learning curves"


def arguments(p: argparse.ArgumentParser) -> None:
    """The arguments of ``adl viz``."""
    kinds = p.add_subparsers(dest="picture", metavar="PICTURE", required=True)

    pat = kinds.add_parser(
        "pattern",
        help="heatmaps of a hard-coded attention layer's heads",
        description="One heatmap per head of a hard-coded layer (gauss_att, gauss_src_att, "
        "fixed_self_att, mh_dot_self_att(window=k)): query positions down, key "
        "positions across.",
    )
    pat.add_argument("layer", metavar="LAYER", help="ADL text of one layer, e.g. 'gauss_att(l, r)'")
    pat.add_argument(
        "--length",
        type=int,
        required=True,
        metavar="N",
        help="sentence length (the target side of cross and joint attention)",
    )
    pat.add_argument(
        "--role",
        choices=("encoder", "decoder", "joint"),
        help="where the layer is (default: the first role it may be used in)",
    )
    pat.add_argument(
        "--source-length",
        type=int,
        metavar="S",
        help="source length for gauss_src_att and the joint role (default N)",
    )
    pat.add_argument(
        "--ratio",
        type=float,
        metavar="R",
        help="γ of gauss_src_att when the text gives no ratio= (default 1)",
    )
    _add_out(pat, "pattern.png", default="pattern.png")
    pat.set_defaults(run=run_pattern)

    att = kinds.add_parser(
        "attention",
        help="a trained model's attention on one sentence",
        description="One heatmap per (attention layer, head) of a trained model on one "
        "sentence, with sentencepiece pieces on the axes. The decoder reads the "
        "given reference, or the model's greedy translation.",
    )
    att.add_argument(
        "--model",
        required=True,
        metavar="RUN",
        help="a run directory of adl train (or a checkpoint file)",
    )
    add_checkpoint_option(att)
    att.add_argument("--src", required=True, metavar="SENTENCE", help="the source sentence")
    att.add_argument(
        "--tgt",
        metavar="REFERENCE",
        help="the target the decoder reads (default: its greedy translation)",
    )
    att.add_argument(
        "--layer",
        metavar="SUBSTRING",
        help="only layers whose position contains it, e.g. 'decoder' or "
        "'src_att' (positions as adl compile --summary numbers them)",
    )
    att.add_argument(
        "--max-panels",
        type=int,
        default=32,
        metavar="N",
        help="draw at most N (layer, head) panels (32)",
    )
    _add_out(att, "RUN/pictures/attention.png")
    att.set_defaults(run=run_attention)

    cur = kinds.add_parser(
        "curves",
        help="a run's learning curves",
        description="Training loss, and validation perplexity, BLEU and chrF where logged, "
        "by step, from RUN/metrics.jsonl.",
    )
    cur.add_argument("run_dir", metavar="RUN", help="a run directory of adl train")
    _add_out(cur, "RUN/pictures/curves.png")
    cur.set_defaults(run=run_curves)


def _add_out(p: argparse.ArgumentParser, shown: str, default: str | None = None) -> None:
    """``--out FILE``: the PNG a picture command writes (``shown``: its default, as help
    says it; None as ``default``: the command picks it from the run)."""
    p.add_argument(
        "--out", default=default, metavar="FILE", help=f"the PNG to write (default {shown})"
    )


def run_pattern(args: argparse.Namespace) -> int:
    from adl.runtime.run import viz

    path = viz.draw_pattern(
        args.layer,
        args.length,
        args.out,
        role=args.role,
        source_length=args.source_length,
        ratio=args.ratio,
    )
    print(path)
    return 0


def run_attention(args: argparse.Namespace) -> int:
    from adl.runtime.run import viz

    picture = viz.draw_attention(
        args.model,
        args.src,
        args.tgt,
        which=args.checkpoint,
        layer=args.layer,
        out=args.out,
        max_panels=args.max_panels,
    )
    print(picture.path)
    if args.tgt is None:
        print(f"target (greedy): {picture.target}")
    if picture.left_out:
        print(
            f"{picture.drawn} panels drawn, {picture.left_out} left out (--layer picks "
            "layers, --max-panels raises the cap)"
        )
    return 0


def run_curves(args: argparse.Namespace) -> int:
    from adl.runtime.run import viz

    path = viz.draw_run_curves(args.run_dir, args.out)
    print(path)
    return 0
