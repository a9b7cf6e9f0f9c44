"""Decoding with hard retrieval or standard attention, whatever a model was trained with
(Xu et al. 2020, Table 4): ``adl.build(..., decode_attention="hard" | "soft")``."""

import math

import pytest
import torch

import adl
from adl.nn.attention import DotAttention, SelfAttention, merge_heads, split_heads

ENC = "pos -> repeat(2, res_nd(mh_dot_self_att) -> res_nd(ffl)) -> norm"
SOFT_DEC = (
    "pos -> repeat(2, res_nd(mh_dot_self_att) -> res_nd(mh_dot_src_att) -> res_nd(ffl)) -> norm"
)
HARD_DEC = "pos -> repeat(2, res_nd(hard_self_att) -> res_nd(hard_src_att) -> res_nd(ffl)) -> norm"
SIZES = dict(src_vocab=13, tgt_vocab=13, d_model=16, heads=2, dropout=0.0)


pytestmark = pytest.mark.usefixtures("one_thread")  # tests/conftest.py


def trained(dec: str, steps: int = 30, **extra):
    """A tiny model after a few Adam steps of a copy task (weights that are not the init)."""
    torch.manual_seed(0)
    model = adl.build(ENC, dec, **SIZES, **extra)
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    for _ in range(steps):
        src = torch.randint(1, 13, (8, 7))
        tgt = torch.cat([torch.full((8, 1), 1), src], 1)
        logits = model(src, tgt[:, :-1])
        loss = torch.nn.functional.cross_entropy(logits.reshape(-1, 13), tgt[:, 1:].reshape(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()
    return model.eval()


def rebuilt(model, dec: str, mode):
    other = adl.build(ENC, dec, **SIZES, decode_attention=mode)
    other.load_state_dict(model.state_dict())
    return other.eval()


@pytest.fixture(scope="module")
def soft():
    return trained(SOFT_DEC)


def batch(seed: int = 1):
    g = torch.Generator().manual_seed(seed)
    src = torch.randint(1, 13, (3, 6), generator=g)
    src[0, 4:] = 0  # padding in the source
    return src, torch.randint(1, 13, (3, 5), generator=g)


def by_hand(module: DotAttention, x, ctx) -> torch.Tensor:
    """Hard retrieval of one attention layer, from its weights: argmax of Q K^T / √d_h over
    the allowed keys, the value at that position, the output projection."""
    heads, w = module.heads, module.att
    if isinstance(module, SelfAttention):
        q, k, v = (module.qkv(x)).split(w, dim=-1)
        keys = torch.ones(x.size(1), x.size(1), dtype=torch.bool).tril()  # causal
        allowed = keys[None, None]
    else:
        u = ctx.memory.level(module.level)
        q = module.q(x)
        k, v = module.kv(u).split(w, dim=-1)
        allowed = ~ctx.memory.pad[:, None, None, :]
    q, k, v = (split_heads(t, heads) for t in (q, k, v))
    scores = q @ k.transpose(-1, -2) / math.sqrt(w // heads)
    idx = scores.masked_fill(~allowed, -math.inf).argmax(-1)  # (B, H, T)
    picked = torch.stack(
        [torch.stack([v[b, h, idx[b, h]] for h in range(heads)]) for b in range(v.size(0))]
    )  # (B, H, T, d_h)
    return module.out(merge_heads(picked))


def test_hard_decoding_is_argmax_retrieval_by_hand(soft):
    hard = rebuilt(soft, SOFT_DEC, "hard")
    seen = []

    def check(module, args, output):
        x, ctx = args
        torch.testing.assert_close(output, by_hand(module, x, ctx), rtol=1e-5, atol=1e-5)
        seen.append(type(module).__name__)

    hooks = [
        m.register_forward_hook(check)
        for m in hard.decoder.modules()
        if isinstance(m, DotAttention)
    ]
    with torch.no_grad():
        hard(*batch())
    for h in hooks:
        h.remove()
    assert sorted(seen) == ["MultiHeadSourceAttention"] * 2 + ["SelfAttention"] * 2


def test_hard_decoding_is_the_limit_of_sharpened_softmax(soft):
    """An independent reference: scaling the queries by 1e4 makes the softmax one-hot at the
    argmax, so the soft model with sharpened queries computes what hard retrieval does."""
    hard = rebuilt(soft, SOFT_DEC, "hard")
    sharp = rebuilt(soft, SOFT_DEC, None)
    with torch.no_grad():
        for m in sharp.decoder.modules():
            if isinstance(m, SelfAttention):
                m.qkv.weight[: m.att] *= 1e4
                m.qkv.bias[: m.att] *= 1e4
            elif isinstance(m, DotAttention):
                m.q.weight *= 1e4
                m.q.bias *= 1e4
        src, tgt = batch()
        expected, got = sharp(src, tgt), hard(src, tgt)
        assert not torch.allclose(got, soft(src, tgt), atol=1e-3)  # the switch changes decoding
    torch.testing.assert_close(got, expected, rtol=1e-4, atol=1e-4)


def test_hard_decoding_steps_equal_the_full_pass(soft):
    hard = rebuilt(soft, SOFT_DEC, "hard")
    src, tgt = batch()
    with torch.no_grad():
        full = hard(src, tgt).log_softmax(-1)
        memory, state = hard.start(src)
        steps = [hard.step(tgt[:, t], memory, state) for t in range(tgt.size(1))]
    torch.testing.assert_close(torch.stack(steps, 1), full, rtol=1e-5, atol=1e-5)


def test_training_and_the_encoder_are_unchanged(soft):
    hard = rebuilt(soft, SOFT_DEC, "hard")
    assert all(m.decode_hard is None for m in hard.encoder.modules() if isinstance(m, DotAttention))
    src, tgt = batch()
    hard.train(), soft.train()
    try:
        torch.testing.assert_close(hard(src, tgt), soft(src, tgt))  # no dropout: equal
    finally:
        soft.eval()


def test_a_hard_trained_model_decodes_softly():
    hard = trained(HARD_DEC)
    as_soft = rebuilt(hard, HARD_DEC, "soft")
    reference = rebuilt(hard, SOFT_DEC, None)  # the same weights in standard attention layers
    src, tgt = batch()
    with torch.no_grad():
        torch.testing.assert_close(as_soft(src, tgt), reference(src, tgt))
        assert not torch.allclose(hard(src, tgt), reference(src, tgt), atol=1e-3)
        # and as trained (None): argmax retrieval, the same as forcing "hard"
        torch.testing.assert_close(hard(src, tgt), rebuilt(hard, HARD_DEC, "hard")(src, tgt))


def test_attention_records_show_the_positions_taken(soft):
    hard = rebuilt(soft, SOFT_DEC, "hard")
    records = hard.attention(*batch())
    decoder = [r for r in records if r.kind in ("self", "source") and r.weights.size(2) == 5]
    assert decoder and all(bool(((r.weights == 0) | (r.weights == 1)).all()) for r in decoder)


def test_build_from_spec_takes_the_mode(soft):
    model = adl.build_from_spec(soft.spec, decode_attention="hard")
    modes = {m.decode_hard for m in model.decoder.modules() if isinstance(m, DotAttention)}
    assert modes == {True}


def test_bad_modes_are_one_clear_error():
    with pytest.raises(adl.ADLError, match="decode_attention must be 'soft' or 'hard'"):
        adl.build(ENC, SOFT_DEC, **SIZES, decode_attention="argmax")
    joint = "joint = pos -> res_nd(mh_dot_self_att) -> norm"
    with pytest.raises(adl.ADLError, match="not to a joint model"):
        adl.build(joint=joint, **SIZES, decode_attention="hard")
