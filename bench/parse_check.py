"""Parse + check time of the 6+6 Transformer (goal: under 50 ms).

    python bench/parse_check.py [--repeat N]

Prints the median over N runs of adl.parse + adl.check for the encoder and the decoder of
architectures/transformer.*.adl, next to a baseline measured in the same run: Lark alone
parsing the same two texts (the floor any ADL front end built on Lark pays).
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

import adl
from adl.syntax.grammar import parser

ROOT = Path(__file__).resolve().parent.parent
GOAL_MS = 50.0


def median_ms(fn, repeat: int) -> float:
    fn()  # warm caches (the grammar is built once per process)
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t) * 1000)
    return statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=50)
    args = ap.parse_args()
    enc = (ROOT / "architectures" / "transformer.enc.adl").read_text()
    dec = (ROOT / "architectures" / "transformer.dec.adl").read_text()

    def adl_both():
        e = adl.check(enc, role="encoder")
        adl.check(dec, role="decoder", source_d=e.network.d_out)

    def lark_both():
        parser().parse(enc)
        parser().parse(dec)

    ours = median_ms(adl_both, args.repeat)
    floor = median_ms(lark_both, args.repeat)
    print(f"parse+check, Transformer 6+6: {ours:.2f} ms (median of {args.repeat})")
    print(f"baseline, Lark parse only:    {floor:.2f} ms  -> ratio {ours / floor:.1f}x")
    print(f"goal:                         {GOAL_MS:.0f} ms  -> {ours / GOAL_MS:.2f} of the goal")


if __name__ == "__main__":
    main()
