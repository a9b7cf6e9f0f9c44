"""``adl search report``: the best programs of a search (or its Pareto front) as ADL text with
their scores and costs, and a picture: BLEU against cost, the front drawn, the papers'
hand-designed architectures marked where the search trained them.

A paper's architecture is recognised by what it builds, not by how it is written: its files
(``architectures/``, at the search's sizes and variables) and a trial's program are the same
point when their checked networks have the same layers, arguments, sizes and repeats.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from adl.runtime.docblocks import pattern, rewrite
from adl.runtime.search.programs import structure
from adl.runtime.search.spec import OBJECTIVES, load, optuna_module
from adl.runtime.search.study import open_study, spent, storage_url
from adl.runtime.search.trial import first_files, trial_config

BLOCK = pattern("adl search report", r"\S+")
ARCHITECTURES = Path(__file__).resolve().parents[3] / "architectures"  # the source tree's
# The papers' architectures marked in the picture: label | encoder | decoder (architectures/)
PAPERS = """
Transformer | transformer.enc.adl | transformer.dec.adl
HC-SA (You 2020) | you2020/hc_sa.enc.adl | you2020/hc_sa.dec.adl
HC-ALL (You 2020) | you2020/hc_sa.enc.adl | you2020/hc_all.dec.adl
hard dec (Xu 2020) | xu2020/base.enc.adl | xu2020/hard_dec_self_cross.dec.adl
8F (Raganato 2020) | raganato2020/8f.enc.adl | transformer.dec.adl
RNN dec (Domhan 2018) | domhan2018/table5_self_att.enc.adl | domhan2018/table5_rnn.dec.adl
CNN dec (Domhan 2018) | domhan2018/table5_self_att.enc.adl | domhan2018/table5_cnn.dec.adl
"""


@dataclass
class Row:
    trial: int
    program: str
    values: dict[str, float]  # the objectives, and the costs measured
    encoder: str
    decoder: str
    paper: str | None = None  # the paper's architecture this program is


@dataclass
class Report:
    folder: Path
    objectives: list[str]
    rows: list[Row]  # every trial trained to the end, best BLEU first
    best: list[Row]  # the best (one objective) or the Pareto front (two)
    counts: dict[str, int] = field(default_factory=dict)
    hours: float = 0.0  # the trials' own wall time, summed (see :func:`spent`)
    text: str = ""
    files: list[Path] = field(default_factory=list)


def report(
    folder: str | Path, *, storage: str | None = None, top: int = 5, write: bool = True
) -> Report:
    """The report of a search folder; writes ``report.md``, ``report.json`` and
    ``report.png`` there (``write=False``: nothing written)."""
    optuna = optuna_module()
    folder = Path(folder)
    spec = load(folder)
    study = open_study(spec, storage_url(folder, storage))
    trials = study.get_trials(deepcopy=False)
    states = optuna.trial.TrialState
    config = trial_config(spec, folder, first_files(folder), 1)
    papers = _papers(config)
    rows = []
    for t in trials:
        if t.state != states.COMPLETE or "skipped" in t.user_attrs:
            continue
        values = {**t.user_attrs.get("costs", {}), **dict(zip(spec.objectives, t.values))}
        enc, dec = t.user_attrs["enc"], t.user_attrs["dec"]
        rows.append(Row(t.number, t.user_attrs["program"], values, enc, dec))
    for row in rows:
        row.paper = papers.get(structure(row.encoder, row.decoder, config) or "")
    rows.sort(key=lambda r: -r.values["bleu"])
    if len(spec.objectives) == 1:
        best = rows[:top]
    else:
        front = {t.number for t in study.best_trials}
        best = [r for r in rows if r.trial in front]
    own = [t for t in trials if "skipped" not in t.user_attrs]
    counts = {s.name.lower(): sum(t.state == s for t in own) for s in states}
    counts["trained"] = counts["complete"] + counts["pruned"]
    counts["skipped"] = len(trials) - len(own)
    result = Report(folder, list(spec.objectives), rows, best, counts, spent(own))
    result.text = _markdown(result, spec.objectives)
    if not write:
        return result
    paths = [folder / "report.md", folder / "report.json"]
    paths[0].write_text(result.text, encoding="utf-8")
    paths[1].write_text(json.dumps(_json(result), indent=2) + "\n", encoding="utf-8")
    if rows:
        paths.append(draw(result, folder / "report.png"))
    result.files = paths
    return result


def _papers(config: Any) -> dict[str, str]:
    """The papers' architectures at the search's sizes: structure key -> label."""
    found: dict[str, str] = {}
    for line in PAPERS.strip().splitlines():
        label, enc, dec = (part.strip() for part in line.split("|"))
        paths = ARCHITECTURES / enc, ARCHITECTURES / dec
        if all(p.is_file() for p in paths):
            texts = [p.read_text(encoding="utf-8") for p in paths]
            key = structure(texts[0], texts[1], config)
            if key is not None:
                found.setdefault(key, label)
    return found


def _cost_axis(objectives: list[str]) -> str:
    return objectives[1] if len(objectives) > 1 else "params"


def update_doc(path: str | Path, write: bool = True) -> list[str]:
    """Rewrite every ``<!-- adl search report FOLDER -->`` block of the document at ``path``
    (FOLDER relative to the document, as a link in it would be) from FOLDER's study; returns
    the folders whose block changed (``write=False``: a check, nothing written)."""
    doc = Path(path)

    def fill(m: Any) -> str:
        found = report(doc.parent / m["args"], write=False)
        return _markdown(found, found.objectives, title=False)

    return rewrite(doc, BLOCK, fill, write)


def _markdown(r: Report, objectives: list[str], title: bool = True) -> str:
    """The report as Markdown: a title and a section a program, or (a document's block,
    under a section of the document) no title and the programs' sections one level down."""
    axis = _cost_axis(objectives)
    what = "Pareto front" if len(objectives) > 1 else f"best {len(r.best)}"
    c = r.counts
    head = [f"# Search {r.folder.name}: the {what}", ""] if title else []
    lines = [
        *head,
        f"Objectives: {', '.join(f'{o} ({OBJECTIVES[o][0]})' for o in objectives)}. "
        f"Trials: {c.get('trained', 0)} trained ({c.get('complete', 0)} complete, "
        f"{c.get('pruned', 0)} pruned), {c.get('fail', 0)} failed, {c.get('skipped', 0)} "
        "that trained nothing (a program trained before, or one that does not check); "
        f"{r.hours:.1f} hours of trials (each trial's own time, summed over the workers).",
        "",
        f"| rank | trial | program | BLEU | {axis} | paper |",
        "|---|---|---|---|---|---|",
    ]
    for i, row in enumerate(r.best, 1):
        lines.append(
            f"| {i} | {row.trial} | `{row.program}` | {row.values['bleu']:.2f} | "
            f"{_number(row.values.get(axis))} | {row.paper or ''} |"
        )
    for i, row in enumerate(r.best, 1):
        lines += [
            "",
            f"{'##' if title else '###'} {i}. trial {row.trial} (program {row.program})",
            "",
            "```adl",
            "# encoder",
            row.encoder.rstrip(),
            "# decoder",
            row.decoder.rstrip(),
            "```",
        ]
    marked = [row for row in r.rows if row.paper]
    if marked:
        lines += ["", "The papers' architectures the search trained:", ""]
        lines += [
            f"- {row.paper}: trial {row.trial}, BLEU {row.values['bleu']:.2f}" for row in marked
        ]
    return "\n".join(lines) + "\n"


