"""Scores of the peer benchmark and the Markdown tables it writes (no training here).

A system's test translations are scored with sacrebleu against the references, every test
sentence counted: a sentence a system left out scores as an empty translation and is listed.
The tables read the jobs' results (``runs.py``): one line per run, then mean ± std per
system over its seeds, then ADL against each peer with the paired test's verdict.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from sacrebleu.metrics import BLEU, CHRF

from adl.runtime.sweep.significance import Interval

from .stats import Pair, Spread


@dataclass
class Score:
    bleu: float
    chrf: float
    bp: float  # BLEU's brevity penalty
    ratio: float  # hypothesis length / reference length (sacrebleu's tokens)
    left_out: list[int] = field(default_factory=list)  # test lines without a translation (0-based)
    seconds: float | None = None  # decoding wall-clock (process start to end)


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


def search_name(beam: int) -> str:
    return "greedy" if beam == 1 else f"beam {beam}"


def _int(n: int | None) -> str:
    return "–" if n is None else f"{n:,}"


def _secs(s: float | None) -> str:
    return "–" if s is None else f"{s:,.0f} s"


def _training(r: dict) -> str:
    """The clock, and the share of a core the training process had over its whole step."""
    cpu, wall = r.get("cpu_seconds", {}).get("train"), r.get("seconds", {}).get("train")
    share = f" ({100 * cpu / wall:.0f} % CPU)" if cpu is not None and wall else ""
    return _secs(r["train_seconds"]) + share


def runs_table(results: Sequence[dict], labels: dict[str, str], beams: Sequence[int]) -> list[str]:
    """One line per run (a result of ``runs.execute``, or a failure)."""
    head = ["system", "seed", "beside", "updates", "target tokens", "training", "tested"]
    for k in beams:
        head += [f"{search_name(k)} BLEU / chrF", f"{search_name(k)} BP / ratio"]
    head.append("left out")
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in results:
        cells = [labels.get(_key(r), r["label"]), str(r["seed"])]
        if r.get("failed"):
            cells += ["–"] * (len(head) - 3) + [f"failed: {r['failed']}"]
            lines.append("| " + " | ".join(cells) + " |")
            continue
        cells += [", ".join(r.get("beside") or []) or "alone", _int(r["updates"])]
        cells += [_int(r["tokens"]), _training(r), r["selection"]["chosen"]]
        left: set[int] = set()
        for k in beams:
            s = r["scores"].get(str(k))
            if s is None:
                cells += ["–", "–"]
                continue
            cells += [f"{s['bleu']:.2f} / {s['chrf']:.2f}", f"{s['bp']:.3f} / {s['ratio']:.3f}"]
            left |= {i + 1 for i in s["left_out"]}
        stopped = f"; training: {r['train_error']}" if r.get("train_error") else ""
        cells.append(_left_out(sorted(left)) + stopped)
        lines.append("| " + " | ".join(cells) + " |")
    return lines


BATCH = (("updates", "updates", 0, 1), ("tokens", "target tokens (M)", 2, 1e6))
BATCH += (("tokens-per-update", "target tokens / update", 0, 1),)


def summary_table(
    spreads: dict[str, dict[str, Spread]], labels: dict[str, str], beams: Sequence[int]
) -> list[str]:
    """Mean ± std over seeds: ``spreads[key]["bleu-4"]`` and so on; with the runs' updates,
    target tokens and real target tokens per update where the spreads have them (a peer's
    own practice is a line of its own, its runs' batches on its common line)."""
    batch = [b for b in BATCH if any(b[0] in found for found in spreads.values())]
    head = ["system", "seeds", *(b[1] for b in batch)]
    for k in beams:
        head += [f"{search_name(k)} BLEU", f"{search_name(k)} chrF"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for key, found in spreads.items():
        n = max((s.n for s in found.values()), default=0)
        cells = [labels.get(key, key), str(n)]
        for name, _, digits, scale in batch:
            s = found.get(name)
            cells.append(_scaled(s, digits, scale) if s else "–")
        for k in beams:
            for metric in ("bleu", "chrf"):
                s = found.get(f"{metric}-{k}")
                cells.append(s.text() if s else "–")
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def _scaled(s: Spread, digits: int, scale: float) -> str:
    mean = f"{s.mean / scale:,.{digits}f}"
    return mean if s.std is None else f"{mean} ± {s.std / scale:,.{digits}f}"


def pairs_table(pairs: Sequence[Pair], labels: dict[str, str]) -> list[str]:
    """ADL against each peer: the means over the runs, the interval of ADL minus the peer
    with the training run as the unit, the verdicts, and the sentence-only p beside them;
    where a peer's own practice is compared too, the peer's model in a column of its own
    (ADL's is always the common rule's)."""
    own = any(p.selection for p in pairs)
    head = ["ADL against", *(["peer's model"] if own else []), "search", "runs (ADL / peer)"]
    head.append("BLEU (ADL / peer)")
    head += ["Δ BLEU [95 % interval]", "seeds +/−", "BLEU verdict", "p runs", "p sentences"]
    head += ["chrF (ADL / peer)", "Δ chrF [95 % interval]", "chrF verdict"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for p in pairs:
        b, c = p.bleu_interval, p.chrf_interval
        higher, lower = b.favour
        cells = [labels.get(p.peer, p.peer), *([p.selection or "common rule"] if own else [])]
        cells += [search_name(p.beam), f"{p.runs[0]} / {p.runs[1]}"]
        cells += [f"{p.bleu[0]:.2f} / {p.bleu[1]:.2f}", _within(b), f"{higher}/{lower}"]
        cells += [p.bleu_verdict, _p(b.p), _p(p.sentences_bleu_p)]
        cells += [f"{p.chrf[0]:.2f} / {p.chrf[1]:.2f}", _within(c), p.chrf_verdict]
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def _within(found: Interval) -> str:
    if found.low is None or found.high is None:
        return f"{found.delta:+.2f} [–]"
    return f"{found.delta:+.2f} [{found.low:+.2f}, {found.high:+.2f}]"


def _p(value: float | None) -> str:
    if value is None:
        return "–"
    return "< 0.001" if value < 0.001 else f"{value:.3f}"


def _key(result: dict) -> str:
    """A run's system key: ADL's runs are told apart by the peers they ran beside."""
    return result.get("key") or result["system"]


def _left_out(lines: list[int]) -> str:
    if not lines:
        return "none"
    shown = ", ".join(map(str, lines[:10]))
    more = f" and {len(lines) - 10} more" if len(lines) > 10 else ""
    return f"{len(lines)} (lines {shown}{more})"
