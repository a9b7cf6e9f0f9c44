"""Inference speed of a trained Transformer: ADL eager, ADL with int8 dynamic quantisation,
CTranslate2 float32 and int8, beam 4, in one run, with BLEU beside each.

    python bench/inference.py --run runs/demo            # a trained run (the demo's)
    python bench/inference.py --minutes 3                # or: train a small one first

The test sentences are the bundled default corpus' test split (English-French Bible verses,
``adl data bible``; --data, --cache as for ``adl demo``). Without --run, the small_cpu
preset's Transformer (architectures/transformer.*.adl, 2+2 blocks, d_model 256) is trained
on its train split for --minutes first. Each engine translates the same sentences once,
after one warm-up batch, on --threads CPU threads (or on the GPU with --device cuda):

1. ADL eager: the PyTorch model through runtime.search (adl.load_model);
2. ADL int8: the same model after torch.ao.quantization.quantize_dynamic (qint8 weights of
   every nn.Linear, activations quantised on the fly; CPU only);
3. CTranslate2 float32 and 4. CTranslate2 int8: ``adl export --ctranslate2`` with
   --quantization float32 / int8, through ``adl translate --engine ctranslate2``'s code.

Printed: sentences/s, the ratio to ADL eager measured in the same run, and sacrebleu BLEU.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parent.parent


def train_small(data_dir: Path, out: Path, minutes: float) -> Path:
    from adl.runtime.run.configure import configure
    from adl.runtime.training.train import train

    arch = ROOT / "architectures"
    config = configure(
        [str(arch / "transformer.enc.adl"), str(arch / "transformer.dec.adl")],
        preset="small_cpu",
        sets=[f"train.max_minutes={minutes}", "train.valid_every=100000"],
        train=(str(data_dir / "train.en"), str(data_dir / "train.fr")),
        valid=(str(data_dir / "valid.en"), str(data_dir / "valid.fr")),
    )
    train(config, out)
    return out


def timed(search, sources, options) -> tuple[float, list[str]]:
    search(sources[:8], options)  # warm-up
    start = time.perf_counter()
    found = search(sources, options)
    return time.perf_counter() - start, [hyps[0][0] for hyps in found]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--run", type=Path, help="a trained run (default: train a small one)")
    p.add_argument("--minutes", type=float, default=3.0, help="training time without --run")
    p.add_argument("--data", type=Path, default=Path("data/bible"), help="the corpus folder")
    p.add_argument("--cache", type=Path, default=Path("data/cache"), help="the wheel cache")
    p.add_argument("--sentences", type=int, default=0, help="test sentences (0: all)")
    p.add_argument("--beam", type=int, default=4)
    p.add_argument("--threads", type=int, default=2, help="CPU threads of every engine")
    p.add_argument("--device", default="cpu", help="cpu or cuda")
    p.add_argument("--work", type=Path, help="where to put the run and exports (default: tmp)")
    args = p.parse_args()

    import adl
    from adl.runtime.data import bible
    from adl.runtime.decode.bleu import score
    from adl.runtime.decode.ct2_translator import Ct2Translator
    from adl.runtime.decode.search import SearchOptions
    from adl.runtime.decode.translator import Translator
    from adl.runtime.model.ct2_convert import export_ctranslate2
    from adl.runtime.model.export import export_run

    torch.set_num_threads(args.threads)
    info = bible.bible("en-fr", out=args.data, max_words=20, cache=args.cache)
    test_src, test_ref = info.files(args.data, "test")
    sources = test_src.read_text(encoding="utf-8").splitlines()
    refs = test_ref.read_text(encoding="utf-8").splitlines()
    if args.sentences:
        sources, refs = sources[: args.sentences], refs[: args.sentences]
    work = args.work or Path(tempfile.mkdtemp(prefix="adl-bench-inference-"))
    run = args.run
    if run is None:
        print(f"training the small_cpu Transformer for {args.minutes:g} minutes -> {work / 'run'}")
        run = train_small(args.data, work / "run", args.minutes)
    exports = {}
    for q in ("float32", "int8"):
        folder = export_run(run, work / f"export-{q}")
        export_ctranslate2(folder, q)
        exports[q] = folder

    options = SearchOptions(beam=args.beam)
    eager = adl.load_model(run, device=args.device)
    engines = [("ADL eager (PyTorch)", eager.search)]
    if args.device == "cpu":
        quantized = torch.ao.quantization.quantize_dynamic(
            eager.model, {torch.nn.Linear}, dtype=torch.qint8
        )
        engines.append(
            ("ADL int8 (quantize_dynamic)", Translator(quantized, eager.tokenizers).search)
        )
    for q in ("float32", "int8"):
        ct2 = Ct2Translator(exports[q], args.device, "default", threads=args.threads)
        engines.append((f"CTranslate2 {q}", ct2.search))

    print(
        f"{len(sources):,} test sentences ({test_src}), beam {args.beam}, {args.threads} "
        f"threads, device {args.device}, torch {torch.__version__}"
    )
    rows = []
    for name, search in engines:
        seconds, hyps = timed(search, sources, options)
        bleu = score(hyps, refs)["bleu"]
        rows.append((name, len(sources) / seconds, bleu))
        print(f"  {name}: {seconds:.1f} s", file=sys.stderr)
    base = rows[0][1]
    print("| engine | sentences/s | vs ADL eager | BLEU |\n|---|---:|---:|---:|")
    for name, speed, bleu in rows:
        print(f"| {name} | {speed:,.1f} | {speed / base:.2f}x | {bleu:.2f} |")


if __name__ == "__main__":
    main()
