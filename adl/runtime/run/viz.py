"""Pictures (``adl viz``): hard-coded attention patterns, a trained model's attention on one
sentence, and a run's learning curves, as PNG files.

    from adl.runtime.run import viz
    viz.pattern_heads("gauss_att(l, r)", 6)       # [("offset -1 (l)", (6, 6) tensor), ...]
    viz.draw_pattern("gauss_att(l, r)", 6, "pattern.png")
    viz.draw_attention("runs/tiny", "a b c")       # -> runs/tiny/pictures/attention.png
    viz.draw_run_curves("runs/tiny")               # -> runs/tiny/pictures/curves.png

Pattern matrices come from :mod:`adl.patterns` only (the functions the layers use); the
layer's arguments from ``adl.api.check``, defaults filled. Drawing is in :mod:`runtime.figures`.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
from torch import Tensor

import adl.analysis.program
import adl.api
import adl.layers
import adl.registry
from adl import patterns
from adl.layers.fixed import SEVEN
from adl.runtime.errors import VizError
from adl.runtime.run.figures import Curve, Heatmap, draw_curves, draw_heatmaps, heatmap_size
from adl.runtime.rundir import RunDir

ROLES = ("encoder", "decoder", "joint")
# The model size a layer is checked at: 2^5·3·5·7·11·13, so that every head count up to 16
# but 9, and 20, 24, 28, 32..., divides it, within the language's largest size (a pattern
# depends on positions only, never on sizes). Nothing is built: no memory limit applies.
CHECK_SIZE = math.lcm(32, 3, 5, 7, 11, 13)
NO_MEMORY_LIMIT = 1 << 62
WITH_PATTERNS = "gauss_att, gauss_src_att, fixed_self_att, mh_dot_self_att(window=k)"
MAX_PANELS = 32


# --- hard-coded patterns -------------------------------------------------------------------
@dataclass
class Pattern:
    """The heads of one hard-coded layer for a sentence length, ready to draw."""

    name: str  # the layer's name: gauss_att
    role: str
    heads: list[tuple[str, Tensor]]  # (title, (queries, keys) matrix) per head
    notes: list[str] = field(default_factory=list)  # what the picture's title adds
    ylabel: str = "query position i"
    xlabel: str = "key position j"
    split: int | None = None  # first target position of a joint stream


def layer_node(text: str, role: str | None = None) -> tuple[adl.analysis.program.Node, str]:
    """The checked node of one layer written in ADL, and the role it was checked in (by
    default the first of encoder, decoder, joint that the layer may be used in)."""
    tree = adl.api.parse(text, name="LAYER")
    calls = tree.network.layers if tree.network is not None else ()
    if tree.definitions or len(calls) != 1:
        raise VizError(f"give one layer, e.g. 'gauss_att(l, r)', not {text!r}")
    if role is None:
        spec = adl.registry.REGISTRY.get(calls[0].name)
        role = next((r for r in ROLES if spec is not None and r in spec.roles), ROLES[0])
    program = adl.api.check(
        text, role=role, d_model=CHECK_SIZE, name="LAYER", max_memory=NO_MEMORY_LIMIT
    )
    return program.network.chain.nodes[0], role


def _offset_title(offset) -> str:
    o = patterns.offset_of(offset)
    text = f"offset {o:+d}" if o else "offset 0"
    return f"{text} ({offset})" if isinstance(offset, str) else text


def _per_head(offsets: list, heads: int | None) -> list:
    """The offsets repeated to fill ``heads`` heads (as the layer does)."""
    n = heads or len(offsets)
    return [offsets[i % len(offsets)] for i in range(n)]


def pattern(
    text: str,
    length: int,
    role: str | None = None,
    source_length: int | None = None,
    ratio: float | None = None,
) -> Pattern:
    """The weight matrices of a hard-coded layer's heads for a sentence of ``length``.

    ``source_length``: the source side of cross attention and of a joint stream (default
    ``length``); ``ratio``: γ of ``gauss_src_att`` when its text gives none (default 1)."""
    if length < 1 or (source_length is not None and source_length < 1):
        raise VizError("lengths must be at least 1")
    node, role = layer_node(text, role)
    a = node.args
    S = source_length if source_length is not None else length
    name = node.name
    if name == "gauss_att":
        causal = role != "encoder"
        heads = [
            (
                _offset_title(o),
                patterns.gaussian(
                    length, o, a["sigma"], window=a["window"], index=a["index"], causal=causal
                ),
            )
            for o in _per_head(a["offsets"], a["heads"])
        ]
        notes = [
            f"σ={a['sigma']:g}" if not a["index"] else "index",
            *([f"window={a['window']}"] if a["window"] and not a["index"] else []),
            *(["decoder: j > i zeroed"] if causal else []),
        ]
        return Pattern(name, role, heads, notes)
    if name == "gauss_src_att":
        gamma = a["ratio"] if a["ratio"] is not None else (ratio if ratio is not None else 1.0)
        heads = [
            (_offset_title(o), patterns.gaussian_cross(length, S, o, gamma, a["sigma"]))
            for o in _per_head(a["offsets"], a["heads"])
        ]
        return Pattern(
            name,
            role,
            heads,
            [f"γ={gamma:g}", f"σ={a['sigma']:g}"],
            ylabel="target position i",
            xlabel="source position j",
        )
    if name == "fixed_self_att":
        heads = [(p, patterns.fixed(p, length)) for p in (a["patterns"] or SEVEN)]
        notes = []
        if a["learned"]:
            notes.append(
                f"+{a['learned']} learned head{'s' if a['learned'] > 1 else ''}, not drawn"
            )
        if a["unit"] == "word":
            notes.append("unit=word, drawn with one piece a word")
        return Pattern(name, role, heads, notes)
    if name == "mh_dot_self_att" and a["window"] is not None:
        k = a["window"]
        note = f"the mask all {a['heads']} heads share (1 = may attend)"
        if role == "joint":
            return Pattern(
                name,
                role,
                [(f"joint band k={k}", patterns.joint_band(S, length, k))],
                [note],
                ylabel="query: source ; target",
                xlabel="key: source ; target",
                split=S,
            )
        return Pattern(
            name,
            role,
            [(f"band k={k}", patterns.band(length, k, causal=role == "decoder"))],
            [note],
        )
    if name == "mh_dot_self_att":
        raise VizError(
            "mh_dot_self_att has no hard-coded pattern: its weights are learned "
            "(window=k gives it a fixed band); for a trained model's weights use "
            "`adl viz attention`"
        )
    raise VizError(
        f"'{name}' has no hard-coded attention pattern; layers with one: {WITH_PATTERNS}"
    )


def pattern_heads(text: str, length: int, **where: Any) -> list[tuple[str, Tensor]]:
    """(title, (queries, keys) matrix) for each head of a hard-coded layer (``where``: the
    ``role``, ``source_length`` and ``ratio`` of :func:`pattern`)."""
    return pattern(text, length, **where).heads


def _stream_labels(p: Pattern) -> list[str] | None:
    if p.split is None:
        return None
    n = p.heads[0][1].size(0)
    return [f"s{i}" for i in range(p.split)] + [f"t{i}" for i in range(n - p.split)]


def draw_pattern(
    text: str,
    length: int,
    out: str | Path = "pattern.png",
    role: str | None = None,
    source_length: int | None = None,
    ratio: float | None = None,
) -> Path:
    """A heatmap per head of a hard-coded layer (see :func:`pattern`); returns the path."""
    p = pattern(text, length, role, source_length, ratio)
    labels = _stream_labels(p)
    panels = [
        Heatmap(title, m, rows=labels, cols=labels, ylabel=p.ylabel, xlabel=p.xlabel, split=p.split)
        for title, m in p.heads
    ]
    queries, keys = p.heads[0][1].shape
    if p.split is not None:
        sizes = f"source {p.split} + target {queries - p.split}"
    elif p.name == "gauss_src_att":
        sizes = f"target {queries} × source {keys}"
    else:
        sizes = f"length {queries}"
    title = f"{text.strip()} in {'an' if p.role == 'encoder' else 'a'} {p.role}, {sizes}"
    if p.notes:
        title += "\n" + "; ".join(p.notes)
    return draw_heatmaps(panels, out, title, columns=4)


# --- a trained model's attention --------------------------------------------------------------
@dataclass
class AttentionPicture:
    path: Path
    target: str  # the target the decoder read: the reference, or the greedy output
    drawn: int  # panels drawn
    left_out: int  # panels beyond the cap
    size: tuple[float, float]  # the figure's size in inches (pixels: figures.pixels(size))


def _pieces(sp, ids: list[int]) -> list[str]:
    return [sp.id_to_piece(int(i)) for i in ids]


def attention_panels(
    model, tokenizers, src: str, tgt: str | None = None, layer: str | None = None
) -> tuple[list[Heatmap], str]:
    """One heatmap per (attention layer, head) of ``model`` on one sentence, for the layers
    whose position contains ``layer``; and the target read (``tgt``, or the model's greedy
    translation). Axes carry the sentencepiece pieces."""
    from adl.runtime.data.tokenizer import BOS
    from adl.runtime.decode.search import greedy, pad_batch

    src_ids = tokenizers.encode_src([src])[0]
    if not src_ids:
        raise VizError("the source sentence is empty")
    source = pad_batch([src_ids])  # (1, S): x + eos
    words = tokenizers.word_ids(source) if getattr(model, "needs_src_words", False) else None
    if tgt is None:
        tgt_ids = greedy(model, source, words, max_len=int(len(src_ids) * 1.5 + 10))[0]
        tgt = tokenizers.decode_tgt([tgt_ids])[0]
    else:
        tgt_ids = tokenizers.encode_tgt([tgt])[0]
    tgt_in = torch.tensor([[BOS, *tgt_ids]])  # (1, T): bos + y
    records = model.attention(source, tgt_in, words)
    if not records:
        raise VizError("the model has no attention layers")
    chosen = [r for r in records if layer is None or layer in r.layer]
    if not chosen:
        names = ", ".join(dict.fromkeys(r.layer for r in records))
        raise VizError(f"no attention layer's position contains {layer!r}; the model's: {names}")

    s_labels = _pieces(tokenizers.src, src_ids) + ["</s>"]
    t_in = ["<s>"] + _pieces(tokenizers.tgt, tgt_ids)
    t_out = _pieces(tokenizers.tgt, tgt_ids) + ["</s>"]
    panels = []
    for r in chosen:
        side = r.layer.split()[0]
        if side == "joint":
            both = s_labels + t_in
            axes: dict[str, Any] = dict(
                rows=both,
                cols=both,
                ylabel="source ; target input",
                xlabel="source ; target input",
                split=len(s_labels),
            )
        elif r.kind == "source":
            axes = dict(
                rows=t_out, cols=s_labels, ylabel="target (piece predicted)", xlabel="source"
            )
        elif side == "encoder":
            axes = dict(rows=s_labels, cols=s_labels, ylabel="source", xlabel="source")
        else:
            axes = dict(rows=t_in, cols=t_in, ylabel="target input", xlabel="target input")
        for h in range(r.weights.size(1)):
            panels.append(Heatmap(f"{r.layer}\nhead {h + 1}", r.weights[0, h], **axes))
    return panels, tgt


def draw_attention(
    run: str | Path,
    src: str,
    tgt: str | None = None,
    which: str = "best",
    layer: str | None = None,
    out: str | Path | None = None,
    max_panels: int = MAX_PANELS,
) -> AttentionPicture:
    """The attention of a trained model (a run directory or checkpoint file) on ``src``,
    one panel per (layer, head), at most ``max_panels``; by default written to
    RUN/pictures/attention.png (attention.png here for a checkpoint file)."""
    from adl.runtime.model.checkpoint import load_for_inference

    if max_panels < 1:
        raise VizError("max_panels must be at least 1")
    model, tokenizers = load_for_inference(run, which)
    panels, target = attention_panels(model, tokenizers, src, tgt, layer)
    shown = panels[:max_panels]
    left = len(panels) - len(shown)
    columns = min(8, _heads_per_layer(shown))
    title = f"{Path(run).resolve().name} ({which}): {src!r} -> {target!r}"
    if left:
        title += f"\n{left} more panels not drawn"
    path = out if out is not None else _default_out(run, "attention.png")
    return AttentionPicture(
        draw_heatmaps(shown, path, title, columns=columns),
        target,
        len(shown),
        left,
        heatmap_size(shown, columns),
    )


def _heads_per_layer(panels: list[Heatmap]) -> int:
    """The most heads of one layer among the panels (the grid's width)."""
    counts: dict[str, int] = {}
    for p in panels:
        key = p.title.split("\n")[0]
        counts[key] = counts.get(key, 0) + 1
    return max(counts.values())


def _default_out(run: str | Path, name: str) -> Path:
    run = Path(run)
    return RunDir(run).root / "pictures" / name if run.is_dir() else Path(name)


# --- learning curves ------------------------------------------------------------------------
def read_metrics(run: str | Path) -> list[dict]:
    """The records of RUN/metrics.jsonl (a line cut by a kill is skipped)."""
    run_dir = RunDir(Path(run))
    if not run_dir.root.is_dir():
        raise VizError(f"{run}: no such run directory")
    if not run_dir.metrics.is_file():
        raise VizError(f"{run}: no metrics.jsonl (not a run of adl train, or nothing logged yet)")
    records = []
    for line in run_dir.metrics.read_text(encoding="utf-8").splitlines():
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(record, dict) and isinstance(record.get("step"), int):
            records.append(record)
    return records


def curve_charts(records: list[dict]) -> list[Curve]:
    """Training loss by step; validation perplexity, BLEU and chrF by step where logged."""
    wanted = [
        ("train", "loss", "training loss", "loss per token", False),
        ("valid", "ppl", "validation perplexity", "perplexity", True),
        ("valid", "bleu", "validation BLEU", "BLEU", False),
        ("valid", "chrf", "validation chrF", "chrF", False),
    ]
    charts = []
    for split, key, title, ylabel, log in wanted:
        points = sorted(
            (r["step"], float(r[key]))
            for r in records
            if r.get("split", "train") == split and isinstance(r.get(key), (int, float))
        )
        if points:
            steps, values = zip(*points)
            charts.append(Curve(title, list(steps), list(values), ylabel, log))
    return charts


def draw_run_curves(run: str | Path, out: str | Path | None = None) -> Path:
    """Learning curves of a run, by default to RUN/pictures/curves.png."""
    charts = curve_charts(read_metrics(run))
    if not charts:
        raise VizError(f"{run}: metrics.jsonl has no training loss or validation scores yet")
    path = out if out is not None else RunDir(Path(run)).root / "pictures" / "curves.png"
    return draw_curves(charts, path, f"{Path(run).resolve().name}: learning curves")
