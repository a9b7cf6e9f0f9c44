"""Translating and scoring text with a trained run: the API behind ``adl translate`` and
``adl eval``."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TextIO

from sacrebleu.metrics import BLEU, CHRF

from .errors import DataError
from .search import Hypothesis, SearchOptions, search_ids


def read_lines(path: str | Path | None, stream: TextIO | None = None) -> list[str]:
    """Lines of a UTF-8 file (or of standard input), without their newlines; a line that is
    not UTF-8 is one clear error naming the file and line."""
    name = str(path) if path is not None else "<stdin>"
    try:
        data = Path(path).read_bytes() if path is not None else (stream or sys.stdin).buffer.read()
    except FileNotFoundError:
        raise DataError(f"{name}: no such file") from None
    except OSError as exc:
        raise DataError(f"{name}: cannot read: {exc.strerror}") from None
    lines = data.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    out = []
    for number, raw in enumerate(lines, 1):
        try:
            out.append(raw.rstrip(b"\r").decode("utf-8"))
        except UnicodeDecodeError as exc:
            raise DataError(
                f"{name}:{number}: not valid UTF-8 (byte {exc.start + 1} of the line)"
            ) from None
    return out


class Counter:
    """'n/N sentences' on standard error, on a terminal only."""

    def __init__(self, total: int, stream: TextIO | None = None):
        self.total, self.stream = total, stream or sys.stderr
        self.live = bool(getattr(self.stream, "isatty", lambda: False)()) and total > 0
        self.t0 = time.monotonic()

    def __call__(self, done: int) -> None:
        if self.live:
            rate = done / max(time.monotonic() - self.t0, 1e-9)
            self.stream.write(
                f"\r\033[Ktranslated {done:,}/{self.total:,} sentences ({rate:,.1f}/s)"
            )
            self.stream.flush()

    def close(self) -> None:
        if self.live:
            self.stream.write("\r\033[K")
            self.stream.flush()


def translate_lines(
    model,
    tokenizers,
    lines: list[str],
    options: SearchOptions = SearchOptions(),
    device="cpu",
    progress: Callable[[int], None] | None = None,
) -> list[list[tuple[str, Hypothesis]]]:
    """The ``options.nbest`` best translations of each line (text and hypothesis), in order.
    An empty (or blank) line gets an empty translation."""
    src_ids = [
        ids if line.strip() else [] for line, ids in zip(lines, tokenizers.encode_src(lines))
    ]
    found = search_ids(model, tokenizers, src_ids, options, device, progress)
    return [[(tokenizers.decode_tgt([h.tokens])[0], h) for h in hyps] for hyps in found]


def nbest_lines(results: list[list[tuple[str, Hypothesis]]]) -> list[str]:
    """Moses-style n-best lines: ``index ||| text ||| score ||| normalized score``."""
    return [
        f"{i} ||| {text} ||| {h.score:.4f} ||| {h.normalized:.4f}"
        for i, hyps in enumerate(results)
        for text, h in hyps
    ]


def score(
    hyps: list[str], refs: list[str], hyp_name: str = "hypotheses", ref_name: str = "references"
) -> dict[str, object]:
    """sacrebleu BLEU and chrF of detokenised hypotheses against one reference each."""
    if len(hyps) != len(refs):
        raise DataError(f"{hyp_name} has {len(hyps):,} lines but {ref_name} has {len(refs):,}")
    bleu, chrf = BLEU(), CHRF()
    b = bleu.corpus_score(hyps, [refs])
    c = chrf.corpus_score(hyps, [refs])
    return {
        "bleu": b.score,
        "chrf": c.score,
        "bleu_text": str(b),
        "chrf_text": str(c),
        "bleu_signature": str(bleu.get_signature()),
        "chrf_signature": str(chrf.get_signature()),
    }


def report(scores: dict[str, object]) -> str:
    return (
        f"{scores['bleu_text']}\n  signature: {scores['bleu_signature']}\n"
        f"{scores['chrf_text']}\n  signature: {scores['chrf_signature']}"
    )
