"""The peer tables of docs/performance.md, kept equal to the committed results.

A document holds ADL's verdicts against the peers on a corpus as a block that this module
rewrites from the corpus's committed ``results.json`` (its ``pairs``, with the seed-aware
intervals), so that no verdict word is written by hand::

    <!-- peers pairs docs/results/peers/heldout-grid/emoji -->
    ...the table...
    <!-- end of peers pairs -->

the verdicts of several corpora in one table (``<!-- peers summary FOLDER FOLDER ... -->``
... ``<!-- end of peers summary -->``), the history of test-set scorings from the ledger
(``<!-- peers ledger docs/results/peers/ledger.jsonl -->`` ... ``<!-- end of peers ledger
-->``, ``ledger.history_markdown``), and a recipe search pooled over its tuning corpora
(``<!-- peers recipes FOLDER/recipes.json FOLDER/recipes.json -->`` ... ``<!-- end of peers
recipes -->``, ``tune.pooled_markdown``).

``python bench/peers.py --update-doc docs/performance.md`` rewrites them; a test checks that
they are up to date.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from adl.runtime.docblocks import pattern, rewrite

from . import protocol, systems, table, tune
from .ledger import Ledger, history_markdown
from .stats import pair_of

BLOCK = pattern("peers (?P<kind>pairs|summary|ledger|recipes)", "[^>]+?", "peers (?P=kind)")
# the systems' own labels (their versions in one place), the torch loop shown by its name
LABELS = {**systems.labels(systems.SYSTEMS), "torch": "torch"}


def pairs_markdown(folder: Path) -> str:
    """The pairs table of a committed benchmark folder, from its results.json alone."""
    record = json.loads((folder / "results.json").read_text(encoding="utf-8"))
    pairs = [pair_of(p) for p in record.get("pairs", [])]
    return "\n".join(table.pairs_table(pairs, LABELS)) + "\n"


def summary_markdown(folders: list[Path]) -> str:
    """One line per corpus: each peer's verdicts over the searches and metrics."""
    peers: list[str] = []
    rows = []
    for folder in folders:
        record = json.loads((folder / "results.json").read_text(encoding="utf-8"))
        found: dict[str, dict[str, list[str]]] = {}
        for p in map(pair_of, record.get("pairs", [])):
            if p.peer not in peers:
                peers.append(p.peer)
            search = table.search_name(p.beam) + (f" ({p.selection})" if p.selection else "")
            for metric, word in (("BLEU", p.bleu_verdict), ("chrF", p.chrf_verdict)):
                found.setdefault(p.peer, {}).setdefault(word, []).append(f"{search} {metric}")
        rows.append((folder.name, found))
    head = ["corpus", *(f"against {LABELS.get(p, p)}" for p in peers)]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for name, found in rows:
        cells = [name]
        for peer in peers:
            words = found.get(peer, {})
            cells.append("; ".join(f"{w}: {', '.join(cols)}" for w, cols in sorted(words.items())))
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def stage_verdicts(line: dict, root: Path) -> str | None:
    """The verdicts of a protocol's stage on a corpus, counted over its comparisons (each
    peer's model by the common rule and by its own practices, in each search), from the
    stage's committed results.json; None while the stage has none (it writes it when its
    last round is done) or when the protocol file is no longer the one the line names."""
    file = line.get("protocol")
    if not file or not line.get("stage") or not (root / file).is_file():
        return None
    spec = protocol.load(root / file, root)
    if spec.sha256 != line.get("protocol_sha256"):
        return None
    record_file = root / spec.results(line["stage"], line["corpus"]) / "results.json"
    if not record_file.is_file():
        return None
    record = json.loads(record_file.read_text(encoding="utf-8"))
    if record.get("protocol", {}).get("sha256") != spec.sha256:
        return None
    counts: dict[str, dict[str, dict[str, int]]] = {}
    for p in map(pair_of, record.get("pairs", [])):
        for metric, word in (("BLEU", p.bleu_verdict), ("chrF", p.chrf_verdict)):
            words = counts.setdefault(p.peer, {}).setdefault(metric, {})
            words[word] = words.get(word, 0) + 1
    parts = []
    for peer, metrics in counts.items():
        n = sum(metrics["BLEU"].values())
        said = "; ".join(
            f"{metric} " + ", ".join(f"{w} {c}" for w, c in sorted(words.items()))
            for metric, words in metrics.items()
        )
        noun = "comparison" if n == 1 else "comparisons"
        parts.append(f"against {LABELS.get(peer, peer)} ({n} {noun}): {said}")
    return "; ".join(parts) if parts else None


def update_doc(path: Path, root: Path, write: bool = True) -> list[str]:
    """Rewrite every peers block of ``path`` (folders relative to ``root``); returns the
    folders whose block changed (``write=False``: a check, nothing written)."""

    def fill(m: re.Match[str]) -> str:
        folders = [root / f for f in m["args"].split()]
        if m["kind"] == "ledger":
            lines = Ledger(folders[0], root).lines()
            return history_markdown(lines, lambda row: stage_verdicts(row, root))
        if m["kind"] == "pairs":
            return pairs_markdown(folders[0])
        if m["kind"] == "recipes":
            pooled = tune.pool(*folders)
            return "\n".join(tune.pooled_markdown(pooled, systems.labels(pooled))) + "\n"
        return summary_markdown(folders)

    return rewrite(path, BLOCK, fill, write)
