"""The ledger of test-set scorings: a line for every time a corpus's test set is scored.

``docs/results/peers/ledger.jsonl`` is committed with the results. A benchmark run appends a
line for each of its jobs that translates and scores the test set (``Ledger.record``, called
as the job finishes, beside its kept files), and ``--restate`` one for the tables it makes
again from kept translations. A line says which test set (the corpus, and the sha256 of its
reference file: the identity of a test set whatever its folder is called), when, at which
commit, under which protocol (the sha256 of the protocol file; null for a run without one)
and what ran. The scorings made before the ledger are in it too, reconstructed from git
history (``"reconstructed": true``), with what had changed since the previous scoring.

Before a benchmark scores a test set, ``Ledger.check`` refuses when the ledger shows that
test set scored under another protocol (a run without a protocol counts as one: null), unless
the run gives a reason (``--rescore-reason TEXT``), which the lines it adds keep.
"""

from __future__ import annotations

import datetime
import json
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path


class Refused(ValueError):
    """A test set would be scored again under a changed protocol, without a reason."""


def commit_of(root: Path) -> str:
    """HEAD of the repository at ``root`` (with ``+changes`` when the work tree differs in
    tracked files); "unknown" outside git."""
    try:
        head = subprocess.run(
            ["git", "-C", str(root), "rev-parse", "--short=12", "HEAD"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "-C", str(root), "diff", "--quiet", "HEAD", "--"], capture_output=True
        )
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return head + ("+changes" if dirty.returncode == 1 else "")


@dataclass
class Scoring:
    """What a run's ledger lines share: the test set, the protocol, the reason."""

    corpus: str  # its name (the folder's)
    test_sha256: str  # of the test reference file
    protocol: str | None  # the protocol file, as the repository names it
    protocol_sha256: str | None
    stage: str | None  # the protocol's stage that ran (a budget), or None
    reason: str | None = None  # --rescore-reason


class Ledger:
    def __init__(self, path: Path, root: Path):
        self.path, self.root = Path(path), Path(root)

    def lines(self) -> list[dict]:
        if not self.path.is_file():
            return []
        text = self.path.read_text(encoding="utf-8")
        return [json.loads(line) for line in text.splitlines() if line.strip()]

    def scorings_of(self, test_sha256: str) -> list[dict]:
        return [line for line in self.lines() if line.get("test_sha256") == test_sha256]

    def check(self, scoring: Scoring) -> None:
        """Raise :class:`Refused` when the test set was scored under another protocol and
        no reason is given."""
        others = sorted(
            {
                str(line.get("protocol_sha256"))
                for line in self.scorings_of(scoring.test_sha256)
                if line.get("protocol_sha256") != scoring.protocol_sha256
            }
        )
        if others and not scoring.reason:
            raise Refused(
                f"the test set of {scoring.corpus} (sha256 {scoring.test_sha256[:12]}) was "
                f"scored under another protocol ({', '.join(o[:12] for o in others)}; see "
                f"{self.path}): scoring it again under protocol "
                f"{str(scoring.protocol_sha256)[:12]} needs --rescore-reason TEXT"
            )

    def record(self, scoring: Scoring, what: str, **fields) -> dict:
        """Append a line: now, HEAD, the test set, the protocol, what ran."""
        line = {
            "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "commit": commit_of(self.root),
            "corpus": scoring.corpus,
            "test_sha256": scoring.test_sha256,
            "protocol": scoring.protocol,
            "protocol_sha256": scoring.protocol_sha256,
            "stage": scoring.stage,
            "what": what,
            **fields,
        }
        if scoring.reason:
            line["rescore_reason"] = scoring.reason
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.path, "a", encoding="utf-8") as out:
            out.write(json.dumps(line, ensure_ascii=False) + "\n")
        return line


def history_markdown(lines: list[dict], result: Callable[[dict], str | None] | None = None) -> str:
    """The scoring history's table (docs/performance.md): a row per scoring, the
    benchmark's jobs of one corpus, stage and protocol in one row (their dates, commits
    and count; lines without a protocol, in one row while what they scored is the same).
    ``result``: a row's result where its lines give none (a protocol's stage: its verdicts,
    from the stage's committed results), or None while there is none yet."""
    rows: list[dict] = []
    for line in lines:
        last = rows[-1] if rows else None
        same = ("corpus", "stage", "protocol_sha256")
        if (
            last is not None
            and not line.get("reconstructed")
            and not last.get("reconstructed")
            and all(last[k] == line.get(k) for k in same)
            and (line.get("protocol_sha256") or last["what"] == line.get("what"))
        ):
            last["dates"].append(line["date"][:10])
            last["commits"].append(line["commit"])
            last["whats"].append(line["what"])
            last["n"] += 1
            continue
        rows.append(
            {
                **line,
                "dates": [line["date"][:10]],
                "commits": [line["commit"]],
                "whats": [line["what"]],
                "n": 1,
            }
        )
    head = ["corpus", "date", "commit", "protocol", "what was scored", "what had changed"]
    head.append("result")
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        dates = sorted(set(r["dates"]))
        date = dates[0] if len(dates) == 1 else f"{dates[0]} to {dates[-1]}"
        commits = list(dict.fromkeys(r["commits"]))
        commit = ", ".join(commits[:3]) + (
            f" and {len(commits) - 3} more" if len(commits) > 3 else ""
        )
        protocol = (r.get("protocol_sha256") or "none")[:12]
        # a protocol's runs of one stage: the peers' lines add their own practice to ADL's
        whats = list(dict.fromkeys(r["whats"]))
        longest = max(whats, key=len)
        what = longest if all(w in longest for w in whats) else "; ".join(whats)
        what += f" ({r['n']} runs)" if r["n"] > 1 else ""
        if r.get("rescore_reason"):
            what += f"; scored again because: {r['rescore_reason']}"
        cells = [r["corpus"], date, commit, protocol, what, r.get("changed", "–")]
        found = r.get("result") or (result(r) if result is not None else None)
        cells.append(found or "–")
        out.append("| " + " | ".join(c.replace("|", "/") for c in cells) + " |")
    return "\n".join(out) + "\n"
