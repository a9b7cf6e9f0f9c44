"""A sweep's results as files meant to be committed: what the table is made from, on any
machine, without the run folders.

RESULTS/SPEC/SYSTEM/seedN.json   one finished (system, seed): scores with sacrebleu's
                                 signatures, parameters, updates, wall time, the run's own
                                 throughput and memory, the machine, the ADL commit, the hash
                                 of what the outcome depends on, the translations' hash
RESULTS/SPEC/SYSTEM/seedN.hyp    its test translations (the paired test reads them)
RESULTS/SPEC/test.ref            the test references they were scored against
RESULTS/SPEC/cost.json           the cost columns: adl.runtime.cost over the spec's systems

RESULTS is docs/results/ of the ADL source tree for a bundled spec run from a source
checkout, else SWEEP/results; ``adl sweep --results DIR`` names another, and the sweep folder
remembers it (SWEEP/sweep.json), so that ``--status``, ``report`` and ``curves`` of the folder,
and the next ``adl sweep`` in it, read and write there without being told. A (system, seed)
whose file is there with the same hash is done: ``adl sweep`` trains and decodes nothing for
it, even on a fresh machine with no run folder.
"""

from __future__ import annotations

import hashlib
import json
import platform
import subprocess
from pathlib import Path
from typing import Any

from adl.runtime.config import Config
from adl.runtime.sweep.plan import fingerprint
from adl.runtime.sweep.spec import ROOT, SWEEPS, Spec
from adl.runtime.sweep.state import SWEEP, read_json, write_text

REFERENCES = "test.ref"
COST = "cost.json"


def root(spec: Spec, out: Path, override: str | Path | None = None) -> Path:
    """Where the spec's results are kept (see the module's docstring): ``override``, else
    where an earlier ``--results`` put them for this sweep folder, else the default."""
    if override is not None:
        return Path(override).resolve()
    named = remembered(out)
    if named is not None:
        return named
    bundled = spec.path.resolve().parent == SWEEPS.resolve()
    if bundled and (ROOT / ".git").exists() and (ROOT / "docs").is_dir():
        return ROOT / "docs" / "results"
    return out / "results"


def remembered(out: Path) -> Path | None:
    """The results folder a ``--results`` named for the sweep folder ``out``, if one did."""
    named = (read_json(out / SWEEP) or {}).get("results")
    return Path(named) if isinstance(named, str) else None


def folder(results: Path, spec: Spec) -> Path:
    return results / spec.name


def record_path(results: Path, spec: Spec, system: str, seed: int) -> Path:
    return folder(results, spec) / system / f"seed{seed}.json"


def digest(data: Any) -> str:
    return hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()


def outcome_hash(config: Config, key: dict[str, Any]) -> str:
    """What one (system, seed)'s result depends on: its training settings and files (the
    seed among them) and its decoding (search, loader options, checkpoint, test files)."""
    return digest({"train": fingerprint(config), "decode": key})


def commit() -> dict[str, Any]:
    """The ADL source tree's commit (and whether it had changes), or the package version."""
    try:
        sha = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True, check=True
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        return {"commit": sha, "dirty": bool(dirty)}
    except (OSError, subprocess.CalledProcessError):
        from importlib.metadata import version

        return {"version": version("adl")}


def machine(device: str, threads: int) -> dict[str, Any]:
    from adl.runtime.cost import machine as cost_machine

    return {**cost_machine(device, threads), "os": platform.platform()}


def write_record(path: Path, record: dict[str, Any], hyps: list[str]) -> None:
    """The result file and its translations (translations first: a result file is there
    only with its translations)."""
    text = "".join(h + "\n" for h in hyps)
    write_text(path.with_suffix(".hyp"), text)
    record = {**record, "hyp_sha256": hashlib.sha256(text.encode()).hexdigest()}
    write_text(path, json.dumps(record, indent=1, sort_keys=True) + "\n")


def write_references(results: Path, spec: Spec, refs: list[str]) -> None:
    path = folder(results, spec) / REFERENCES
    text = "".join(r + "\n" for r in refs)
    if not path.is_file() or path.read_text(encoding="utf-8") != text:
        write_text(path, text)


def matches(path: Path, hash_: str) -> bool:
    record = read_json(path)
    return record is not None and record.get("hash") == hash_ and path.with_suffix(".hyp").is_file()


def read_record(path: Path) -> tuple[dict[str, Any], list[str]] | None:
    """A result file and its translations, or None when either is missing."""
    record = read_json(path)
    hyp = path.with_suffix(".hyp")
    if record is None or not hyp.is_file():
        return None
    return record, hyp.read_text(encoding="utf-8").splitlines()


def references(results: Path, spec: Spec) -> list[str] | None:
    path = folder(results, spec) / REFERENCES
    return path.read_text(encoding="utf-8").splitlines() if path.is_file() else None


def read_cost(results: Path, spec: Spec) -> dict[str, Any] | None:
    return read_json(folder(results, spec) / COST)
