"""Greedy search and its finished rows: when they leave the batch, and what follows them.

    python bench/greedy_drops.py --run runs/demo [--data data/bible] [--threads 1]
                                 [--rounds 5] [--max-tokens 4096,16384]
                                 [--json docs/results/bench/greedy_drops.json]

On the test verses of a trained run (the demo's), greedy search in the search's batches,
four ways taking turns round by round:

- ``before``: finished rows leave the batch at the first step they can, and the encoder's
  states follow the rows that stay (the search before this bench);
- ``quarter``: they leave once they are a quarter of the batch (``DROP_SHARE`` 0.25 in
  adl/runtime/decode/search.py), the encoder's states as before;
- ``cached``: they leave at once, the encoder's states left behind (``Memory.reorder``'s
  ``cached``: the source-reading layers read only the keys and values they cached);
- ``now``: both (the search's default).

Printed: sentences/s of each (the best round), and its ratio to ``before`` round by round
(median, min-max). The four find the same translations (checked here on every round, and
by tests/runtime/test_runtime_search_sync.py against the reference search).
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

import torch

import adl
from adl.runtime.decode import search
from adl.runtime.decode.driver import search_ids
from adl.runtime.decode.search import SearchOptions


class Plain:
    """The model without ``can_share_source``: the encoder's states follow the rows."""

    def __init__(self, model):
        self.model, self.needs_src_words = model, model.needs_src_words

    def start(self, src, src_words=None):
        return self.model.start(src, src_words)

    def step(self, tokens, memory, state):
        return self.model.step(tokens, memory, state)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--run", type=Path, required=True, help="a trained run (the demo's)")
    ap.add_argument("--data", type=Path, default=Path("data/bible"), help="its corpus folder")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--max-tokens", default="4096,16384", help="batch sizes, comma separated")
    ap.add_argument("--json", type=Path, help="also write the results here")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    translator = adl.load_model(args.run)
    model = translator.model
    src = sorted(args.data.glob("test.*"))[0]
    ids = translator.tokenizers.encode_src(src.read_text(encoding="utf-8").splitlines())
    ways = {"before": (0.0, Plain(model)), "quarter": (0.25, Plain(model))}
    ways |= {"cached": (0.0, model), "now": (0.25, model)}
    default = search.DROP_SHARE
    rows = []
    for tokens in (int(x) for x in args.max_tokens.split(",")):
        options = SearchOptions(beam=1, max_tokens=tokens)
        times: dict[str, list[float]] = {name: [] for name in ways}
        found = None
        for _ in range(args.rounds + 1):  # the first round warms up, untimed
            for name, (share, m) in ways.items():
                search.DROP_SHARE = share
                start = time.perf_counter()
                out = [h[0].tokens for h in search_ids(m, translator.tokenizers, ids, options)]
                times[name].append(time.perf_counter() - start)
                assert found is None or out == found, f"{name} translated otherwise"
                found = out
        search.DROP_SHARE = default
        for name in ways:
            ratios = [b / t for b, t in zip(times["before"][1:], times[name][1:])]
            rows.append(
                {
                    "max_tokens": tokens,
                    "way": name,
                    "sentences_per_s": len(ids) / min(times[name][1:]),
                    "vs_before": statistics.median(ratios),
                    "vs_before_range": [min(ratios), max(ratios)],
                }
            )
    print(f"{len(ids)} test verses ({src}), {args.threads} thread(s), {args.rounds} rounds")
    print("| batch (source tokens) | way | sentences/s | vs before (rounds) |")
    print("|---:|---|---:|---:|")
    for r in rows:
        lo, hi = r["vs_before_range"]
        print(
            f"| {r['max_tokens']:,} | {r['way']} | {r['sentences_per_s']:.1f} | "
            f"{r['vs_before']:.2f}x ({lo:.2f}–{hi:.2f}) |"
        )
    if args.json:
        meta = {"run": str(args.run), "test": str(src), "sentences": len(ids)}
        meta |= {"threads": args.threads, "rounds": args.rounds, "torch": torch.__version__}
        args.json.write_text(json.dumps({"meta": meta, "rows": rows}, indent=1) + "\n")


if __name__ == "__main__":
    main()
