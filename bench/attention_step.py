"""A decoding step's attention on a CPU: torch's fused kernel against the plain products.

    python bench/attention_step.py [--threads 1] [--rows 84] [--repeats 300]

A decoding step attends with one query a head: self-attention over the target prefix (its
keys and values views of the cache's buffers, no mask) and source attention over the
encoder's keys and values (an additive mask for the padding). For each, at several lengths,
times ``torch.nn.functional.scaled_dot_product_attention`` and
:func:`adl.nn.attention.one_query` (what ``DotAttention.attend`` calls for one query on a
CPU) alternately in one run, and prints the fused kernel's time over the plain one's (above
1: the plain products are faster) with their largest difference. The default shape is the
demo model's at beam 4 (84 rows: about 21 sentences x 4 hypotheses, 4 heads of 64).
"""

from __future__ import annotations

import argparse
import time

import torch
import torch.nn.functional as F

from adl.nn.attention import one_query


def timed(work, repeats: int) -> float:
    for _ in range(20):
        work()
    start = time.perf_counter()
    for _ in range(repeats):
        work()
    return (time.perf_counter() - start) / repeats


def cases(rows: int, heads: int, d: int, length: int):
    """(name, q, k, v, mask) of a step's self and source attention."""
    g = torch.Generator().manual_seed(length)
    q = torch.randn(rows, 1, heads * d, generator=g).view(rows, 1, heads, d).transpose(1, 2)
    room = max(16, 2 * length)  # the cache's buffers grow by doubling: keys are views
    k = torch.randn(rows, heads, room, d, generator=g)[:, :, :length]
    v = torch.randn(rows, heads, room, d, generator=g)[:, :, :length]
    ks, vs = (torch.randn(rows, heads, length, d, generator=g) for _ in range(2))
    pad = torch.zeros(rows, 1, 1, length)
    pad[: rows // 2, :, :, -2:] = float("-inf")  # half the sentences padded by two
    return [("self", q, k, v, None), ("source", q, ks, vs, pad)]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--threads", type=int, default=1, help="torch's CPU threads (a worker's)")
    p.add_argument("--rows", type=int, default=84, help="hypotheses in the batch")
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--head-size", type=int, default=64)
    p.add_argument("--lengths", default="10,20,40", help="keys a query sees")
    p.add_argument("--repeats", type=int, default=300)
    args = p.parse_args()
    torch.set_num_threads(args.threads)
    scale = args.head_size**-0.5
    print(f"{args.rows} rows, {args.heads} heads of {args.head_size}, {args.threads} threads")
    print("| attention | keys | fused (us) | plain (us) | fused / plain | largest difference |")
    print("|---|---:|---:|---:|---:|---:|")
    with torch.inference_mode():
        for length in (int(n) for n in args.lengths.split(",")):
            for name, q, k, v, mask in cases(args.rows, args.heads, args.head_size, length):
                given = (q, k, v, mask)
                fused = lambda a=given: F.scaled_dot_product_attention(*a, scale=scale)
                plain = lambda a=given: one_query(*a, scale)
                a, b = timed(fused, args.repeats), timed(plain, args.repeats)
                diff = (fused() - plain()).abs().max().item()
                print(
                    f"| {name} | {length} | {a * 1e6:.0f} | {b * 1e6:.0f} | {a / b:.2f}x "
                    f"| {diff:.1e} |"
                )


if __name__ == "__main__":
    main()
