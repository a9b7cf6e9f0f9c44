"""The sweep's table: per system, test BLEU and chrF (mean ± std over seeds); the difference to
the baseline (or the row's ``against:``) with its interval over the runs, the seeds on each
side, the verdict, and the sentence-only test beside it (significance.py); the paper's claim
and whether it is reproduced (verdicts.py); the cost columns. Written as results.md
(markdown.py), results.csv and results.json, and drawn (pictures/bleu.png,
pictures/bleu_speed.png).
"""

from __future__ import annotations

import csv
import io
import statistics
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from adl.runtime.sweep.plan import Plan
from adl.runtime.sweep.seeding import decide
from adl.runtime.sweep.sentences import Sentences
from adl.runtime.sweep.significance import LEVEL, compare_runs
from adl.runtime.sweep.verdicts import claim_of, reproduced

COLUMNS = (
    "system",
    "baseline",
    "against",
    "decode_of",
    "seeds",
    "bleu_mean",
    "bleu_std",
    "chrf_mean",
    "chrf_std",
    "delta_bleu",
    "bleu_low",
    "bleu_high",
    "p_bleu",
    "seeds_higher",
    "seeds_lower",
    "verdict",
    "delta_chrf",
    "chrf_low",
    "chrf_high",
    "p_chrf",
    "p_bleu_sentences",
    "p_chrf_sentences",
    "paper",
    "paper_delta",
    "claim",
    "reproduced",
    "parameters",
    "train_tokens_per_s",
    "decode_sentences_per_s",
    "train_peak_mib",
)


@dataclass
class Row:
    system: str
    baseline: bool
    decode_of: str | None
    files: list[str]
    runs: dict[int, dict[str, Any]]  # seed -> result.json
    against: str | None = None  # the system its Δ and p compare with (None: the baseline row)
    planned: int = 0  # the seeds it has in the plan
    values: dict[str, Any] = field(default_factory=dict)  # the COLUMNS
    comparison: dict[str, Any] | None = None  # the intervals in full (results.json)

    def vs(self, baseline: str) -> str | None:
        """The system the row is compared with where it is not the baseline (shown as
        "(vs X)"), else None."""
        return self.against if self.against not in (None, baseline) else None

    def mean(self, key: str) -> float | None:
        found = [r[key] for r in self.runs.values() if r.get(key) is not None]
        return statistics.fmean(found) if found else None


@dataclass
class Table:
    plan: Plan
    rows: list[Row]
    notes: list[str]
    signatures: dict[str, str]
    test_signature: str
    missing: list[str]
    sentences: int
    results: Path  # the committed result files it was made from

    def to_json(self) -> dict[str, Any]:
        spec = self.plan.spec
        return {
            "sweep": spec.name,
            "description": spec.description,
            "spec": str(spec.path.resolve()),
            "out": str(self.plan.out),
            "data": {
                "train": list(self.plan.data.train),
                "test": list(self.plan.data.test),
                "test_sentences": self.sentences,
            },
            "budget": {"steps": spec.steps or None, "minutes": spec.minutes or None},
            "seeds": spec.seeds,
            "seed_budget": spec.seed_budget or len(spec.seeds),
            "headline": spec.headline,
            "seeds_of": {row.system: sorted(row.runs) for row in self.rows},
            "baseline": spec.baseline,
            "checkpoint": spec.checkpoint,
            "signatures": self.signatures,
            "significance": {
                "runs": {
                    "test": "Welch's t over the runs, with the test set's resampling variance "
                    "(adl/runtime/sweep/significance.py)",
                    "level": LEVEL,
                },
                "sentences": {
                    "test": spec.test,
                    "samples": spec.samples,
                    "signature": self.test_signature,
                    "pairing": "the outputs of the seeds both systems have, concatenated in "
                    "seed order",
                },
            },
            "systems": [
                {
                    **row.values,
                    "comparison": row.comparison,
                    "files": row.files,
                    "runs": {str(seed): _run_record(r) for seed, r in sorted(row.runs.items())},
                }
                for row in self.rows
            ],
            "missing": self.missing,
            "notes": self.notes,
        }


def _run_record(result: dict[str, Any]) -> dict[str, Any]:
    keep = (
        "bleu",
        "chrf",
        "bleu_text",
        "chrf_text",
        "steps",
        "stopped_by",
        "parameters",
        "train_tokens_per_s",
        "train_seconds",
        "decode_sentences_per_s",
        "decode_seconds",
        "train_peak_mib",
        "decode_peak_mib",
        "device",
        "threads",
        "decode",
        "run",
    )
    return {k: result.get(k) for k in keep}


