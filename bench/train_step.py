"""Training-step speed of the compiled Transformer against hand-written torch.nn.Transformer.

    python bench/train_step.py [--batch 64] [--length 32] [--steps 4] [--device cpu|cuda]

One run measures, on the same inputs and sizes (Transformer base: d=512, 8 heads, FFN 2048,
6+6 layers, vocabulary 8000):
  1. a training step (forward + backward + Adam) of the model compiled from
     architectures/transformer.{enc,dec}.adl, and of torch.nn.Transformer(norm_first=True)
     with the same embeddings and output layer; prints the ratio ADL / torch (goal <= 1.00);
  2. the FLOP/s the ADL step achieves (FLOPs counted by torch.utils.flop_counter) against the
     machine's matmul peak measured here (goal >= 60 %);
  3. forward time of one model per architecture family, against the Transformer.
Each iteration measures the matmul peak and one step of each model back to back, in
alternating order; the figures are medians of the per-iteration ratios.
"""

from __future__ import annotations

import math
import statistics
import time
from pathlib import Path

import torch
from measure import options, sync
from torch import nn
from torch.utils.flop_counter import FlopCounterMode

import adl

ROOT = Path(__file__).resolve().parent.parent
ARCH = ROOT / "architectures"
V = 8000


class HandWritten(nn.Module):
    """torch.nn.Transformer with the embeddings, positions and output layer of the ADL model."""

    def __init__(self, d: int = 512, heads: int = 8, layers: int = 6, ff: int = 2048):
        super().__init__()
        self.d = d
        self.src_embed = nn.Embedding(V, d, padding_idx=0)
        self.tgt_embed = nn.Embedding(V, d, padding_idx=0)
        self.transformer = nn.Transformer(
            d, heads, layers, layers, ff, dropout=0.1, batch_first=True, norm_first=True
        )
        self.output = nn.Linear(d, V)
        self.drop = nn.Dropout(0.1)  # after adding positions, as ADL's pos does

    def positions(self, n: int, device) -> torch.Tensor:
        t = torch.arange(n, device=device, dtype=torch.float32).unsqueeze(1)
        j = torch.arange(0, self.d, 2, device=device, dtype=torch.float32)
        pe = torch.zeros(n, self.d, device=device)
        pe[:, 0::2] = torch.sin(t / 10000 ** (j / self.d))
        pe[:, 1::2] = torch.cos(t / 10000 ** (j / self.d))
        return pe

    def forward(self, src, tgt):
        scale = math.sqrt(self.d)
        x = self.drop(self.src_embed(src) * scale + self.positions(src.size(1), src.device))
        y = self.drop(self.tgt_embed(tgt) * scale + self.positions(tgt.size(1), tgt.device))
        pad = src.eq(0)
        mask = nn.Transformer.generate_square_subsequent_mask(tgt.size(1), device=src.device)
        z = self.transformer(
            x,
            y,
            src_key_padding_mask=pad,
            memory_key_padding_mask=pad,
            tgt_mask=mask,
            tgt_is_causal=True,
        )
        return self.output(z)


def train_step(model, opt, src, tgt_in, tgt_out) -> None:
    logits = model(src, tgt_in)
    loss = nn.functional.cross_entropy(logits.flatten(0, 1), tgt_out.flatten(), ignore_index=0)
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()


def matmul_peak(device: str, n: int = 2048, repeat: int = 3) -> float:
    """FLOP/s of an n x n matrix product now (the fastest of a few)."""
    a, b = torch.randn(n, n, device=device), torch.randn(n, n, device=device)
    a @ b
    sync(device)
    best = float("inf")
    for _ in range(repeat):
        t = time.perf_counter()
        a @ b
        sync(device)
        best = min(best, time.perf_counter() - t)
    return 2 * n**3 / best


