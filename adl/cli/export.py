"""``adl export RUN --out DIR``: the weights (safetensors), the model (JSON), the
sentencepiece models and a card; with ``--ctranslate2``, a CTranslate2 model as well.

Write DIR/model.safetensors (weights), DIR/model.json (the canonical ADL text of each
network, sizes, vocabularies), the sentencepiece model(s) and DIR/README.md (a card with the
run's sacrebleu scores). adl translate --model DIR and adl.load_model(DIR) read it; nothing
in it is pickled.
"""

from __future__ import annotations

import argparse

from .common import add_checkpoint_option

HELP = "write what a deployment of a trained run needs"


def arguments(p: argparse.ArgumentParser) -> None:
    """The arguments of ``adl export``."""
    p.add_argument("run_dir", metavar="RUN", help="a run directory of adl train (or a checkpoint)")
    p.add_argument("--out", required=True, metavar="DIR", help="the folder to write")
    add_checkpoint_option(p)
    p.add_argument(
        "--ctranslate2",
        action="store_true",
        help="also write DIR/ctranslate2/, a CTranslate2 model (Transformer layers only), "
        "for adl translate --engine ctranslate2",
    )
    p.add_argument(
        "--quantization",
        choices=("float32", "int8", "int8_float32", "int16", "float16", "bfloat16"),
        default="float32",
        help="the CTranslate2 model's weight type (default float32)",
    )


def run(args: argparse.Namespace) -> int:
    from adl.runtime.model.ct2_convert import convertible
    from adl.runtime.model.export import export_run

    # a model CTranslate2 cannot take is refused before anything is written
    check = convertible if args.ctranslate2 else None
    out = export_run(args.run_dir, args.out, args.checkpoint, check)
    print(f"exported {args.run_dir} -> {out}")
    if args.ctranslate2:
        from adl.runtime.model.ct2_convert import export_ctranslate2

        where = export_ctranslate2(out, args.quantization)
        print(f"CTranslate2 model ({args.quantization}) -> {where}")
    return 0
