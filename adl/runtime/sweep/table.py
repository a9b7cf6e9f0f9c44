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

from adl.runtime.sweep.plan import Plan
from adl.runtime.sweep.significance import SIGNIFICANT, paired_test
from adl.runtime.sweep.spec import Spec
from adl.runtime.sweep.state import write_json, write_text

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
    "p_bleu",
    "delta_chrf",
    "p_chrf",
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
    values: dict[str, Any] = field(default_factory=dict)  # the COLUMNS

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


def build(plan: Plan, results: Path, hashes: dict[tuple[str, int], str] | None = None) -> Table:
    """The table from the committed result files of ``plan``'s spec under ``results``
    (results.py), the same wherever it is made. ``hashes``: what each (system, seed) must
    have been made from; a file made from something else counts as missing (None: any)."""
    from adl.runtime.sweep import results as res

    spec = plan.spec
    runs: dict[str, dict[int, dict[str, Any]]] = {s.name: {} for s in spec.systems}
    hyps: dict[tuple[str, int], list[str]] = {}
    missing = []
    for system in spec.systems:
        for seed in spec.seeds:
            path = res.record_path(results, spec, system.name, seed)
            found = res.read_record(path)
            want = None if hashes is None else hashes.get((system.name, seed))
            if found is None or (hashes is not None and found[0].get("hash") != want):
                missing.append(f"{system.name} seed {seed}")
                continue
            runs[system.name][seed], hyps[system.name, seed] = found
    refs = res.references(results, spec) or []
    rows = [
        Row(
            system.name,
            system.name == spec.baseline,
            system.decode_of,
            [str(f) for f in system.files],
            runs[system.name],
            spec.compared_with(system),
        )
        for system in spec.systems
    ]
    by_name = {r.system: r for r in rows}
    test_signature = ""
    for row in rows:
        v = row.values
        bleu = [r["bleu"] for _, r in sorted(row.runs.items())]
        chrf = [r["chrf"] for _, r in sorted(row.runs.items())]
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
            delta_bleu=None,
            p_bleu=None,
            delta_chrf=None,
            p_chrf=None,
            parameters=_first(row, "parameters"),
            train_tokens_per_s=row.mean("train_tokens_per_s"),
            decode_sentences_per_s=row.mean("decode_sentences_per_s"),
            train_peak_mib=row.mean("train_peak_mib"),
        )
        if row.against is None:
            continue
        base = by_name[row.against]
        seeds = sorted(set(row.runs) & set(base.runs))
        if not seeds or not refs:
            continue
        test = paired_test(
            [hyps[base.system, s] for s in seeds],
            [hyps[row.system, s] for s in seeds],
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
def write(table: Table) -> list[Path]:
    """results.md, results.csv and results.json; returns their paths (the pictures are
    :func:`adl.runtime.sweep.pictures.draw`'s)."""
    out = table.plan.out
    write_text(out / "results.md", markdown(table))
    write_text(out / "results.csv", to_csv(table))
    write_json(out / "results.json", table.to_json())
    return [out / "results.md", out / "results.csv", out / "results.json"]


def to_csv(table: Table) -> str:
    f = io.StringIO()
    w = csv.DictWriter(f, COLUMNS, extrasaction="ignore", lineterminator="\n")
    w.writeheader()
    for row in table.rows:
        w.writerow({k: ("" if row.values.get(k) is None else row.values[k]) for k in COLUMNS})
    return f.getvalue()


def corpus(spec: Spec) -> str:
    """The spec's training data in a few words: the Bible's pair and verse length, or the
    user's files."""
    d = spec.data
    if not d.bible:
        return f"your own, `{Path(d.train or '').name}.*`"  # the name only: no machine's folder
    verses = (
        "every verse" if d.max_words is None else f"verses of at most {d.max_words} words a side"
    )
    return f"the Bible {d.pair}, {verses}"


def markdown(table: Table, title: bool = True) -> str:
    """The table as Markdown: what ``adl sweep report`` prints and docs/experiments.md holds
    (there without the title), made from the result files alone: nothing in it depends on the
    machine that makes it."""
    from adl.runtime.sweep import results as res

    spec = table.plan.spec
    budget = " and ".join(
        x
        for x in (
            f"{spec.steps:,} updates" if spec.steps else "",
            f"{spec.minutes:g} minutes" if spec.minutes else "",
        )
        if x
    )
    beams = sorted({str(s.decode.get("beam", 1)) for s in spec.systems})
    cost = res.read_cost(table.results, spec)
    length = cost_length(cost)
    lines = [f"# Sweep `{spec.name}`", ""] if title else []
    if spec.description and title:
        lines += [spec.description.strip(), ""]
    test_set = f"{table.sentences:,} sentences" if table.sentences else "not read yet (no run done)"
    lines += [
        f"Corpus: {corpus(spec)}. Test set: {test_set}. Each run: {budget or 'the preset budget'}, "
        f"preset `{Path(spec.preset).stem}`; seeds {', '.join(map(str, spec.seeds))}; "
        f"decoded from the {spec.checkpoint} checkpoint with beam {'/'.join(beams)}.",
        "",
        "| system | seeds | BLEU | chrF | Δ BLEU | p | Δ chrF | p | paper | parameters | "
        "memory | train | greedy | beam |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for row in table.rows:
        v = row.values
        name = f"{row.system} (baseline)" if row.baseline else row.system
        if row.decode_of:
            name += f" = {row.decode_of} decoded"
        if row.vs(spec.baseline):
            name += f" (vs {row.against})"
        system = spec.system(row.system)
        paper = getattr(system, "paper", None)
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
                    str(paper) if paper is not None else "–",
                    _int(v["parameters"]),
                    *cost_cells(cost, row.system, length),
                ]
            )
            + " |"
        )
    signed = (
        f" Signatures: BLEU `{table.signatures['bleu']}`, chrF `{table.signatures['chrf']}`."
        if table.signatures["bleu"]
        else ""  # no run done: the result files will carry them
    )
    lines += [
        "",
        "- BLEU and chrF: sacrebleu on the detokenised translations, mean ± standard deviation "
        f"over the seeds.{signed}",
        "- Δ: the mean over seeds of the system's score minus the baseline's with the same "
        f"seed. p: {table.test_signature}, of the system's translations against the "
        "baseline's, the seeds both have concatenated (seed s against seed s); "
        f"p < {SIGNIFICANT} (bold) marks a difference unlikely to arise by chance."
        + (
            " A row marked (vs X) is measured against system X instead (its `against:`)."
            if any(row.vs(spec.baseline) for row in table.rows)
            else ""
        ),
        "- paper: the paper's own figure for the row (its data set and metric, not this one's).",
    ]
    if cost is None:
        lines.append("- Cost: not measured yet (`adl sweep` measures it when the runs are done).")
    else:
        w, m = cost["workload"], cost["machine"]
        lines.append(
            "- Cost, each a ratio to the baseline measured in the same run by adl.runtime.cost "
            f"(sentences of {length} tokens, random weights, the models taking turns "
            f"{w['rounds']} times, the median counts; {w['sentences']} sentences a decoding "
            "round): memory: the most bytes of tensors alive during a training "
            f"update of about {w['batch_tokens']:,} target tokens (below 1: less); train: "
            "training tokens per second; greedy, beam: decoding sentences per second, greedy "
            f"and beam {w['beam']} (above 1: faster). {m['threads']} CPU thread(s), "
            f"{m.get('gpu') or m['cpu']}, clock: {m.get('clock', 'perf_counter')}."
            + cost_spread(cost, length)
        )
    if any(row.decode_of for row in table.rows):
        lines.append(
            "- A system marked '= X decoded' trains nothing: it translates X's runs with its "
            "own decoding options, so its parameters and training cost are X's."
        )
    for note in table.notes:
        lines.append(f"- Note: {note}.")
    if table.missing:
        lines.append(f"- Not finished ({len(table.missing)}): {', '.join(table.missing)}.")
    return "\n".join(lines) + "\n"


