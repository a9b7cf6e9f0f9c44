"""Checks clean means builds and runs: adl.build estimates memory before allocating, a stored
model description is checked like any text, and inputs beyond a layer's limit raise the
project's own error."""

import time

import pytest
import torch

import adl
from adl.nn.dropout import dropout

ENC = "pos -> res_nd(mh_dot_self_att) -> res_nd(ffl)"
DEC = "pos -> res_nd(mh_dot_self_att) -> res_nd(mh_dot_src_att)"
SMALL = dict(d_model=16, heads=2)


def test_build_refuses_before_allocating(monkeypatch):
    monkeypatch.delenv("ADL_MAX_MEMORY", raising=False)
    started = time.perf_counter()
    with pytest.raises(adl.ADLError) as info:
        adl.build(ENC, DEC, src_vocab=10**7, tgt_vocab=10**7, d_model=512)
    assert str(info.value) == (
        "adl: error: the model needs about 57.3 GiB for its 15,375,255,680 parameters "
        "(float32, vocabularies 10,000,000 / 10,000,000 included), more than the memory limit "
        "of 16.0 GiB\n"
        "hint: set ADL_MAX_MEMORY (e.g. ADL_MAX_MEMORY=64G) or pass max_memory= to allow more"
    )
    assert time.perf_counter() - started < 30  # nothing of 57 GiB was allocated


def test_the_estimate_is_the_built_models_size():
    for enc, dec, kw in [
        (ENC, DEC, {}),
        (ENC, DEC, dict(tie_embeddings=True)),
        (ENC, DEC, dict(share_embeddings=True)),
    ]:
        m = adl.build(enc, dec, src_vocab=30, tgt_vocab=30, **SMALL, **kw)
        need = sum(p.numel() for p in m.parameters()) * 4
        with pytest.raises(adl.ADLError, match="the model needs about"):
            adl.build(enc, dec, src_vocab=30, tgt_vocab=30, **SMALL, **kw, max_memory=need - 1)
        adl.build(enc, dec, src_vocab=30, tgt_vocab=30, **SMALL, **kw, max_memory=need)
    joint = "joint = pos -> res_nd(mh_dot_self_att(window=3)) -> res_nd(ffl)"
    m = adl.build(joint=joint, src_vocab=30, tgt_vocab=30, **SMALL)
    need = sum(p.numel() for p in m.parameters()) * 4
    with pytest.raises(adl.ADLError, match="the model needs about"):
        adl.build(joint=joint, src_vocab=30, tgt_vocab=30, **SMALL, max_memory=need - 1)


def test_a_stored_description_is_input_too():
    spec = adl.build(ENC, DEC, src_vocab=10, tgt_vocab=10, **SMALL).spec.to_dict()
    doubling = (
        "b0 = ffl\n"
        + "".join(f"b{i} = concat(b{i - 1}, b{i - 1}) -> linear\n" for i in range(1, 23))
        + "pos -> b22\n"
    )
    cases = [
        (dict(spec, d_model="x"), "model description: 'd_model' must be a positive integer"),
        (dict(spec, encoder=5), "model description: 'encoder' must be ADL text or null"),
        (dict(spec, vars={"a": 1}), "model description: 'vars' must map names to text"),
        (dict(spec, pad_id=-1), "model description: 'pad_id' must be a non-negative integer"),
        (dict(spec, evil=1), "model description has unknown fields: evil"),
        ("nope", "a model description is a mapping, not str"),
        (None, "a model description is a mapping, not NoneType"),
        (dict(spec, src_vocab=10**12), "the model needs about 58.2 TiB"),
        (dict(spec, encoder=doubling), "the network expands to more than 10,000 layers"),
    ]
    for bad, message in cases:
        started = time.perf_counter()
        with pytest.raises(adl.ADLError) as info:
            adl.build_from_spec(bad)
        assert message in info.value.errors[0].message
        assert time.perf_counter() - started < 30


def test_inputs_longer_than_learned_positions_raise_an_input_error():
    m = adl.build("learn_pos(max_seq_len=4) -> ffl", DEC, src_vocab=10, tgt_vocab=10, **SMALL)
    with pytest.raises(adl.InputError) as info:
        m(torch.ones(2, 6, dtype=torch.long), torch.ones(2, 3, dtype=torch.long))
    assert str(info.value) == (
        "learn_pos(max_seq_len=4) embeds sequences of at most 4 positions; this input has 6 "
        "(filter longer lines or raise max_seq_len)"
    )
    assert (info.value.limit, info.value.length) == (4, 6)
    assert isinstance(info.value, adl.UserError)
    # in step-by-step decoding too, at the fifth position
    m = adl.build(
        ENC, "learn_pos(max_len=4) -> res_nd(mh_dot_src_att)", src_vocab=10, tgt_vocab=10, **SMALL
    )
    memory, state = m.start(torch.ones(1, 7, dtype=torch.long))
    for _ in range(4):
        m.step(torch.ones(1, dtype=torch.long), memory, state)
    with pytest.raises(adl.InputError, match="at most 4 positions; this input has 5"):
        m.step(torch.ones(1, dtype=torch.long), memory, state)
    assert adl.check("learn_pos(max_len=4) -> ffl", role="encoder").network.max_length == 4
    assert adl.check("pos -> ffl", role="encoder").network.max_length is None


def test_rates_near_one_and_small_scales_stay_finite():
    torch.manual_seed(0)
    y = dropout(torch.ones(1000), 0.999999, True)  # rounds to 65536/65536 of the 16-bit mask
    assert torch.isfinite(y).all() and (y == 0).float().mean() > 0.99
    for layer in ["norm(eps=1e-12)", "mh_dot_self_att(s=0.01)", "gauss_att(l, r, sigma=0.01)"]:
        m = adl.build(f"pos -> {layer}", DEC, src_vocab=10, tgt_vocab=10, **SMALL).eval()
        src = torch.tensor([[3, 4, 5, 0, 0]])
        assert torch.isfinite(m(src, torch.ones(1, 3, dtype=torch.long))).all(), layer
