"""The decoding paths on an accelerator, for every family of the papers' models: on the
device, incremental decoding equals full recomputation (greedy), the search equals the
reference search (bench/search_reference.py, beam 4), and the device's beam-4 translations
equal the CPU's. No test of the suite runs on a GPU; this is the check to run where one is.

    python bench/cuda_check.py [--device cuda] [--compiled reduce-overhead]

Small random models (d_model 64, 4 heads, vocabulary 60), six sources of 3-11 tokens, at
most 15 output tokens; TF32 off, so that the device computes in float32 as the CPU does.
Prints one line per family and ALL OK, or SOME FAILED (exit status 1) when a decoding on the
device differs from the full pass or the reference search; a CPU/device difference alone is
printed, not failed (float32 sums in another order can flip a near tie).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import torch

import adl
from adl.runtime.data.tokenizer import PAD
from adl.runtime.decode.compiled import CompiledStep, unsupported
from adl.runtime.decode.search import FullRecompute, beam, greedy, pad_batch

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
from search_reference import beam_reference  # noqa: E402

A = ROOT / "architectures"
FAMILIES = {
    "transformer": ("transformer.enc.adl", "transformer.dec.adl"),
    "hc_all": ("you2020/hc_sa.enc.adl", "you2020/hc_all.dec.adl"),
    "sh_x": ("you2020/hc_sa.enc.adl", "you2020/sh_x.dec.adl"),
    "hard_all": ("transformer.enc.adl", "xu2020/prenorm/hard_dec_self_cross.dec.adl"),
    "joint": ("fonollosa2019/joint_iwslt.joint.adl",),
    "local_joint": ("fonollosa2019/local_joint_half_iwslt.joint.adl",),
    "rnn": ("domhan2018/table5_rnn.enc.adl", "domhan2018/table5_rnn.dec.adl"),
    "cnn": ("domhan2018/table5_cnn.enc.adl", "domhan2018/table5_cnn.dec.adl"),
    "raganato": ("raganato2020/7f_token_1l.enc.adl", "transformer.dec.adl"),
    "raganato_word": ("raganato2020/7f_word_1l.enc.adl", "transformer.dec.adl"),
}


def words_of(model, src: torch.Tensor) -> torch.Tensor | None:
    """Word ids for word-based patterns: a new word at every even token id."""
    if not getattr(model, "needs_src_words", False):
        return None
    words = torch.cumsum((src % 2 == 0).long(), 1) - 1
    return words.clamp_min(0).masked_fill(src.eq(PAD), 0)


def check(
    name: str, files: tuple[str, ...], device: str, compiled: str | None = None
) -> dict[str, bool]:
    """The family's checks on ``device``; with ``compiled`` (a torch.compile mode), also
    whether the step compiled over a static cache finds the eager search's beam-4
    translations there (for a family whose layers it takes)."""
    torch.manual_seed(0)
    paths = [A / f for f in files]
    kw = dict(src_vocab=60, tgt_vocab=60, d_model=64, heads=4, dropout=0.0, length_ratio=1.0)
    if name == "joint":
        model = adl.build(joint=paths[0], vars={"layers": 2}, **kw)
    elif len(paths) == 1:
        model = adl.build(joint=paths[0], **kw)
    else:
        model = adl.build(*paths, **kw)
    model = model.eval()
    g = torch.Generator().manual_seed(1)
    lengths = torch.randint(3, 12, (6,), generator=g).tolist()
    src = pad_batch([torch.randint(4, 60, (n,), generator=g).tolist() for n in lengths])
    words = words_of(model, src)
    same = lambda a, b: [[h.tokens for h in x] for x in a] == [[h.tokens for h in x] for x in b]
    with torch.no_grad():
        on_cpu = beam(model, src, 4, words, 15)
        model = model.to(device)
        s, w = src.to(device), None if words is None else words.to(device)
        incremental, full = greedy(model, s, w, 15), greedy(FullRecompute(model), s, w, 15)
        found, reference = beam(model, s, 4, w, 15), beam_reference(model, s, 4, w, 15)
        result = {
            "incremental = full": incremental == full,
            "search = reference": same(found, reference),
            "device = cpu": same(on_cpu, found),
        }
        if compiled is not None and not unsupported(model):
            steps = CompiledStep(model, compiled)
            steps.plan(0.0, 15, None)
            result["compiled = eager"] = same(beam(steps, s, 4, w, 15), found)
    return result


def main() -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("--device", default="cuda")
    ap.add_argument(
        "--compiled",
        metavar="MODE",
        help="also decode through the step compiled in this torch.compile mode "
        "(reduce-overhead: CUDA graphs) and check it finds the eager translations",
    )
    args = ap.parse_args()
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    ok = True
    for name, files in FAMILIES.items():
        result = check(name, files, args.device, args.compiled)
        print(f"{name:14s} {result}", flush=True)
        ok &= result["incremental = full"] and result["search = reference"]
        ok &= result.get("compiled = eager", True)
    print("ALL OK" if ok else "SOME FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
