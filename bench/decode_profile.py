"""Where a decoding step's time goes: torch.profiler over ADL's own search.

    python bench/decode_profile.py [--run runs/demo] [--data runs/bible-data]
                                   [--models demo,big] [--beams 1,4] [--threads 2]
                                   [--json docs/results/bench/decode_profile.json]

Two models: ``demo``, the demo's Transformer (2+2 blocks, d_model 256, 4 heads, a 2,000-piece
vocabulary) — the trained run of --run decoding the corpus' test verses when given, else
untrained weights of that shape on random sentences — and ``big``, the base Transformer's
shape (6+6 blocks, d_model 512, 8 heads, 8,000 pieces, untrained, 32 random sentences of 20
tokens, eos barred so that every sentence decodes 50 tokens). Each is searched greedily and
with beam 4 (--beams) under torch.profiler on --threads CPU threads, after one unprofiled
warm-up search.

The time is split by where it is spent: ``encode`` (``model.start``), ``model step`` (the
decoder's one step for every live hypothesis: ``model.step``), ``cache reorder`` (the
cache following the hypotheses and the sentences that stay: ``state.reorder`` and
``memory.reorder``), and ``search`` (everything else in the loop: choosing the candidates,
the finished hypotheses' bookkeeping, reading them at the end). Printed per model and beam:
each part's share of the wall time, the operators each part calls per step, and the
operators with the most self time. Shares are of one run: the machine's load shifts them
little, since the parts run interleaved.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter
from pathlib import Path

import torch
from measure import transformer
from torch.profiler import ProfilerActivity, profile, record_function

import adl
from adl.runtime.decode.driver import search_ids
from adl.runtime.decode.search import SearchOptions

PARTS = ("encode", "model step", "cache reorder", "search")
SHAPES = {  # layers a side, d_model, heads, vocabulary
    "demo": (2, 256, 4, 2000),
    "big": (6, 512, 8, 8000),
}


class Traced:
    """The model behind the search's interface, each part under its profiler label."""

    def __init__(self, model, no_eos: bool = False):
        self.model, self.no_eos = model, no_eos
        self.needs_src_words = model.needs_src_words
        self.can_share_source = getattr(model, "can_share_source", lambda: False)
        self.steps = 0

    def start(self, src, src_words=None):
        with record_function("encode"):
            memory, state = self.model.start(src, src_words)
        return TracedRows(memory), TracedState(state)

    def step(self, tokens, memory, state):
        self.steps += 1
        with record_function("model step"):
            logp = self.model.step(tokens, memory.inner, state.inner)
            if self.no_eos:
                logp[:, adl_eos()] = float("-inf")
        return logp


class TracedRows:
    def __init__(self, inner):
        self.inner = inner

    def reorder(self, index, cached=False):
        with record_function("cache reorder"):
            return TracedRows(self.inner.reorder(index, cached=cached))

    def shared_by(self, group):
        return TracedRows(self.inner.shared_by(group))


class TracedState:
    def __init__(self, inner):
        self.inner = inner

    def reorder(self, index, source=True, in_place=False):
        with record_function("cache reorder"):
            self.inner.reorder(index, source=source, in_place=in_place)


def adl_eos() -> int:
    from adl.runtime.data.tokenizer import EOS

    return EOS


def untrained(name: str):
    layers, d, heads, vocab = SHAPES[name]
    torch.manual_seed(0)
    model = transformer(d, heads, layers, vocab)
    return model.eval(), vocab


def random_sentences(vocab: int, n: int, length: int) -> list[list[int]]:
    g = torch.Generator().manual_seed(0)
    return torch.randint(4, vocab, (n, length), generator=g).tolist()


def workloads(args) -> list[tuple[str, object, list[list[int]], bool, int | None]]:
    """(name, model, tokenized sentences, eos barred, output length) per model."""
    out = []
    for name in args.models.split(","):
        if name == "demo" and args.run is not None:
            translator = adl.load_model(args.run)
            lines = (args.data / "test.en").read_text(encoding="utf-8").splitlines()
            ids = translator.tokenizers.encode_src(lines[: args.sentences or None])
            out.append(("demo (trained, test verses)", translator.model, ids, False, None))
        else:
            model, vocab = untrained(name)
            layers, d, heads, _ = SHAPES[name]
            label = f"{name} ({layers}+{layers}, d {d}, untrained, random)"
            out.append((label, model, random_sentences(vocab, 32, 20), True, 50))
    return out