def _number(v: float | None) -> str:
    if v is None:
        return ""
    return f"{v:,.0f}" if abs(v) >= 100 else f"{v:.3g}"


def _json(r: Report) -> dict[str, Any]:
    row = lambda x: {k: v for k, v in x.__dict__.items()}
    return {
        "objectives": r.objectives,
        "counts": r.counts,
        "hours": r.hours,
        "best": [row(x) for x in r.best],
        "rows": [row(x) for x in r.rows],
    }


def draw(r: Report, path: Path) -> Path:
    """BLEU against the cost axis: every trial, the best (or the front) joined, the papers'
    architectures named."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    axis = _cost_axis(r.objectives)
    fig, ax = plt.subplots(figsize=(6.4, 4.4))
    points = [(x.values[axis], x.values["bleu"], x) for x in r.rows if axis in x.values]
    ax.scatter([p[0] for p in points], [p[1] for p in points], s=14, c="0.6", label="trials")
    best = sorted((x.values[axis], x.values["bleu"]) for x in r.best if axis in x.values)
    if best:
        style = "-o" if len(r.objectives) > 1 else "o"
        ax.plot(
            [b[0] for b in best],
            [b[1] for b in best],
            style,
            c="C3",
            label="front" if len(r.objectives) > 1 else "best",
        )
    for x, y, row in points:
        if row.paper:
            ax.scatter([x], [y], marker="*", s=120, c="C0", zorder=3)
            ax.annotate(row.paper, (x, y), textcoords="offset points", xytext=(5, 5), fontsize=8)
    ax.set_xlabel(f"{axis} ({OBJECTIVES[axis][1].split(':')[0] if axis in OBJECTIVES else axis})")
    ax.set_ylabel("validation BLEU")
    ax.set_title(f"search {r.folder.name}")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path
