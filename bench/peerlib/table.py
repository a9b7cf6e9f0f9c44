"""Scores of the peer benchmark and the Markdown table it writes (no training here).

A system's test translations are scored with sacrebleu against the references, every test
sentence counted: a sentence a system left out scores as an empty translation and is listed.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field

from sacrebleu.metrics import BLEU, CHRF


@dataclass
class Score:
    bleu: float
    chrf: float
    bp: float  # BLEU's brevity penalty
    ratio: float  # hypothesis length / reference length (sacrebleu's tokens)
    left_out: list[int] = field(default_factory=list)  # test lines without a translation (0-based)
    seconds: float | None = None  # decoding wall-clock (process start to end)


@dataclass
class Row:
    """One system's run: training figures and one score per search."""

    system: str  # label, e.g. "Sockeye 3.1.34"
    round: int  # the round it trained in (systems of a round ran at the same time)
    updates: int | None = None
    tokens: int | None = None  # target tokens trained on (with eos)
    best_update: int | str | None = None  # a step, or 'avg A–B' for an average
    train_seconds: float | None = None  # wall-clock of its training process
    scores: dict[int, Score] = field(default_factory=dict)  # beam size -> score
    note: str = ""
    failed: str = ""  # why the system has no result

    def to_dict(self) -> dict:
        d = asdict(self)
        d["scores"] = {str(k): asdict(v) for k, v in self.scores.items()}
        return d


def signatures() -> dict[str, str]:
    """sacrebleu's signatures of the metrics as used by :func:`score`."""
    found = {}
    for name, metric in (("bleu", BLEU()), ("chrf", CHRF())):
        metric.corpus_score(["a"], [["a"]])
        found[name] = str(metric.get_signature())
    return found


def score(hyps: Sequence[str | None], refs: Sequence[str], seconds: float | None = None) -> Score:
    """BLEU, chrF, brevity penalty and length ratio of ``hyps`` (None: left out)."""
    if len(hyps) != len(refs):
        raise ValueError(f"{len(hyps)} translations for {len(refs)} references")
    left_out = [i for i, h in enumerate(hyps) if h is None]
    text = [h if h is not None else "" for h in hyps]
    b = BLEU().corpus_score(text, [list(refs)])
    c = CHRF().corpus_score(text, [list(refs)])
    ratio = b.sys_len / b.ref_len if b.ref_len else 0.0
    return Score(b.score, c.score, b.bp, ratio, left_out, seconds)


def _int(n: int | None) -> str:
    return "–" if n is None else f"{n:,}"


def _secs(s: float | None) -> str:
    return "–" if s is None else f"{s:,.0f} s"


def markdown(rows: Sequence[Row], beams: Sequence[int], title: str, notes: Sequence[str]) -> str:
    """The results table: one line per system run, one column group per search."""
    head = ["system", "round", "updates", "target tokens", "best at", "training"]
    for k in beams:
        name = "greedy" if k == 1 else f"beam {k}"
        head += [f"{name} BLEU / chrF", f"{name} BP / ratio", f"{name} time"]
    head.append("left out")
    lines = [f"### {title}", "", "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for row in rows:
        cells = [row.system, str(row.round), _int(row.updates), _int(row.tokens)]
        best = row.best_update
        cells += [best if isinstance(best, str) else _int(best), _secs(row.train_seconds)]
        for k in beams:
            s = row.scores.get(k)
            if s is None:
                cells += ["–", "–", "–"]
            else:
                cells += [f"{s.bleu:.2f} / {s.chrf:.2f}", f"{s.bp:.3f} / {s.ratio:.3f}"]
                cells.append(_secs(s.seconds))
        left = sorted({i + 1 for s in row.scores.values() for i in s.left_out})
        cells.append(_left_out(left) if not row.failed else f"failed: {row.failed}")
        lines.append("| " + " | ".join(cells) + " |")
    lines.append("")
    lines += [f"- {n}" for n in notes]
    return "\n".join(lines) + "\n"


def _left_out(lines: list[int]) -> str:
    if not lines:
        return "none"
    shown = ", ".join(map(str, lines[:10]))
    more = f" and {len(lines) - 10} more" if len(lines) > 10 else ""
    return f"{len(lines)} (lines {shown}{more})"