def region_of(event, labels: set[str]) -> str:
    """The innermost labelled region an operator ran in ('search' outside every label)."""
    parent = event.cpu_parent
    while parent is not None:
        if parent.name in labels:
            return parent.name
        parent = parent.cpu_parent
    return "search"


def measure(model, ids, beam: int, no_eos: bool, out_len: int | None, top: int) -> dict:
    options = SearchOptions(beam=beam, len_a=0.0 if out_len else 1.5, len_b=out_len or 10)
    traced = Traced(model, no_eos)
    search_ids(traced, None, ids[:4], options)  # warm-up
    traced.steps = 0
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        with record_function("decode"):
            start = time.perf_counter()
            search_ids(traced, None, ids, options)
            wall = time.perf_counter() - start
    labels = set(PARTS) - {"search"}
    events = [e for e in prof.events() if e.name not in labels | {"decode"}]
    tops = [e for e in events if e.cpu_parent is None or e.cpu_parent.name in labels | {"decode"}]
    inclusive: Counter = Counter()
    calls: Counter = Counter()
    for e in prof.events():
        if e.name in labels and e.cpu_parent is not None:
            inclusive[e.name] += e.cpu_time_total
    for e in tops:
        calls[region_of(e, labels)] += 1
    decode_us = next(e.cpu_time_total for e in prof.events() if e.name == "decode")
    inclusive["search"] = decode_us - sum(inclusive[p] for p in labels)
    self_time: Counter = Counter()
    for e in events:
        self_time[(region_of(e, labels), e.name)] += e.self_cpu_time_total
    steps = max(traced.steps, 1)
    return {
        "beam": beam,
        "sentences": len(ids),
        "steps": traced.steps,
        "wall_s": wall,
        "parts": {
            p: {
                "share": inclusive[p] / decode_us,
                "ms_per_step": inclusive[p] / 1000 / steps,
                "ops_per_step": calls[p] / steps,
            }
            for p in PARTS
        },
        "top_ops": [
            {"part": part, "op": op, "share": us / decode_us}
            for (part, op), us in self_time.most_common(top)
        ],
    }


def table(name: str, result: dict) -> str:
    lines = [
        f"\n{name}, beam {result['beam']}: {result['sentences']} sentences, "
        f"{result['steps']} steps, {result['wall_s']:.2f} s under the profiler",
        "| part | share of the time | ms a step | operators a step |",
        "|---|---:|---:|---:|",
    ]
    for part, r in result["parts"].items():
        lines.append(
            f"| {part} | {r['share']:.1%} | {r['ms_per_step']:.3f} | {r['ops_per_step']:.0f} |"
        )
    lines += ["", "| operator (self time) | part | share |", "|---|---|---:|"]
    lines += [f"| {t['op']} | {t['part']} | {t['share']:.1%} |" for t in result["top_ops"]]
    return "\n".join(lines)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--run", type=Path, help="the demo's trained run (default: untrained)")
    p.add_argument("--data", type=Path, default=Path("data/bible"), help="its corpus folder")
    p.add_argument("--sentences", type=int, default=0, help="test verses (0: all)")
    p.add_argument("--models", default="demo,big", help="demo, big or both")
    p.add_argument("--beams", default="1,4")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--top", type=int, default=12, help="operators listed")
    p.add_argument("--json", type=Path, help="also write the results here")
    args = p.parse_args()
    torch.set_num_threads(args.threads)
    print(f"torch {torch.__version__}, {args.threads} threads", file=sys.stderr)
    results = []
    for name, model, ids, no_eos, out_len in workloads(args):
        for beam in (int(b) for b in args.beams.split(",")):
            result = measure(model, ids, beam, no_eos, out_len, args.top)
            print(table(name, result))
            results.append({"model": name, **result})
    if args.json:
        meta = {"torch": torch.__version__, "threads": args.threads, "command": sys.argv}
        args.json.write_text(json.dumps({"meta": meta, "results": results}, indent=1) + "\n")


if __name__ == "__main__":
    main()
