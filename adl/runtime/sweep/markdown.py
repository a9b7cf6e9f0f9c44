"""A sweep's table as Markdown: what ``adl sweep report`` prints, results.md holds and
docs/experiments.md keeps (there without the title), made from the result files alone:
nothing in it depends on the machine that makes it; and the table's files (:func:`write`)."""

from __future__ import annotations

import statistics
from pathlib import Path
from typing import Any

from adl.runtime.sweep.cells import FEW_RUNS, p_cell, verdict_cell, within
from adl.runtime.sweep.seeding import FIRST_LOOK
from adl.runtime.sweep.significance import LEVEL
from adl.runtime.sweep.spec import Spec
from adl.runtime.sweep.state import write_json, write_text
from adl.runtime.sweep.table import Table, to_csv
from adl.runtime.sweep.verdicts import EQUIVALENT, LEVEL_BAND


def write(table: Table) -> list[Path]:
    """results.md, results.csv and results.json; returns their paths (the pictures are
    :func:`adl.runtime.sweep.pictures.draw`'s)."""
    out = table.plan.out
    write_text(out / "results.md", markdown(table))
    write_text(out / "results.csv", to_csv(table))
    write_json(out / "results.json", table.to_json())
    return [out / "results.md", out / "results.csv", out / "results.json"]


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
    steps = f"{spec.steps:,} updates" if spec.steps else ""
    if steps and spec.regime is not None:  # the budget's steps are the largest size's
        steps += " at the largest size, fewer at the smaller (equal passes; each size's below)"
    budget = " and ".join(
        x for x in (steps, f"{spec.minutes:g} minutes" if spec.minutes else "") if x
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
        "| system | seeds | BLEU | chrF | Δ BLEU [95 % interval] | seeds +/− | verdict | "
        "p runs | p sentences | Δ chrF [95 % interval] | paper | paper's Δ | reproduced | "
        "parameters | memory | train | greedy | beam |",
        "|---|---:|---:|---:|---:|---:|---|---:|---:|---:|---:|---:|---|---:|---:|---:|---:|---:|",
    ]
    for row in table.rows:
        v = row.values
        name = f"{row.system} (baseline)" if row.baseline else row.system
        if row.decode_of:
            name += f" = {row.decode_of} decoded"
        if row.vs(spec.baseline):
            name += f" (vs {row.against})"
        paper = v["paper"]
        lines.append(
            "| "
            + " | ".join(
                [
                    name,
                    f"{v['seeds']}/{row.planned}",
                    _pm(v["bleu_mean"], v["bleu_std"]),
                    _pm(v["chrf_mean"], v["chrf_std"]),
                    within(v["delta_bleu"], v["bleu_low"], v["bleu_high"]),
                    _sides(v),
                    verdict_cell(v["verdict"], v["bleu_low"]),
                    p_cell(v["p_bleu"]),
                    p_cell(v["p_bleu_sentences"]),
                    within(v["delta_chrf"], v["chrf_low"], v["chrf_high"]),
                    str(paper) if paper is not None else "–",
                    _claim(v),
                    v["reproduced"] or "",
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
        "- Δ: the mean of the system's runs minus the mean of the baseline's. The interval "
        f"({100 * LEVEL:.0f} %) and p runs: the unit is the training run: Welch's t over the "
        "runs of the two systems, with the test set's own resampling variance added "
        '(docs/experiments.md, "The significance test"); – where a system has one run. '
        "seeds +/−: the seeds both have on which the system scores above / below the "
        "baseline. verdict: ahead or behind where the interval excludes 0, tie where it "
        f"holds 0 (the seeds cannot tell), {FEW_RUNS} where a side has one run. p sentences: "
        f"{table.test_signature} of the seeds' outputs concatenated: it measures the test "
        "set's noise only, not the training's, and is no verdict."
        + (
            " A row marked (vs X) is measured against system X instead (its `against:`)."
            if any(row.vs(spec.baseline) for row in table.rows)
            else ""
        ),
        "- paper: the paper's own figure for the row (its data set and metric, not this one's); "
        "paper's Δ: its figure minus that of the system compared with, and its claim: "
        f"higher or lower beyond ±{LEVEL_BAND:g} BLEU, level within (or as the spec's "
        "`claim:` states). reproduced: an ordering where our interval lies on the paper's "
        f"side of 0, a level where it lies within ±{EQUIVALENT:g} BLEU; not reproduced: on "
        f"the other side of 0, or beyond ±{EQUIVALENT:g} for a level; cannot tell otherwise.",
    ]
    more = _seeds_note(table)
    if more:
        lines.append(more)
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
    if any(s.of for s in spec.systems):
        from adl.runtime.sweep import regime_report

        lines.append(
            "- A row NAME@K is system NAME trained on the first K pairs of the shuffled training "
            "set with the updates scaled to K (equal passes); NAME@lrR searches its peak rate "
            "(the spec's `regime:`)."
        )
        lines += regime_report.markdown(table)
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


def _seeds_note(table: Table) -> str:
    """What decided the seeds of rows that have more than the spec's."""
    spec = table.plan.spec
    grown = [row.system for row in table.rows if row.planned > len(spec.seeds)]
    if not grown and not spec.headline:
        return ""
    budget = max(spec.budget(s) for s in spec.systems)
    text = f"- Seeds: {len(spec.seeds)} a system"
    if spec.headline:
        text += (
            f"; the headline pair{'s' if len(spec.headline) > 1 else ''} "
            f"({', '.join(spec.headline)} and the system compared with) {budget}"
        )
    text += (
        f"; a row whose {100 * FIRST_LOOK:.0f} % interval held 0 at the spec's seeds gets "
        "seeds up to its budget (`seed_budget:`)"
    )
    return text + (f": {', '.join(grown)} have more." if grown else ".")


def _sides(v: dict[str, Any]) -> str:
    if v["seeds_higher"] is None:
        return ""
    return f"{v['seeds_higher']}/{v['seeds_lower']}"


def _claim(v: dict[str, Any]) -> str:
    if not v["claim"]:
        return ""
    if v["paper_delta"] is None:
        return v["claim"]
    return f"{v['paper_delta']:+.2f} ({v['claim']})"


def _pm(mean: float | None, std: float | None) -> str:
    if mean is None:
        return "–"
    return f"{mean:.2f} ± {std:.2f}" if std is not None else f"{mean:.2f}"


def _signed(value: float | None) -> str:
    return "" if value is None else f"{value:+.2f}"


def _int(value: float | None) -> str:
    return "–" if value is None else f"{round(value):,}"


def _num(value: float | None, digits: int) -> str:
    return "–" if value is None else f"{value:,.{digits}f}"
