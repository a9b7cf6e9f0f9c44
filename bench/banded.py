"""Banded against dense forms of the hard-coded and local attention layers: memory and time.

    python bench/banded.py [--lengths 32,128,512] [--batch 8] [--d 512] [--device cpu|cuda]

For each layer and sentence length, one training pass (forward + backward) of the layer in
its banded form (the default) and in its dense form (``layer.banded = False``: the
(T, T) weight or mask matrices), on the same input:
  - memory: the bytes of the tensors autograd keeps for the backward pass (distinct
    storages), what a training step holds per layer; on CUDA also the peak allocated;
  - time: the median of --repeat passes, the two forms taking turns.
Each figure is printed as a ratio banded / dense (below 1: the banded form is smaller or
faster). The layers:
  gauss_att(l, r)              You et al. (2020), the full form (encoder)
  gauss_att(l, c), decoder     the same, causal
  mh_dot_self_att(window=k)    Fonollosa et al. (2019), local self-attention (encoder, decoder)
"""

from __future__ import annotations

import statistics
import time

import torch
from measure import lengths, one_layer, options, saved_bytes, sync

from adl.nn.context import Context

LAYERS = {
    "gauss_att(l, r), encoder": ("gauss_att(l, r)", "encoder"),
    "gauss_att(l, c), decoder": ("gauss_att(l, c)", "decoder"),
    "window 5, encoder": ("mh_dot_self_att(window=5)", "encoder"),
    "window 5, decoder": ("mh_dot_self_att(window=5)", "decoder"),
    "window 25, encoder": ("mh_dot_self_att(window=25)", "encoder"),
}


def main() -> None:
    ap = options(__doc__, lengths="32,128,512", batch=8, d=512, heads=8, repeat=5, device=True)
    args = ap.parse_args()
    dev = args.device
    print(
        f"batch {args.batch}, d {args.d}, {args.heads} heads, device {dev}, "
        f"{torch.get_num_threads()} threads; ratios banded / dense (median of {args.repeat})"
    )
    print(f"  {'layer':28s} {'length':>6s} {'memory':>8s} {'time':>8s}   banded, dense")
    for name, (text, role) in LAYERS.items():
        torch.manual_seed(0)
        layer = one_layer(text, role, args.d, args.heads).to(dev)
        for T in lengths(args.lengths):
            x = torch.randn(args.batch, T, args.d, device=dev, requires_grad=True)
            kept = torch.randint(T // 2, T + 1, (args.batch, 1)).to(dev)
            pad = torch.arange(T, device=dev) >= kept

            def step(banded: bool, layer=layer, x=x, role=role, pad=pad) -> None:
                layer.banded = banded
                layer(x, Context(role, pad=pad)).sum().backward()

            memory = {f: saved_bytes(lambda f=f: step(f)) for f in (True, False)}
            peak = {}
            if dev.startswith("cuda"):
                for form in (True, False):
                    torch.cuda.reset_peak_memory_stats()
                    step(form)
                    sync(dev)
                    peak[form] = torch.cuda.max_memory_allocated()
            times: dict[bool, list[float]] = {True: [], False: []}
            for _ in range(args.repeat):
                for form in (True, False):
                    sync(dev)
                    t0 = time.perf_counter()
                    step(form)
                    sync(dev)
                    times[form].append(time.perf_counter() - t0)
            tb, td = (statistics.median(times[f]) for f in (True, False))
            line = (
                f"  {name:28s} {T:6d} {memory[True] / memory[False]:8.2f} {tb / td:8.2f}   "
                f"{memory[True] / 2**20:.1f} / {memory[False] / 2**20:.1f} MiB saved, "
                f"{tb * 1000:.1f} / {td * 1000:.1f} ms"
            )
            if peak:
                line += f", peak {peak[True] / 2**20:.0f} / {peak[False] / 2**20:.0f} MiB"
            print(line)


if __name__ == "__main__":
    main()
