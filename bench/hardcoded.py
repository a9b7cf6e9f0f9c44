"""You et al. (2020), Table 3's shape: training memory and decoding speed of BASE, HC-SA and
SH-X (and the -SA variants), at the paper's IWSLT sizes (d_model 288, 4 heads, 5 layers).

    python bench/hardcoded.py [--batch-tokens 4000] [--sentences 32] [--out-len 30]

For each model, in one run:
  - peak training memory per target token: a fresh Python process builds the model and its
    Adam optimizer, measures its resident memory, runs 3 training steps on a batch of
    --batch-tokens target tokens (and as many source tokens), and reports the growth of
    its peak resident memory (ru_maxrss) divided by the tokens;
  - decoding speed: sentences/s of beam 4 on --sentences random sentences, each decoded to
    --out-len tokens (eos barred), interleaved over --repeat rounds.
Every figure is also printed as a ratio to BASE, measured in the same run.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
YOU = ROOT / "architectures" / "you2020"
MODELS = {
    "BASE": ("base.enc.adl", "base.dec.adl"),
    "HC-SA": ("hc_sa.enc.adl", "hc_sa.dec.adl"),
    "SH-X": ("hc_sa.enc.adl", "sh_x.dec.adl"),
    "BASE/-SA": ("base_no_sa.enc.adl", "base_no_sa.dec.adl"),
    "SH-X/-SA": ("sh_x_no_sa.enc.adl", "sh_x_no_sa.dec.adl"),
}
SIZES = dict(d_model=288, heads=4, dropout=0.1, length_ratio=1.0)
V = 8000

MEMORY_PROBE = r"""
import json, resource, sys, torch
import adl
enc, dec, tokens, sizes = sys.argv[1], sys.argv[2], int(sys.argv[3]), json.loads(sys.argv[4])
torch.manual_seed(0)
model = adl.build(enc, dec, src_vocab=8000, tgt_vocab=8000, **sizes)
opt = torch.optim.Adam(model.parameters(), 1e-4)
length = 25
rows = tokens // length
src = torch.randint(4, 8000, (rows, length))
tgt = torch.randint(4, 8000, (rows, length + 1))
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
for _ in range(3):
    logits = model(src, tgt[:, :-1])
    loss = torch.nn.functional.cross_entropy(logits.flatten(0, 1), tgt[:, 1:].flatten())
    opt.zero_grad()
    loss.backward()
    opt.step()
after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps({"kib": after - before, "tokens": rows * length,
                  "params": sum(p.numel() for p in model.parameters())}))
"""


def memory(enc: Path, dec: Path, tokens: int) -> dict:
    out = subprocess.run(
        [sys.executable, "-c", MEMORY_PROBE, str(enc), str(dec), str(tokens), json.dumps(SIZES)],
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(out.stdout)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--batch-tokens", type=int, default=4000)
    ap.add_argument("--sentences", type=int, default=32)
    ap.add_argument("--src-len", type=int, default=20)
    ap.add_argument("--out-len", type=int, default=30)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()

    import torch

    import adl
    from adl.runtime.search import beam, pad_batch
    from adl.runtime.tokenizer import EOS

    class NoEos:
        def __init__(self, model):
            self.model, self.needs_src_words = model, False

        def start(self, src, src_words=None):
            return self.model.start(src, src_words)

        def step(self, tokens, memory, state):
            logp = self.model.step(tokens, memory, state)
            logp[:, EOS] = float("-inf")
            return logp

    mem = {name: memory(YOU / e, YOU / d, args.batch_tokens) for name, (e, d) in MODELS.items()}
    g = torch.Generator().manual_seed(0)
    src = pad_batch(torch.randint(4, V, (args.sentences, args.src_len), generator=g).tolist())
    models = {}
    for name, (e, d) in MODELS.items():
        torch.manual_seed(0)
        models[name] = NoEos(adl.build(YOU / e, YOU / d, src_vocab=V, tgt_vocab=V, **SIZES).eval())
    times: dict[str, list[float]] = {name: [] for name in MODELS}
    with torch.no_grad():
        for model in models.values():  # warm up (first calls allocate)
            beam(model, src[:2], 4, max_len=5)
        for _ in range(args.repeat):
            for name, model in models.items():
                t = time.perf_counter()
                beam(model, src, 4, max_len=args.out_len)
                times[name].append(time.perf_counter() - t)
    speed = {name: args.sentences / statistics.median(ts) for name, ts in times.items()}

    print(f"You et al. (2020) sizes: {SIZES}; {torch.get_num_threads()} threads")
    print(
        f"training: batch of {mem['BASE']['tokens']:,} target tokens; decoding: beam 4, "
        f"{args.sentences} sentences, {args.out_len} tokens each\n"
    )
    print(
        f"{'model':10s} {'params':>12s} {'KiB/token':>10s} {'vs BASE':>8s} "
        f"{'sent/s':>8s} {'vs BASE':>8s}"
    )
    base_mem = mem["BASE"]["kib"] / mem["BASE"]["tokens"]
    for name in MODELS:
        per_token = mem[name]["kib"] / mem[name]["tokens"]
        print(
            f"{name:10s} {mem[name]['params']:12,d} {per_token:10.1f} "
            f"{per_token / base_mem:8.2f} {speed[name]:8.2f} {speed[name] / speed['BASE']:8.2f}"
        )


if __name__ == "__main__":
    main()
