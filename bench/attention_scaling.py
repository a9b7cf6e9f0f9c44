"""How the cost of one self-attention layer grows with the sentence's length: learned
attention (BASE), hard-coded Gaussian attention (HC-SA, in the form the layer picks by length,
and forced banded), fixed encoder patterns and hard retrieval.

    python bench/attention_scaling.py [--lengths 16,32,...,1024] [--batch 8] [--d 256]
                                      [--heads 4] [--repeat 5] [--png docs/img/attention_scaling.png]

For each layer and length, a training pass (forward and backward) of the layer alone over
--batch sentences of that length:
  - time: the median of --repeat passes, the layers taking turns (with one thread, the
    process's CPU time: adl.runtime.cost.timer);
  - memory: the bytes of the tensors autograd keeps for the backward pass (distinct storages:
    what a training step holds for the layer until its backward), the layer's weights left out.
Printed as a table with each figure's ratio to BASE, and drawn on log-log axes, where a cost
that grows as n·w is a line of slope 1 and one that grows as n² a line of slope 2.
"""

from __future__ import annotations

import statistics
from pathlib import Path

import torch
from measure import lengths, one_layer, options, saved_bytes

from adl.nn.context import Context
from adl.runtime import cost

ROOT = Path(__file__).resolve().parent.parent
LAYERS = {  # name: (layer, role, form: None as the layer picks, True forced banded)
    "BASE (learned)": ("mh_dot_self_att", "encoder", None),
    "HC-SA (Gaussian)": ("gauss_att(l, r)", "encoder", None),
    "banded Gaussian": ("gauss_att(l, r)", "encoder", True),
    "fixed patterns (8F)": (
        "fixed_self_att(cur, prev, next, left, right, end, start, last, learned=0)",
        "encoder",
        None,
    ),
    "hard retrieval": ("hard_self_att", "decoder", None),
}


def layer_of(text: str, role: str, d: int, heads: int, form: bool | None):
    layer = one_layer(text, role, d, heads)
    if form is not None:
        layer.banded = form
    return layer


def main() -> None:
    ap = options(
        __doc__, lengths="16,32,64,128,256,512,1024", batch=8, d=256, heads=4, repeat=5, threads=1
    )
    ap.add_argument("--png", type=Path, help="draw the curves here")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    clock = cost.timer(args.threads, "cpu")  # one thread: CPU time, whatever else runs
    sizes = lengths(args.lengths)
    layers = {n: layer_of(t, r, args.d, args.heads, f) for n, (t, r, f) in LAYERS.items()}
    seconds: dict[str, dict[int, float]] = {n: {} for n in layers}
    memory: dict[str, dict[int, int]] = {n: {} for n in layers}
    print(
        f"batch {args.batch}, d {args.d}, {args.heads} heads, {args.threads} threads; "
        f"one training pass of one layer (median of {args.repeat})"
    )
    for T in sizes:
        torch.manual_seed(T)
        x = torch.randn(args.batch, T, args.d)

        def run(name: str, x: torch.Tensor = x) -> None:
            xi = x.clone().requires_grad_()
            role = LAYERS[name][1]
            layers[name](xi, Context(role)).sum().backward()

        for name in layers:
            run(name)  # warm up
            memory[name][T] = saved_bytes(lambda name=name: run(name), parameters=False)
        times: dict[str, list[float]] = {n: [] for n in layers}
        for r in range(args.repeat):
            for name in list(layers)[r % len(layers) :] + list(layers)[: r % len(layers)]:
                started = clock()
                run(name)
                times[name].append(clock() - started)
        for name in layers:
            seconds[name][T] = statistics.median(times[name])
    print(f"\n  {'layer':22s} " + " ".join(f"{T:>8d}" for T in sizes))
    for label, table, unit in (("time (ms)", seconds, 1000), ("kept (MiB)", memory, 2**-20)):
        print(f"  {label}")
        for name in layers:
            row = " ".join(f"{table[name][T] * unit:8.2f}" for T in sizes)
            print(f"  {name:22s} {row}")
        print("  ratio to BASE")
        for name in list(layers)[1:]:
            base = table["BASE (learned)"]
            print(f"  {name:22s} " + " ".join(f"{table[name][T] / base[T]:8.2f}" for T in sizes))
    if args.png:
        draw(args.png, sizes, seconds, memory, args)


def draw(path: Path, lengths, seconds, memory, args) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2))
    for ax, table, unit, label in (
        (axes[0], seconds, 1000, "time of a training pass (ms)"),
        (axes[1], memory, 2**-20, "kept for the backward pass (MiB)"),
    ):
        for name in table:
            ax.plot(lengths, [table[name][T] * unit for T in lengths], marker="o", label=name)
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("sentence length (tokens)")
        ax.set_ylabel(label)
        ax.grid(True, which="both", alpha=0.3)
    axes[0].legend(fontsize=8)
    fig.suptitle(
        f"One self-attention layer: batch {args.batch}, d_model {args.d}, {args.heads} heads, "
        f"{args.threads} CPU thread(s) (bench/attention_scaling.py)",
        fontsize=10,
    )
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    print(f"\nwrote {path}")


if __name__ == "__main__":
    main()