def cost_length(cost: dict[str, Any] | None) -> int | None:
    """The sentence length the cost columns show (the first measured)."""
    if not cost:
        return None
    return int(cost["workload"]["lengths"][0])


def cost_cells(cost: dict[str, Any] | None, system: str, length: int | None) -> list[str]:
    """memory, train, greedy, beam: the system's ratios to the baseline, or dashes."""
    from adl.runtime.cost import FIGURES

    ratios = ((cost or {}).get("ratios") or {}).get(system, {}).get(str(length))
    if not ratios:
        return ["–"] * len(FIGURES)
    return [f"{ratios[f]:.2f}" for f in FIGURES]


def cost_spread(cost: dict[str, Any], length: int | None) -> str:
    """A sentence on how far a speed's rounds lie from their median (the widest of the
    table, training and decoding apart), or "" when there is one round."""
    from adl.runtime.cost import FIGURES, LOWER_IS_BETTER

    speeds = [f for f in FIGURES if f not in LOWER_IS_BETTER]  # memory is counted, not timed
    widest = {"training": 0.0, "decoding": 0.0}
    for by_length in cost.get("figures", {}).values():
        rounds = by_length.get(str(length), {}).get("rounds", {})
        for figure in speeds:
            values = rounds.get(figure, [])
            if len(values) < 2:
                continue
            kind = "training" if figure.startswith("train") else "decoding"
            middle = statistics.median(values)
            widest[kind] = max(widest[kind], max(abs(v / middle - 1) for v in values))
    if not any(widest.values()):
        return ""
    return (
        f" A speed's rounds lie within ±{100 * widest['training']:.0f} % of their median in "
        f"training and ±{100 * widest['decoding']:.0f} % in decoding (the widest of the "
        "table): the ratios carry noise of that order."
    )


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
