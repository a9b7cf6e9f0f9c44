"""Adam's update, fused against torch's default, on a model compiled from ADL files.

    python bench/optimizer_step.py [--d 256] [--layers 2] [--vocab 2000] [--repeat 5]

Times ``optimizer.step()`` of the training's own optimizer (adl.runtime.training.optimizer
.make) with the fused kernel and without it, taking turns, by the CPU time of this
process (other work on the machine does not count), and prints the median of each and
their ratio. Then both optimizers take the same 20 updates from the same weights and
gradients, and the largest difference between the weights they reach is printed: the fused
kernel does the same arithmetic. The defaults are the `small_cpu` preset's model (2+2
layers, d_model 256, a shared 2,000-piece vocabulary).
"""

from __future__ import annotations

import copy
import statistics
import sys
import time

import torch
from measure import options, transformer

from adl.runtime.config import OptimConfig
from adl.runtime.training.optimizer import make as make_optimizer


def model(d: int, heads: int, layers: int, vocab: int) -> torch.nn.Module:
    m = transformer(d, heads, layers, vocab, tie_embeddings=True, share_embeddings=True)
    g = torch.Generator().manual_seed(0)
    for p in m.parameters():
        p.grad = torch.randn(p.shape, generator=g) * 1e-3
    return m


def cpu_ms(opt: torch.optim.Optimizer, steps: int) -> float:
    start = time.process_time()
    for _ in range(steps):
        opt.step()
    return (time.process_time() - start) / steps * 1000


def main(argv: list[str] | None = None) -> int:
    ap = options(__doc__, d=256, heads=4, repeat=5, threads=1)
    ap.add_argument("--layers", type=int, default=2, help="encoder and decoder blocks (2)")
    ap.add_argument("--vocab", type=int, default=2000, help="shared vocabulary (2000)")
    ap.add_argument("--steps", type=int, default=20, help="updates per timing (20)")
    args = ap.parse_args(argv)
    torch.set_num_threads(args.threads)
    cfg = OptimConfig(lr=2e-3, betas=[0.9, 0.98])
    m = model(args.d, args.heads, args.layers, args.vocab)
    params = sum(p.numel() for p in m.parameters())
    opts = {
        "default": make_optimizer(m.parameters(), cfg, fused=False),
        "fused": make_optimizer(m.parameters(), cfg, fused=True),
    }
    if not opts["fused"].defaults.get("fused"):
        print(f"torch {torch.__version__} has no fused Adam for this device: nothing to compare")
        return 1
    for opt in opts.values():
        cpu_ms(opt, 3)  # the state is made
    times: dict[str, list[float]] = {k: [] for k in opts}
    for _ in range(args.repeat):
        for name, opt in opts.items():
            times[name].append(cpu_ms(opt, args.steps))
    med = {k: statistics.median(v) for k, v in times.items()}
    print(
        f"Adam step, {params:,} parameters (d {args.d}, {args.layers}+{args.layers} layers, "
        f"vocabulary {args.vocab:,}), {args.threads} thread(s), CPU time, median of "
        f"{args.repeat} x {args.steps} steps:"
    )
    for name, ms in med.items():
        print(f"  {name:8s} {ms:8.2f} ms")
    print(f"  fused / default: {med['fused'] / med['default']:.3f}")
    a, b = copy.deepcopy(m), copy.deepcopy(m)
    oa, ob = make_optimizer(a.parameters(), cfg, False), make_optimizer(b.parameters(), cfg)
    for _ in range(20):
        oa.step()
        ob.step()
    diff = max((x - y).abs().max().item() for x, y in zip(a.parameters(), b.parameters()))
    print(f"largest weight difference after 20 identical updates: {diff:.3g}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
