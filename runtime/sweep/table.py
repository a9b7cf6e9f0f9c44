"""The sweep's table: per system, test BLEU and chrF (mean ± std over seeds), the difference to
the baseline with a paired significance test, and the cost columns; written as results.md,
results.csv and results.json, and drawn (pictures/bleu.png, pictures/bleu_speed.png).
"""

from __future__ import annotations

import csv
import io
import statistics
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..lines import read_lines
from .plan import Plan, decoded
from .significance import paired_test
from .state import HYP, RESULT, read_json, write_json, write_text

COLUMNS = (
    "system",
    "baseline",
    "decode_of",
    "seeds",
    "bleu_mean",
    "bleu_std",
    "chrf_mean",
    "chrf_std",
    "delta_bleu",
    "p_bleu",
    "delta_chrf",
    "p_chrf",
    "parameters",
    "train_tokens_per_s",
    "decode_sentences_per_s",
    "train_peak_mib",
)
SIGNIFICANT = 0.05


@dataclass
class Row:
    system: str
    baseline: bool
    decode_of: str | None
    files: list[str]
    runs: dict[int, dict[str, Any]]  # seed -> result.json
    values: dict[str, Any] = field(default_factory=dict)  # the COLUMNS

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
            "baseline": spec.baseline,
            "checkpoint": spec.checkpoint,
            "signatures": self.signatures,
            "significance": {
                "test": spec.test,
                "samples": spec.samples,
                "signature": self.test_signature,
                "pairing": "the outputs of the seeds both systems have, concatenated in seed order",
            },
            "systems": [
                {
                    **row.values,
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


def build(plan: Plan) -> Table:
    """Read every finished result of ``plan`` and compute the table."""
    spec = plan.spec
    results: dict[str, dict[int, dict[str, Any]]] = {s.name: {} for s in spec.systems}
    missing = []
    for decoding in plan.decodings():
        result = read_json(decoding.folder / RESULT)
        if result and decoded(decoding, plan):
            results[decoding.system][decoding.seed] = result
        else:
            missing.append(f"{decoding.system} seed {decoding.seed}")
    refs = read_lines(plan.data.test[1], allow_empty=True)
    if spec.data.test_max:
        refs = refs[: spec.data.test_max]
    rows = []
    for system in spec.systems:
        files = [str(f) for f in system.files]
        rows.append(
            Row(
                system.name,
                system.name == spec.baseline,
                system.decode_of,
                files,
                results[system.name],
            )
        )
    base = next(r for r in rows if r.baseline)
    test_signature = ""
    for row in rows:
        v = row.values
        bleu = [r["bleu"] for _, r in sorted(row.runs.items())]
        chrf = [r["chrf"] for _, r in sorted(row.runs.items())]
        v.update(
            system=row.system,
            baseline=row.baseline,
            decode_of=row.decode_of,
            seeds=len(row.runs),
            bleu_mean=_mean(bleu),
            bleu_std=_std(bleu),
            chrf_mean=_mean(chrf),
            chrf_std=_std(chrf),
            delta_bleu=None,
            p_bleu=None,
            delta_chrf=None,
            p_chrf=None,
            parameters=_first(row, "parameters"),
            train_tokens_per_s=row.mean("train_tokens_per_s"),
            decode_sentences_per_s=row.mean("decode_sentences_per_s"),
            train_peak_mib=row.mean("train_peak_mib"),
        )
        if row.baseline:
            continue
        seeds = sorted(set(row.runs) & set(base.runs))
        if not seeds:
            continue
        test = paired_test(
            [read_lines(plan.folder(base.system, s) / HYP, allow_empty=True) for s in seeds],
            [read_lines(plan.folder(row.system, s) / HYP, allow_empty=True) for s in seeds],
            refs,
            spec.test,
            spec.samples,
        )
        test_signature = test.signature
        v.update(
            delta_bleu=statistics.fmean(row.runs[s]["bleu"] - base.runs[s]["bleu"] for s in seeds),
            p_bleu=test.bleu_p,
            delta_chrf=statistics.fmean(row.runs[s]["chrf"] - base.runs[s]["chrf"] for s in seeds),
            p_chrf=test.chrf_p,
            paired_seeds=seeds,
        )
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
def write(table: Table) -> list[Path]:
    """results.md, results.csv, results.json and the pictures; returns their paths."""
    out = table.plan.out
    write_text(out / "results.md", markdown(table))
    write_text(out / "results.csv", to_csv(table))
    write_json(out / "results.json", table.to_json())
    from .pictures import draw

    return [out / "results.md", out / "results.csv", out / "results.json", *draw(table)]


def to_csv(table: Table) -> str:
    f = io.StringIO()
    w = csv.DictWriter(f, COLUMNS, extrasaction="ignore", lineterminator="\n")
    w.writeheader()
    for row in table.rows:
        w.writerow({k: ("" if row.values.get(k) is None else row.values[k]) for k in COLUMNS})
    return f.getvalue()


def markdown(table: Table) -> str:
    spec, plan = table.plan.spec, table.plan
    budget = " and ".join(
        x
        for x in (
            f"{spec.steps:,} updates" if spec.steps else "",
            f"{spec.minutes:g} minutes" if spec.minutes else "",
        )
        if x
    )
    beams = sorted({str(s.decode.get("beam", 1)) for s in spec.systems})
    lines = [f"# Sweep `{spec.name}`", ""]
    if spec.description:
        lines += [spec.description.strip(), ""]
    lines += [
        f"Test set: `{plan.data.test[0]}` → `{Path(plan.data.test[1]).name}`, "
        f"{table.sentences:,} sentences. Each run: {budget or 'the preset budget'}, "
        f"preset `{Path(spec.preset).stem}`; seeds {', '.join(map(str, spec.seeds))}; "
        f"decoded from the {spec.checkpoint} checkpoint with beam {'/'.join(beams)}.",
        "",
        "| system | seeds | BLEU | chrF | Δ BLEU | p | Δ chrF | p | parameters | "
        "train tok/s | decode sent/s | peak MiB |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for row in table.rows:
        v = row.values
        name = f"{row.system} (baseline)" if row.baseline else row.system
        if row.decode_of:
            name += f" = {row.decode_of} decoded"
        lines.append(
            "| "
            + " | ".join(
                [
                    name,
                    f"{v['seeds']}/{len(spec.seeds)}",
                    _pm(v["bleu_mean"], v["bleu_std"]),
                    _pm(v["chrf_mean"], v["chrf_std"]),
                    _signed(v["delta_bleu"]),
                    _p(v["p_bleu"]),
                    _signed(v["delta_chrf"]),
                    _p(v["p_chrf"]),
                    _int(v["parameters"]),
                    _int(v["train_tokens_per_s"]),
                    _num(v["decode_sentences_per_s"], 1),
                    _int(v["train_peak_mib"]),
                ]
            )
            + " |"
        )
    first = next((r for row in table.rows for r in row.runs.values()), {})
    lines += [
        "",
        "- BLEU and chrF: sacrebleu on the detokenised translations, mean ± standard deviation "
        f"over the seeds. Signatures: BLEU `{table.signatures['bleu']}`, chrF "
        f"`{table.signatures['chrf']}`.",
        "- Δ: the mean over seeds of the system's score minus the baseline's with the same "
        f"seed. p: {table.test_signature}, of the system's translations against the "
        "baseline's, the seeds both have concatenated (seed s against seed s); "
        f"p < {SIGNIFICANT} marks a difference unlikely to arise by chance.",
        "- Cost, the mean over seeds, measured the same way for every run: parameters of the "
        "trained model; train tok/s: target tokens per second over the training updates "
        "(validation and checkpoints left out); decode sent/s: test sentences per second, "
        "batched, the model already loaded; peak MiB: while training, "
        f"{first.get('memory', 'peak memory')}. Device: "
        f"{', '.join(sorted({str(r.get('device')) for row in table.rows for r in row.runs.values()})) or '-'}"
        f"; CPU threads per run: "
        f"{', '.join(sorted({str(r.get('threads')) for row in table.rows for r in row.runs.values()})) or '-'}.",
    ]
    if any(row.decode_of for row in table.rows):
        lines.append(
            "- A system marked '= X decoded' trains nothing: it translates X's runs with its "
            "own decoding options, so its parameters, training speed and memory are X's."
        )
    for note in table.notes:
        lines.append(f"- Note: {note}.")
    if table.missing:
        lines.append(
            f"- Not finished ({len(table.missing)}): {', '.join(table.missing)} "
            "(`adl sweep --status` says why)."
        )
    return "\n".join(lines) + "\n"


def _pm(mean: float | None, std: float | None) -> str:
    if mean is None:
        return "–"
    return f"{mean:.2f} ± {std:.2f}" if std is not None else f"{mean:.2f}"


def _signed(value: float | None) -> str:
    return "" if value is None else f"{value:+.2f}"


def _p(value: float | None) -> str:
    if value is None:
        return ""
    text = f"{value:.3f}"
    return f"**{text}**" if value < SIGNIFICANT else text


def _int(value: float | None) -> str:
    return "–" if value is None else f"{round(value):,}"


def _num(value: float | None, digits: int) -> str:
    return "–" if value is None else f"{value:,.{digits}f}"