def main() -> None:
    ap = options(__doc__, batch=64, device=True)
    ap.add_argument("--length", type=int, default=32)
    ap.add_argument("--steps", type=int, default=4)
    args = ap.parse_args()
    dev = args.device
    torch.manual_seed(0)
    src = torch.randint(4, V, (args.batch, args.length), device=dev)
    tgt = torch.randint(4, V, (args.batch, args.length + 1), device=dev)
    tgt_in, tgt_out = tgt[:, :-1], tgt[:, 1:]

    ours = (
        adl.build(
            ARCH / "transformer.enc.adl", ARCH / "transformer.dec.adl", src_vocab=V, tgt_vocab=V
        )
        .to(dev)
        .train()
    )
    theirs = HandWritten().to(dev).train()
    n_ours = sum(p.numel() for p in ours.parameters())
    n_theirs = sum(p.numel() for p in theirs.parameters())
    assert n_ours == n_theirs, (n_ours, n_theirs)
    opts = {
        id(ours): torch.optim.Adam(ours.parameters(), 1e-4, fused=True),
        id(theirs): torch.optim.Adam(theirs.parameters(), 1e-4, fused=True),
    }

    with FlopCounterMode(display=False) as counter:
        train_step(ours, opts[id(ours)], src, tgt_in, tgt_out)
    flops = counter.get_total_flops()
    train_step(theirs, opts[id(theirs)], src, tgt_in, tgt_out)  # warm up

    # This machine's speed drifts (shared cores): every iteration measures the matmul peak
    # and both steps back to back, alternating their order, and the reported figures are
    # medians of the per-iteration ratios.
    ratios, utilisation, times = [], [], []
    for i in range(args.steps):
        peak = matmul_peak(dev)
        t = {}
        order = (
            (("adl", ours), ("torch", theirs)) if i % 2 == 0 else (("torch", theirs), ("adl", ours))
        )
        for name, m in order:
            sync(dev)
            start = time.perf_counter()
            train_step(m, opts[id(m)], src, tgt_in, tgt_out)
            sync(dev)
            t[name] = time.perf_counter() - start
        ratios.append(t["adl"] / t["torch"])
        utilisation.append(flops / t["adl"] / peak)
        times.append((t["adl"], t["torch"], peak))
    t_ours = statistics.median(x[0] for x in times)
    t_theirs = statistics.median(x[1] for x in times)
    peak = statistics.median(x[2] for x in times)

    tokens = args.batch * args.length
    print(
        f"device {dev}, {torch.get_num_threads()} threads, batch {args.batch} x {args.length} "
        f"tokens per side, {n_ours:,} parameters"
    )
    print(
        f"training step, ADL Transformer:          {t_ours * 1000:8.1f} ms  "
        f"({2 * tokens / t_ours:,.0f} tokens/s)"
    )
    print(f"training step, torch.nn.Transformer:     {t_theirs * 1000:8.1f} ms")
    print(
        f"ratio ADL / torch:                       {statistics.median(ratios):8.3f}  "
        f"(median of {args.steps} paired steps; goal <= 1.00)"
    )
    print(
        f"achieved {flops / t_ours / 1e9:,.1f} GFLOP/s ({flops / 1e9:,.0f} GFLOP a step); "
        f"of the matmul peak measured beside each step (median {peak / 1e9:,.1f} GFLOP/s): "
        f"{statistics.median(utilisation):.0%}  (goal >= 60 %)"
    )

    print("\nforward time per architecture family (same batch, eval mode):")
    families = {
        "Transformer": ("transformer.enc.adl", "transformer.dec.adl"),
        "RNMT (bi-LSTM + LSTM, MLP attention)": ("rnmt.enc.adl", "rnmt.dec.adl"),
        "ConvS2S (GLU convolutions)": ("convs2s.enc.adl", "convs2s.dec.adl"),
        "RNN -> Transformer (Table 3, + ff)": ("domhan2018/table3_ff.adl", None),
        "CNN -> Transformer (Table 4, ReLU + ff)": ("domhan2018/table4_cnn_relu_ff.adl", None),
        "no decoder self-attention (Table 5)": (
            "transformer.enc.adl",
            "domhan2018/table5_none.dec.adl",
        ),
    }
    base = None
    for name, (enc, dec) in families.items():
        m = (
            adl.build(ARCH / enc, ARCH / dec if dec else None, src_vocab=V, tgt_vocab=V)
            .to(dev)
            .eval()
        )
        with torch.no_grad():
            m(src, tgt_in)
            ts = []
            for _ in range(max(3, args.steps // 2)):
                sync(dev)
                t = time.perf_counter()
                m(src, tgt_in)
                sync(dev)
                ts.append(time.perf_counter() - t)
        ms = statistics.median(ts) * 1000
        base = base or ms
        print(f"  {name:42s} {ms:8.1f} ms  ({ms / base:.2f}x the Transformer)")


if __name__ == "__main__":
    main()
