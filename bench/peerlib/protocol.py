"""A peer protocol: a YAML file, written and committed before any of its test sets is
scored, that says everything a run of ``bench/peers.py --protocol FILE`` does.

It names the corpora (each with the sha256 of its test reference file, checked before a run
scores it), the recipe search on the tuning corpora (the committed grid it reuses, the cells
it adds at each system's chosen dropout, and the rule that adds more where a system's best
still lies at the edge of what it was offered), the budgets (minutes, seeds, corpora), the
searches, the selection rules (the common rule and each peer's own practice), the metrics
and the test. Its sha256 (of the file's bytes) is recorded in every result and in every
ledger line; the options it fixes cannot be given beside it (``FIXED``).

``estimate`` gives the machine time a protocol needs, from the wall time of the committed
held-out rounds (their steps' seconds: training, validation, decoding).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

import yaml

# the command-line options a protocol fixes (dest names of bench/peers.py's parser)
FIXED = (
    "corpus",
    "langs",
    "minutes",
    "peers",
    "seeds",
    "recipes",
    "tune",
    "grid",
    "preset",
    "sets",
    "out",
    "results",
    "threads",
    "slots",
    "device",
    "beam",
    "keep_checkpoints",
    "restate",
)
SECTIONS = ("name", "corpora", "tuning", "budgets", "systems", "searches", "selection")
SECTIONS += ("metrics", "test", "batches", "results", "ledger", "command", "machine")


def sha256_of(path: Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


@dataclass(frozen=True)
class Corpus:
    name: str
    folder: str  # relative to the repository
    build: str  # the command that builds it
    test_sha256: str  # of FOLDER/test.tgt
    reference: str | None  # the committed copy of the test references (or None)


@dataclass(frozen=True)
class Budget:
    name: str
    minutes: float
    seeds: int
    corpora: tuple[str, ...]


@dataclass(frozen=True)
class Protocol:
    file: str  # as the repository names it
    sha256: str
    spec: dict  # the whole file
    corpora: dict[str, Corpus]
    budgets: tuple[Budget, ...]

    @property
    def systems(self) -> dict:
        return self.spec["systems"]

    @property
    def tuning(self) -> dict:
        return self.spec["tuning"]

    @property
    def beams(self) -> list[int]:
        return [int(b) for b in self.spec["searches"]["beams"]]

    def about(self, stage: str) -> dict:
        """What every result of ``stage`` records of the protocol."""
        return {"file": self.file, "sha256": self.sha256, "stage": stage}

    def results(self, stage: str, corpus: str) -> str:
        return self.spec["results"].format(stage=stage, corpus=corpus)


def load(path: Path, root: Path) -> Protocol:
    """Read and check a protocol file (ValueError: what is missing or wrong)."""
    path = Path(path)
    spec = yaml.safe_load(path.read_text(encoding="utf-8"))
    if not isinstance(spec, dict):
        raise ValueError(f"{path}: not a YAML mapping")
    missing = [s for s in SECTIONS if s not in spec]
    if missing:
        raise ValueError(f"{path}: no {', '.join(missing)}")
    corpora = {}
    for name, c in spec["corpora"].items():
        for key in ("folder", "build", "test_sha256"):
            if key not in c:
                raise ValueError(f"{path}: corpus {name} has no {key}")
        corpora[name] = Corpus(name, c["folder"], c["build"], c["test_sha256"], c.get("reference"))
    budgets = []
    for b in spec["budgets"]:
        unknown = [c for c in b["corpora"] if c not in corpora]
        if unknown:
            raise ValueError(f"{path}: budget {b['name']} names no corpus {', '.join(unknown)}")
        budgets.append(Budget(b["name"], float(b["minutes"]), int(b["seeds"]), tuple(b["corpora"])))
    if spec["systems"].get("adl") is None or not spec["systems"].get("peers"):
        raise ValueError(f"{path}: systems needs adl and peers")
    for key in ("corpora", "minutes", "seeds", "extension", "edges"):
        if key not in spec["tuning"]:
            raise ValueError(f"{path}: tuning has no {key}")
    shown = path.resolve()
    name = str(shown.relative_to(root)) if shown.is_relative_to(root) else str(path)
    return Protocol(name, sha256_of(path), spec, corpora, tuple(budgets))


def check_corpus(corpus: Corpus, root: Path) -> Path:
    """The corpus's folder, its test references checked against the protocol's sha256."""
    folder = root / corpus.folder
    found = sha256_of(folder / "test.tgt")
    if found != corpus.test_sha256:
        raise ValueError(
            f"{folder}/test.tgt has sha256 {found}, the protocol's {corpus.name} "
            f"{corpus.test_sha256}: not the test set the protocol was written for"
        )
    return folder


def check_signatures(expected: dict, found: dict) -> list[str]:
    """The metrics whose sacrebleu signature differs from the protocol's, the version aside
    (a newer sacrebleu scores alike; the results record the signatures they were made with)."""
    strip = lambda sig: "|".join(f for f in sig.split("|") if not f.startswith("version:"))
    return [m for m in expected if strip(expected[m]) != strip(found.get(m, ""))]


# --- the machine time a protocol needs, from committed rounds ---


def _jobs(folder: Path) -> list[dict]:
    return [json.loads(p.read_text()) for p in sorted(folder.glob("runs/*/seed*/*/result.json"))]


def measured(folders: list[tuple[Path, Path]]) -> dict:
    """Per system, from the committed held-out rounds of each (results folder, its test
    references): the seconds after the clock per training minute (its checkpoints'
    validations and averages), the other seconds outside training and decoding (start-up,
    data, the last checkpoint), and decoding seconds per reference word for greedy search
    and for a beam of 4."""
    per: dict[str, dict[str, list[float]]] = {}
    for folder, references in folders:
        words = len(Path(references).read_text(encoding="utf-8").split())
        for r in _jobs(folder):
            s = r["seconds"]
            found = per.setdefault(r["system"], {"valid": [], "rest": [], "greedy": [], "beam": []})
            valid = sum(v for k, v in s.items() if k.startswith(("valid", "average")))
            found["valid"].append(valid / (r["train_seconds"] / 60))
            decode = s.get("greedy", 0) + s.get("beam", 0)
            # start-up, data, the last checkpoint: the steps' wall less the clock's
            found["rest"].append(sum(s.values()) - valid - decode - r["train_seconds"])
            found["greedy"].append(s.get("greedy", 0) / words)
            found["beam"].append(s.get("beam", 0) / words)
    return {k: {m: sum(v) / len(v) for m, v in d.items()} for k, d in per.items()}


def job_seconds(m: dict, minutes: float, words: int, beams: list[int], models: int) -> float:
    """One job: training, validation, the rest, and ``models`` models decoding each beam
    (a beam's cost taken as proportional to its width)."""
    decode = sum(m["greedy"] if b == 1 else m["beam"] * b / 4 for b in beams) * words
    return 60 * minutes + m["valid"] * minutes + m["rest"] + models * decode


OWN_MODELS = {"adl": 1, "sockeye": 2, "fairseq": 3}  # the common rule's, and own practices'


def estimate(p: Protocol, root: Path, measured_from: list[tuple[Path, Path]]) -> dict:
    """Hours of the whole machine per stage: each round as long as its slowest job, the
    rounds one after another (two slots: ADL beside Sockeye, then ADL beside fairseq);
    decoding scaled by the words of each corpus's test references (the committed copy
    where the protocol names one, so that the estimate needs no corpus built)."""
    m = measured(measured_from)
    words = {
        n: len((root / (c.reference or f"{c.folder}/test.tgt")).read_text("utf-8").split())
        for n, c in p.corpora.items()
    }
    peers = p.systems["peers"]
    hours: dict[str, float] = {}
    for b in p.budgets:
        total = 0.0
        for corpus in b.corpora:
            seconds = {
                s: job_seconds(m[s], b.minutes, words[corpus], p.beams, OWN_MODELS[s])
                for s in ("adl", *peers)
            }
            total += b.seeds * sum(max(seconds["adl"], seconds[peer]) for peer in peers)
        hours[b.name] = total / 3600
    t = p.tuning
    systems = 1 + len(peers)  # every system, every extension cell, every tuning corpus
    jobs = len(t["extension"]) * systems * len(t["corpora"]) * int(t["seeds"])
    tune_job = max(job_seconds(m[s], float(t["minutes"]), 0, [], 0) for s in m)
    slots = int(p.systems.get("slots", 2))
    hours["tuning (the extension)"] = -(-jobs // slots) * tune_job / 3600
    edge_jobs = systems * len(t["corpora"]) * int(t["edges"]["steps"]) * len(t["edges"]["fields"])
    hours["tuning (edges, at most)"] = -(-edge_jobs // slots) * tune_job / 3600
    return hours
