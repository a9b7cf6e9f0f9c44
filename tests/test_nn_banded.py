"""Issue 16: the banded forms of local windows and Gaussian attention equal the dense forms,
and the fused attention kernels equal the unfused one with the masks the layers pass."""

import sys

import pytest
import torch
import torch.nn.functional as F
from conftest import ROOT
from torch.nn.attention import SDPBackend

import adl
from adl import patterns
from adl.models import build_network
from adl.nn.attention import SelfAttention, band_attention
from adl.nn.context import Context, DecodeState
from adl.nn.gaussian import GaussianSelfAttention

sys.path.insert(0, str(ROOT / "bench"))
from sdpa_kernels import calls  # noqa: E402


def qkv(b=3, h=2, t=9, d=4, seed=0):
    g = torch.Generator().manual_seed(seed)
    return [torch.randn(b, h, t, d, generator=g) for _ in range(3)]


def dense_band(t, lo, hi, offset=0, keys=None):
    """(T, S) True where query t (at key position offset + t) sees key j."""
    i = torch.arange(offset, offset + t).unsqueeze(1)
    j = torch.arange(keys if keys is not None else t).unsqueeze(0)
    return (j >= i + lo) & (j <= i + hi)


@pytest.mark.parametrize("window", [1, 2, 3, 4, 5, 8, 20])
def test_band_attention_equals_sdpa_with_the_dense_band_mask(window):
    q, k, v = qkv()
    lengths = torch.tensor([9, 6, 2])
    key_ok = torch.arange(9) < lengths.unsqueeze(1)  # (B, S)
    dl, du = patterns.band_limits(window)
    for lo, hi, ok in ((-(dl - 1), du - 1, key_ok), (-(window - 1), 0, None)):
        mask = dense_band(9, lo, hi)
        if ok is not None:
            mask = mask & ok[:, None, None, :]
        want = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, scale=0.5)
        got = band_attention(q, k, v, lo, hi, 0.5, ok)
        torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-6)


def test_band_attention_of_the_last_queries_and_a_query_that_sees_nothing():
    q, k, v = qkv(t=3)
    k, v = torch.cat([k, k.flip(2)], 2), torch.cat([v, v.flip(2)], 2)  # S = 6 keys, 3 queries
    want = F.scaled_dot_product_attention(q, k, v, attn_mask=dense_band(3, -2, 0, 3, 6))
    torch.testing.assert_close(band_attention(q, k, v, -2, 0, 0.5**1), want)
    ok = torch.zeros(3, 6, dtype=torch.bool)  # no key allowed: zeros, as the fused kernel
    assert torch.equal(band_attention(q, k, v, -1, 1, 0.5, ok), torch.zeros_like(q))
    x = q.clone().requires_grad_()
    band_attention(x, k, v, -1, 1, 0.5, ok).sum().backward()
    assert torch.isfinite(x.grad).all()  # and no NaN gradient


def layer_of(text, role, d=8, heads=2):
    program = adl.check(text, role=role, d_model=d, heads=heads, dropout=0.0)
    return build_network(program, program.network)[0].chain.layers[0].eval()


def both_forms(layer, x, ctx_args):
    before = layer.banded
    layer.banded = True
    banded = layer(x, Context(**ctx_args))
    layer.banded = False
    dense = layer(x, Context(**ctx_args))
    layer.banded = before
    return banded, dense


