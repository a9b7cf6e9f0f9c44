"""Which fused attention kernel each dot-product attention call can get, with the masks the
layers really pass.

    python bench/sdpa_kernels.py [--device cpu|cuda] [--dtype fp32|bf16|fp16]

Runs small models through the cases below, records every call the layers make to
torch.nn.functional.scaled_dot_product_attention (the mask's shape, is_causal), then
replays each call with one backend allowed at a time (torch.nn.attention.sdpa_kernel) and
prints which backends accept it. A refused backend means torch would fall back to another
(the math backend materialises the (T, S) scores). Local windows in an encoder or a decoder
take the banded form (adl.nn.attention.band_attention) and call no SDPA kernel.

On a CPU torch has the flash kernel (which takes masks there) and the math one; on a GPU
the flash kernel takes no mask (is_causal only) and needs fp16/bf16, the memory-efficient
one takes masks, and cuDNN takes some.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from measure import DEVICE
from torch.nn.attention import SDPBackend, sdpa_kernel

import adl
from adl.nn.attention import DotAttention

ENC = "pos -> repeat(2, res_nd(mh_dot_self_att) -> res_nd(ffl)) -> norm"
DEC = "pos -> repeat(2, res_nd(mh_dot_self_att) -> res_nd(mh_dot_src_att) -> res_nd(ffl)) -> norm"
WIN_ENC = "pos -> res_nd(mh_dot_self_att(window=5)) -> norm"
WIN_DEC = "pos -> res_nd(mh_dot_self_att(window=5)) -> res_nd(mh_dot_src_att) -> norm"
JOINT = "pos -> res_nd(mh_dot_self_att(window=5)) -> norm"
BACKENDS = (
    SDPBackend.FLASH_ATTENTION,
    SDPBackend.EFFICIENT_ATTENTION,
    SDPBackend.CUDNN_ATTENTION,
    SDPBackend.MATH,
)


@dataclass
class Call:
    case: str  # the model, the pass, the batch
    layer: str  # encoder self | decoder self | source
    q: torch.Tensor
    k: torch.Tensor
    v: torch.Tensor
    mask: torch.Tensor | None
    causal: bool

    def describe(self) -> str:
        if self.causal:
            return "is_causal"
        if self.mask is None:
            return "no mask"
        return f"mask {tuple(self.mask.shape)}"

    def run(self, backend: SDPBackend | None = None) -> torch.Tensor:
        kwargs = dict(attn_mask=self.mask, is_causal=self.causal)
        if backend is None:
            return F.scaled_dot_product_attention(self.q, self.k, self.v, **kwargs)
        with sdpa_kernel([backend]):
            return F.scaled_dot_product_attention(self.q, self.k, self.v, **kwargs)


def batch(device: str, padded: bool, length: int = 12):
    g = torch.Generator().manual_seed(0)
    src = torch.randint(4, 40, (3, length), generator=g)
    tgt = torch.randint(4, 40, (3, length - 2), generator=g)
    if padded:
        src[0, length - 4 :] = 0
        tgt[0, length - 5 :] = 0
    return src.to(device), tgt.to(device)


def calls(device: str = "cpu", dtype: torch.dtype = torch.float32) -> list[Call]:
    """Every SDPA call of the cases, recorded from the layers."""
    found: list[Call] = []
    original = F.scaled_dot_product_attention
    case = {"name": "", "layer": ""}

    def record(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None, **kw):
        found.append(Call(case["name"], case["layer"], q, k, v, attn_mask, is_causal))
        return original(q, k, v, attn_mask=attn_mask, dropout_p=dropout_p, is_causal=is_causal)

    def build(enc, dec=None, joint=None):
        torch.manual_seed(0)
        sizes = dict(src_vocab=40, tgt_vocab=40, d_model=64, heads=4, dropout=0.0)
        model = adl.build(joint=joint, **sizes) if joint else adl.build(enc, dec, **sizes)
        for m in model.modules():  # which layer calls: "decoder mh_dot_src_att"
            if isinstance(m, DotAttention):
                where = m.position.split()
                name = f"{where[0]} {where[-1]}"
                m.register_forward_pre_hook(lambda _m, _a, name=name: case.update(layer=name))
        return model.to(device, dtype).eval()

    F.scaled_dot_product_attention = record
    try:
        with torch.no_grad():
            plain = build(ENC, DEC)
            for padded in (False, True):
                src, tgt = batch(device, padded)
                case["name"] = f"Transformer, training pass, {'padded' if padded else 'no padding'}"
                plain(src, tgt)
                case["name"] = (
                    f"Transformer, decoding: encoder, {'padded' if padded else 'no padding'}"
                )
                memory, state = plain.start(src)
                case["name"] = f"Transformer, decoding step, {'padded' if padded else 'no padding'}"
                plain.step(tgt[:, 0], memory, state)
                plain.step(tgt[:, 1], memory, state)
            src, tgt = batch(device, True)
            case["name"] = "local windows (encoder and decoder), training pass, padded"
            build(WIN_ENC, WIN_DEC)(src, tgt)
            case["name"] = "joint model with windows, training pass, padded"
            build(None, joint=JOINT)(src, tgt)
    finally:
        F.scaled_dot_product_attention = original
    return found


def accepted(call: Call) -> list[str]:
    names = []
    for backend in BACKENDS:
        try:
            call.run(backend)
            names.append(backend.name.replace("_ATTENTION", "").lower())
        except RuntimeError:
            pass
    return names


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--device", default=DEVICE)
    ap.add_argument("--dtype", default="fp32", choices=("fp32", "bf16", "fp16"))
    args = ap.parse_args()
    dtype = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}[args.dtype]
    print(f"device {args.device}, {args.dtype}, torch {torch.__version__}")
    seen = set()
    for c in calls(args.device, dtype):
        key = (c.case, c.layer, c.describe())
        if key in seen:
            continue
        seen.add(key)
        print(f"  {c.case:55s} {c.layer:24s} {c.describe():20s} {', '.join(accepted(c))}")
    print("  local windows in an encoder or a decoder: banded form, no SDPA call")


if __name__ == "__main__":
    main()
