"""Helpers for tests that build models from the architectures/ files."""
from pathlib import Path

import torch

import adl
from conftest import ROOT

ARCH = ROOT / "architectures"
SMALL = dict(d_model=32, heads=4, dropout=0.0)


def adl_files() -> list[Path]:
    return sorted(ARCH.rglob("*.adl"))


def roles_of(path: Path) -> set[str]:
    tree = adl.parse(path)
    if tree.network is not None:
        return {adl.check(path).network.role} if _role_in_name(path) else set()
    return {d.name for d in tree.definitions} & {"encoder", "decoder", "joint"}


def _role_in_name(path: Path) -> bool:
    return any(path.name.endswith(s) for s in (".enc.adl", ".dec.adl", ".joint.adl"))


def decoder_models() -> list[tuple[str, Path, Path | None]]:
    """(id, encoder source, decoder source or None) for every file holding a decoder."""
    out = []
    for path in adl_files():
        rel = str(path.relative_to(ARCH))
        if path.name.endswith(".dec.adl"):
            partner = path.with_name(path.name[: -len(".dec.adl")] + ".enc.adl")
            enc = partner if partner.exists() else ARCH / "transformer.enc.adl"
            out.append((rel, enc, path))
        elif not _role_in_name(path) and "decoder" in roles_of(path):
            out.append((rel, path, None))
    return out


def encoder_models() -> list[tuple[str, Path, Path | None]]:
    out = []
    for path in adl_files():
        rel = str(path.relative_to(ARCH))
        if path.name.endswith(".enc.adl"):
            out.append((rel, path, ARCH / "transformer.dec.adl"))
        elif not _role_in_name(path) and "encoder" in roles_of(path):
            out.append((rel, path, None))
    return out


def small_model(enc, dec, **kw):
    torch.manual_seed(0)
    m = adl.build(enc, dec, src_vocab=50, tgt_vocab=60, **{**SMALL, **kw})
    return m.eval()


def batch(b=3, s=9, t=8, seed=1):
    g = torch.Generator().manual_seed(seed)
    src = torch.randint(4, 50, (b, s), generator=g)
    src[1, s - 3:] = 0  # one padded sentence
    tgt = torch.randint(4, 60, (b, t), generator=g)
    return src, tgt
