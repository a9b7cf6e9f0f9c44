"""Cost of one self-attention layer: learned dot attention against the hard-coded forms.

    python bench/attention_variants.py [--lengths 32,128,512] [--batch 16] [--d 512]

For each sequence length, times a forward and backward pass through one layer (in a
`res_nd(...)` block, as in a model) of mh_dot_self_att (8 heads, the baseline), and of
gauss_att(l, r) in its three forms: the density over the whole sentence (an n x n weight
matrix per head), window=3 and index=true (depthwise convolutions, no n x n matrix).
Also fixed_self_att and hard_self_att. Prints each time as a ratio to the baseline measured
in the same run (medians of interleaved repetitions).
"""

from __future__ import annotations

import statistics
import time

import torch
from measure import lengths, options

import adl
from adl.models import build_network
from adl.nn import Context

LAYERS = {
    "mh_dot_self_att (baseline)": "mh_dot_self_att",
    "gauss_att(l, r), density": "gauss_att(l, r)",
    "gauss_att(l, r, window=3)": "gauss_att(l, r, window=3)",
    "gauss_att(l, r, index=true)": "gauss_att(l, r, index=true)",
    "fixed_self_att (7 fixed + 1 learned)": "fixed_self_att",
    "hard_self_att": "hard_self_att",
}


def module(text: str, d: int):
    program = adl.check(f"res_nd({text})", role="encoder", d_model=d, dropout=0.0)
    return build_network(program, program.network)[0]


def main() -> None:
    ap = options(__doc__, lengths="32,128,512", batch=16, d=512, repeat=7)
    args = ap.parse_args()
    torch.manual_seed(0)
    modules = {name: module(text, args.d).train() for name, text in LAYERS.items()}
    print(
        f"one layer, forward + backward, batch {args.batch}, d={args.d}, "
        f"{torch.get_num_threads()} threads (median of {args.repeat})"
    )
    for n in lengths(args.lengths):
        x = torch.randn(args.batch, n, args.d, requires_grad=True)
        times: dict[str, list[float]] = {name: [] for name in modules}
        for m in modules.values():  # warm up
            m(x, Context("encoder")).sum().backward()
        for _ in range(args.repeat):
            for name, m in modules.items():
                t = time.perf_counter()
                m(x, Context("encoder")).sum().backward()
                times[name].append(time.perf_counter() - t)
        base = statistics.median(times[next(iter(modules))])
        print(f"\nlength {n}:")
        for name, ts in times.items():
            ms = statistics.median(ts) * 1000
            print(f"  {name:38s} {ms:9.2f} ms  {ms / (base * 1000):6.2f}x")


if __name__ == "__main__":
    main()
