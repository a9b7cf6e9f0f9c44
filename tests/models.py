"""Helpers for tests that build models (from the architectures/ files) and layers."""

from pathlib import Path

import torch
from conftest import ROOT

import adl

ARCH = ROOT / "architectures"
TRANSFORMER = (ARCH / "transformer.enc.adl", ARCH / "transformer.dec.adl")
SMALL = dict(d_model=32, heads=4, dropout=0.0)


def adl_files() -> list[Path]:
    """Every architecture file except the prenorm/ variants: they have their reproduction
    file's layers in the same order (tests/test_architectures_check.py), only with the norms
    elsewhere, and a norm is position-wise: it cannot change causality, padding or caching
    (tests/test_presets_architectures.py builds them)."""
    return sorted(p for p in ARCH.rglob("*.adl") if p.parent.name != "prenorm")


def roles_of(path: Path) -> set[str]:
    tree = adl.parse(path)
    if tree.network is not None:
        return set(adl.check(path).networks) if _role_in_name(path) else set()
    return {d.name for d in tree.definitions} & {"encoder", "decoder", "joint"}


def _role_in_name(path: Path) -> bool:
    return any(path.name.endswith(s) for s in (".enc.adl", ".dec.adl", ".joint.adl"))


def decoder_models() -> list[tuple[str, Path, Path | None]]:
    """(id, encoder source, decoder source or None) for every file holding a decoder or a
    joint network (a joint file stands alone, as a model file does)."""
    out = []
    for path in adl_files():
        rel = str(path.relative_to(ARCH))
        if path.name.endswith(".dec.adl"):
            partner = path.with_name(path.name[: -len(".dec.adl")] + ".enc.adl")
            enc = partner if partner.exists() else _default_encoder(path)
            out.append((rel, enc, path))
        elif path.name.endswith(".joint.adl") or (
            not _role_in_name(path) and roles_of(path) & {"decoder", "joint"}
        ):
            out.append((rel, path, None))
    return out


def _default_encoder(decoder: Path) -> Path:
    """The encoder a lone decoder file names in its header (``its encoder is X``), else the
    Transformer's."""
    header = "".join(line for line in decoder.read_text().splitlines() if line.startswith("#"))
    for candidate in sorted(decoder.parent.glob("*.enc.adl")):
        if candidate.name in header:
            return candidate
    return ARCH / "transformer.enc.adl"


def joint_models() -> list[tuple[str, Path]]:
    return [(str(p.relative_to(ARCH)), p) for p in adl_files() if "joint" in roles_of(p)]


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
    m = adl.build(enc, dec, src_vocab=50, tgt_vocab=60, length_ratio=1.2, **{**SMALL, **kw})
    return m.eval()


def batch(b=3, s=9, t=8, seed=1):
    g = torch.Generator().manual_seed(seed)
    src = torch.randint(4, 50, (b, s), generator=g)
    src[1, s - 3 :] = 0  # one padded sentence
    tgt = torch.randint(4, 60, (b, t), generator=g)
    return src, tgt


def words_of(src: torch.Tensor) -> torch.Tensor:
    """Word ids for a batch of token ids: a token whose id is a multiple of 3 continues the
    previous word (a stand-in for the tokenizer's word-start markers); padding gets 0."""
    starts = (src % 3 != 0) | (torch.arange(src.size(1)) == 0)
    words = torch.cumsum(starts.long(), 1) - 1
    return words.masked_fill(src.eq(0), 0)


def run(model, src, tgt):
    """The model's logits, with word ids when it reads them."""
    if model.needs_src_words:
        return model(src, tgt, src_words=words_of(src))
    return model(src, tgt)


def encode(model, src):
    return model.encode(src, words_of(src)) if model.needs_src_words else model.encode(src)


def start(model, src):
    return model.start(src, words_of(src)) if model.needs_src_words else model.start(src)


def identity(layer):
    """An attention layer with its value and output projections set to the identity, so that
    its output is its attention weights."""
    with torch.no_grad():
        for lin in (layer.value, layer.out):
            lin.weight.copy_(torch.eye(lin.weight.size(0)))
            lin.bias.zero_()
    return layer
