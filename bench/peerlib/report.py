"""What a benchmark run reports, from its jobs' results: mean ± std per system, ADL against
each peer (``stats.py``), the tables (``table.py``), the curves (``curves.py``), and
``results.json`` with every figure.

ADL trains in every round beside its peers; when the rounds hold different peers, ADL's
runs of each round are a system of their own (``adl@sockeye``: ADL's runs beside Sockeye)
and each peer is compared with the ADL runs it trained beside. A peer's own practice
(``runs.own_practice``: its own averaging, its own best checkpoint) is a system of its own
too (``sockeye:sockeye-average``), compared with the same ADL runs (ADL's model chosen by
the common rule, which is ADL's own practice).
"""

from __future__ import annotations

import hashlib
import json
from collections import defaultdict
from dataclasses import asdict, dataclass
from pathlib import Path

from . import curves, stats, table
from .base import read_lines
from .runs import hyp_file
from .stats import Pair, Spread


def keys(results: list[dict]) -> None:
    """Give each result its system key (``key``): the system's name, and for ADL, when its
    runs are in rounds with different peers, ``adl@PEERS``."""
    groups = sorted({r["group"] for r in results if r["system"] == "adl"})
    for r in results:
        alone = r["system"] != "adl" or len(groups) < 2
        r["key"] = r["system"] if alone else f"adl@{r['group'].removeprefix('adl+')}"


def labels(results: list[dict]) -> dict[str, str]:
    """key -> the name a table shows."""
    names = {r["system"]: r["label"] for r in results}
    found = {}
    for r in results:
        key = r["key"]
        if key.startswith("adl@"):
            peers = [names.get(p, p) for p in key[4:].split("+")]
            found[key] = f"ADL (beside {', '.join(peers)})"
        else:
            found[key] = r["label"]
        for name, own in r.get("own", {}).items():
            found[f"{key}:{name}"] = f"{r['label']}, {own['label']}"
    return found


def scored(r: dict) -> list[tuple[str, dict]]:
    """(key, scores by beam) of a finished run: its common rule's model, then each of its
    own practices (``KEY:NAME``)."""
    own = [(f"{r['key']}:{name}", o["scores"]) for name, o in r.get("own", {}).items()]
    return [(r["key"], r["scores"]), *own]


def spreads(results: list[dict], beams: list[int]) -> dict[str, dict[str, Spread]]:
    """key -> {"bleu-K": Spread, "chrf-K": Spread, and for a run's common key its
    "updates", "tokens" and "tokens-per-update"} over the key's finished runs."""
    values: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for r in results:
        if r.get("failed"):
            continue
        if r.get("updates"):
            found = values[r["key"]]
            found["updates"].append(r["updates"])
            found["tokens"].append(r["tokens"])
            found["tokens-per-update"].append(r["tokens"] / r["updates"])
        for key, scores in scored(r):
            for k in beams:
                s = scores.get(str(k))
                if s:
                    values[key][f"bleu-{k}"].append(s["bleu"])
                    values[key][f"chrf-{k}"].append(s["chrf"])
    return {key: {m: stats.spread(v) for m, v in found.items()} for key, found in values.items()}


def pairs(results: list[dict], beams: list[int], refs: list[str]) -> list[Pair]:
    """ADL against each peer it trained beside (or ADL's only runs, when every system ran
    alone), per search, on the seeds both finished."""
    done = [r for r in results if not r.get("failed")]
    found = []
    for peer in sorted({r["key"] for r in done if r["system"] != "adl"}):
        theirs = [r for r in done if r["key"] == peer]
        adl = [r for r in done if r["system"] == "adl"]
        # the ADL runs beside it; with one slot ADL ran in a round of its own
        ours = [r for r in adl if peer in r["group"].split("+")] or adl
        owns = ["", *dict.fromkeys(name for r in theirs for name in r.get("own", {}))]
        for own in owns:  # the common rule's model, then each own practice's
            for k in beams:
                a = {r["seed"]: read_lines(hyp_file(r["folder"], k)) for r in ours}
                b = {
                    r["seed"]: read_lines(hyp_file(r["folder"], k, own))
                    for r in theirs
                    if not own or own in r.get("own", {})
                }
                if set(a) & set(b):
                    found.append(stats.compare(peer, k, a, b, refs, selection=own))
    return found


@dataclass
class Report:
    markdown: str
    spreads: dict[str, dict[str, Spread]]
    pairs: list[Pair]

    def to_dict(self) -> dict:
        return {
            "systems": {k: {m: asdict(s) for m, s in v.items()} for k, v in self.spreads.items()},
            "pairs": [p.to_dict() for p in self.pairs],
        }


def report(
    results: list[dict], beams: list[int], refs: list[str], title: str, notes: list[str]
) -> Report:
    keys(results)
    names = labels(results)
    found = spreads(results, beams)
    compared = pairs(results, beams, refs)
    lines = [f"### {title}", "", *table.summary_table(found, names, beams), ""]
    if compared:
        lines += [*table.pairs_table(compared, names), ""]
    lines += ["Every run:", "", *table.runs_table(results, names, beams), ""]
    lines += [f"- {n}" for n in notes]
    return Report("\n".join(lines) + "\n", found, compared)


def draw_curves(results: list[dict], out: Path, title: str) -> Path | None:
    """The corpus' picture (None when no run has a validation curve)."""
    names = labels(results)
    series = []
    for r in results:
        if r.get("failed"):
            continue
        points = r["selection"]["points"]
        series.append(
            curves.Series(
                names[r["key"]],
                r["seed"],
                [p["seconds"] for p in points],
                [p["tokens"] for p in points],
                [p["bleu"] for p in points],
                [p["chrf"] for p in points],
            )
        )
    return curves.draw(series, out, title) if series else None


def restate(folder: Path, refs: list[str], verdict_note: str) -> Report:
    """The tables of a committed benchmark folder (``--results DIR``) made again from its
    kept runs with today's test: the runs' result files and translations, and the test
    references (rebuilt from the corpus recipe). ``table.md`` and ``results.json``'s pairs are
    rewritten; the runs, scores and settings are kept as they were. The old notes stay, the
    one on the test replaced by ``verdict_note``."""
    record = json.loads((folder / "results.json").read_text(encoding="utf-8"))
    results = []
    for path in sorted(folder.glob("runs/*/seed*/*/result.json")):
        r = json.loads(path.read_text(encoding="utf-8"))
        results.append({**r, "folder": str(path.parent)})
    if not results:
        raise ValueError(f"{folder}: no kept runs (runs/GROUP/seedN/SYSTEM/result.json)")
    old = (folder / "table.md").read_text(encoding="utf-8").splitlines()
    title = old[0].removeprefix("### ")
    notes = [line[2:] for line in old if line.startswith("- ")]
    notes = [n for n in notes if "paired bootstrap" not in n] + [verdict_note]
    digest = hashlib.sha256("".join(r + "\n" for r in refs).encode()).hexdigest()
    notes.append(f"test references: {len(refs):,} lines, sha256 {digest}")
    done = report(results, record["beams"], refs, title, notes)
    record.update(done.to_dict())
    record["references_sha256"] = digest
    (folder / "table.md").write_text(done.markdown, encoding="utf-8")
    (folder / "results.json").write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
    return done