@pytest.mark.parametrize("role", ["encoder", "decoder"])
@pytest.mark.parametrize("window", [2, 3, 6])
def test_windowed_self_attention_banded_equals_dense(role, window):
    torch.manual_seed(window)
    layer = layer_of(f"mh_dot_self_att(window={window})", role)
    assert isinstance(layer, SelfAttention)
    x = torch.randn(3, 12, 8)
    pad = torch.arange(12) >= torch.tensor([12, 7, 3]).unsqueeze(1)
    banded, dense = both_forms(layer, x, dict(role=role, pad=pad))
    real = ~pad
    torch.testing.assert_close(banded[real], dense[real], rtol=1e-5, atol=1e-6)
    if role == "decoder":  # step by step: the cache keeps window - 1 keys, same results
        for form in (None, True):  # a step: all of the cache, no mask; or the banded form
            layer.banded = form
            state = DecodeState()
            steps = []
            for t in range(12):
                steps.append(layer(x[:, t : t + 1], Context("decoder", state=state)))
                state.offset += 1
                assert state.of(layer)["k"].size(2) == min(t + 1, window - 1)
            torch.testing.assert_close(torch.cat(steps, 1), dense, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("role", ["encoder", "decoder"])
@pytest.mark.parametrize("spec", ["gauss_att(l, r)", "gauss_att(-3, c, 2, sigma=2.0)"])
def test_gaussian_full_form_banded_equals_dense(role, spec):
    """The banded full form (TAIL σ of the density) equals the dense matrices at lengths
    well past the band, with padding, and step by step."""
    torch.manual_seed(0)
    T = 40
    layer = layer_of(spec, role)
    assert isinstance(layer, GaussianSelfAttention) and layer.kernel.size(-1) < T
    x = torch.randn(2, T, 8)
    pad = torch.arange(T) >= torch.tensor([T, 25]).unsqueeze(1)
    banded, dense = both_forms(layer, x, dict(role=role, pad=pad))
    torch.testing.assert_close(banded, dense, rtol=1e-5, atol=1e-6)
    if role == "decoder":
        state = DecodeState()
        steps = []
        for t in range(T):
            steps.append(layer(x[:1, t : t + 1], Context("decoder", state=state)))
            state.offset += 1
        torch.testing.assert_close(torch.cat(steps, 1), dense[:1], rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_fused_attention_equals_the_math_kernel_for_every_call_the_layers_make(dtype):
    """Every SDPA call of bench/sdpa_kernels.py's cases (padding, is_causal, decoding steps,
    source attention, a joint model's mask), through the fused flash kernel (on the CPU it
    takes masks) and through the unfused math kernel."""
    found = calls("cpu", dtype)
    kinds = {c.describe().split(" (")[0] for c in found}
    assert {"is_causal", "no mask", "mask"} <= kinds
    tol = dict(rtol=1e-5, atol=1e-5) if dtype == torch.float32 else dict(rtol=2e-2, atol=2e-2)
    for c in found:
        fused = c.run(SDPBackend.FLASH_ATTENTION)
        torch.testing.assert_close(fused, c.run(SDPBackend.MATH), **tol)


def test_no_padding_means_no_mask_and_the_same_translation():
    """Source attention over an unpadded batch passes no mask (a fused kernel on any GPU);
    the result equals that of the same sentences in a padded batch."""
    torch.manual_seed(0)
    enc = "pos -> repeat(2, res_nd(mh_dot_self_att) -> res_nd(ffl)) -> norm"
    dec = "pos -> res_nd(mh_dot_self_att) -> res_nd(mh_dot_src_att) -> norm"
    model = adl.build(enc, dec, src_vocab=20, tgt_vocab=20, d_model=16, heads=2, dropout=0.0)
    model.eval()
    src = torch.randint(4, 20, (2, 6))
    tgt = torch.randint(4, 20, (2, 5))
    assert model.encode(src).pad is None
    padded = torch.cat([src, torch.zeros(2, 3, dtype=torch.long)], 1)
    assert model.encode(padded).pad is not None
    torch.testing.assert_close(model(src, tgt), model(padded, tgt), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("queries", [1, 4])
@pytest.mark.parametrize("mask", ["none", "bool", "additive"])
def test_a_steps_one_query_attention_is_the_fused_kernels(mask, queries):
    """adl.nn.attention.one_query (a CPU decoding step's attention: one query a head, or a
    few: a beam's hypotheses over their sentence's shared source) against torch's
    scaled_dot_product_attention, with keys and values that are views of a larger buffer
    (the cache's) and the masks a step passes."""
    from adl.nn.attention import one_query

    g = torch.Generator().manual_seed(7)
    b, h, s, d = 5, 3, 11, 8
    q = torch.randn(b, h, queries, d, generator=g)
    k, v = (torch.randn(b, h, 2 * s, d, generator=g)[:, :, :s] for _ in range(2))
    allowed = torch.rand(b, 1, 1, s, generator=g) > 0.3
    allowed[:, :, :, 0] = True  # every row sees a key
    given = {
        "none": None,
        "bool": allowed,
        "additive": torch.zeros(b, 1, 1, s).masked_fill(~allowed, float("-inf")),
    }[mask]
    want = F.scaled_dot_product_attention(q, k, v, attn_mask=given, scale=0.3)
    got = one_query(q, k, v, given, 0.3)
    torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-6)
    if given is not None:  # what it masks, it does not see
        changed = v.clone()
        changed.transpose(1, 2)[~allowed[:, 0, 0]] = 100.0  # (B, S) positions masked
        torch.testing.assert_close(one_query(q, k, changed, given, 0.3), got)