def build(plan: Plan, results: Path, hashes: dict[tuple[str, int], str] | None = None) -> Table:
    """The table from the committed result files of ``plan``'s spec under ``results``
    (results.py), the same wherever it is made. Each system's seeds are those the committed
    results decide (seeding.py). ``hashes``: what each (system, seed) must have been made
    from; a file made from something else counts as missing (None: any)."""
    from adl.runtime.sweep import results as res

    spec = plan.spec
    known = (lambda system, seed: hashes.get((system, seed))) if hashes is not None else None
    refs = res.references(results, spec) or []
    sentences = Sentences(refs)
    seeds = decide(spec, results, known, sentences if refs else None)
    runs: dict[str, dict[int, dict[str, Any]]] = {s.name: {} for s in spec.systems}
    hyps: dict[tuple[str, int], list[str]] = {}
    missing = []
    for system in spec.systems:
        for seed in seeds[system.name]:
            path = res.record_path(results, spec, system.name, seed)
            found = res.read_record(path)
            want = None if hashes is None else hashes.get((system.name, seed))
            if found is None or (hashes is not None and found[0].get("hash") != want):
                missing.append(f"{system.name} seed {seed}")
                continue
            runs[system.name][seed], hyps[system.name, seed] = found
    rows = [
        Row(
            system.name,
            system.name == spec.baseline,
            system.decode_of,
            [str(f) for f in system.files],
            runs[system.name],
            spec.compared_with(system),
            len(seeds[system.name]),
        )
        for system in spec.systems
    ]
    by_name = {r.system: r for r in rows}
    test_signature = ""
    for row in rows:
        v = row.values
        bleu = [r["bleu"] for _, r in sorted(row.runs.items())]
        chrf = [r["chrf"] for _, r in sorted(row.runs.items())]
        spec_row = spec.system(row.system)
        assert spec_row is not None  # every row is a system of the spec
        v.update(dict.fromkeys(COLUMNS))
        v.update(
            system=row.system,
            baseline=row.baseline,
            against=row.against,
            decode_of=row.decode_of,
            seeds=len(row.runs),
            bleu_mean=_mean(bleu),
            bleu_std=_std(bleu),
            chrf_mean=_mean(chrf),
            chrf_std=_std(chrf),
            paper=spec_row.paper,
            parameters=_first(row, "parameters"),
            train_tokens_per_s=row.mean("train_tokens_per_s"),
            decode_sentences_per_s=row.mean("decode_sentences_per_s"),
            train_peak_mib=row.mean("train_peak_mib"),
        )
        if row.against is None:
            continue
        other = spec.system(row.against)
        claim = claim_of(spec_row.paper, other.paper if other else None, spec_row.claim)
        v.update(claim=claim.kind if claim else None, paper_delta=claim.delta if claim else None)
        base = by_name[row.against]
        if not row.runs or not base.runs or not refs:
            continue
        compared = compare_runs(
            {s: hyps[base.system, s] for s in base.runs},
            {s: hyps[row.system, s] for s in row.runs},
            sentences,
            sentence_test=spec.test,
            sentence_samples=spec.samples,
        )
        b, c = compared.bleu, compared.chrf
        higher, lower = b.favour
        v.update(
            delta_bleu=b.delta,
            bleu_low=b.low,
            bleu_high=b.high,
            p_bleu=b.p,
            seeds_higher=higher,
            seeds_lower=lower,
            verdict=b.verdict,
            delta_chrf=c.delta,
            chrf_low=c.low,
            chrf_high=c.high,
            p_chrf=c.p,
            reproduced=reproduced(claim, b.low, b.high),
        )
        if compared.sentences is not None:
            test_signature = compared.sentences.signature
            sent = compared.sentences
            v.update(p_bleu_sentences=sent.bleu_p, p_chrf_sentences=sent.chrf_p)
        row.comparison = {"bleu": b.to_dict(), "chrf": c.to_dict()}
    first = next((r for row in rows for r in row.runs.values()), {})
    signatures = {"bleu": first.get("bleu_signature", ""), "chrf": first.get("chrf_signature", "")}
    kind = "paired bootstrap" if spec.test == "bs" else "approximate randomization"
    return Table(
        plan,
        rows,
        _notes(rows),
        signatures,
        test_signature or f"{kind} (sacrebleu {spec.test}:{spec.samples})",
        missing,
        len(refs),
        results,
    )


def _mean(values: list[float]) -> float | None:
    return statistics.fmean(values) if values else None


def _std(values: list[float]) -> float | None:
    return statistics.stdev(values) if len(values) > 1 else None


def _first(row: Row, key: str) -> Any:
    return next((r[key] for r in row.runs.values() if r.get(key) is not None), None)


def _notes(rows: list[Row]) -> list[str]:
    """What makes the cost columns less comparable than they should be, said plainly."""
    runs = [r for row in rows for r in row.runs.values()]
    notes = []
    for key, what in (("device", "devices"), ("threads", "CPU thread counts")):
        seen = sorted({str(r.get(key)) for r in runs})
        if len(seen) > 1:
            notes.append(f"the runs were measured with different {what} ({', '.join(seen)})")
    stopped = sorted({str(r.get("stopped_by")) for r in runs if r.get("stopped_by")})
    if len(stopped) > 1:
        notes.append(f"the runs stopped for different reasons ({', '.join(stopped)})")
    return notes


# --- writing --------------------------------------------------------------------------------
def to_csv(table: Table) -> str:
    f = io.StringIO()
    w = csv.DictWriter(f, COLUMNS, extrasaction="ignore", lineterminator="\n")
    w.writeheader()
    for row in table.rows:
        w.writerow({k: ("" if row.values.get(k) is None else row.values[k]) for k in COLUMNS})
    return f.getvalue()
