"""The attention variants as modules: they apply exactly the public weight matrices, hard
retrieval has the straight-through gradient of Xu et al., and the joint model keeps its
masks, positions and cache."""

import pytest
import torch
from models import identity

import adl
from adl import patterns as P
from adl.models import build_network
from adl.nn import Context, DecodeState, Memory
from adl.nn.hard import HardRetrieval


def single(text, role, d, **kw):
    program = adl.check(text, role=role, d_model=d, heads=2, dropout=0.0, **kw)
    module, _ = build_network(program, program.network, length_ratio=kw.pop("ratio", None))
    return module.chain.layers[0]


@pytest.mark.parametrize("role", ["encoder", "decoder"])
@pytest.mark.parametrize("form", ["", ", window=3", ", index=true", ", window=5, sigma=2"])
@pytest.mark.parametrize("offset", ["l", "c", "r", "-2"])
def test_gaussian_self_attention_applies_its_pattern(role, form, offset):
    T = 7
    layer = identity(single(f"gauss_att({offset}{form})", role, T))
    window = int(form.split("window=")[1].split(",")[0]) if "window" in form else None
    sigma = 2.0 if "sigma" in form else 1.0
    expected = P.gaussian(
        T,
        int(offset) if offset.lstrip("-").isdigit() else offset,
        sigma,
        window=window,
        index="index" in form,
        causal=role == "decoder",
    )
    x = torch.eye(T).unsqueeze(0)  # position j carries the unit vector e_j
    got = layer(x, Context(role))[0]  # row i = Σ_j w(i, j) e_j
    torch.testing.assert_close(got, expected, rtol=1e-5, atol=1e-6)
    if role == "decoder":  # and step by step with the cache
        state = DecodeState()
        steps = []
        for t in range(T):
            steps.append(layer(x[:, t : t + 1], Context(role, state=state))[0])
            state.offset += 1
        torch.testing.assert_close(torch.cat(steps), expected, rtol=1e-5, atol=1e-6)


def test_gaussian_heads_split_the_values():
    T = 6
    layer = identity(single("gauss_att(l, r, att_num_hidden=6, num_hidden=6)", "encoder", T))
    got = layer(torch.eye(T).unsqueeze(0), Context("encoder"))[0]
    left, right = P.gaussian(T, "l"), P.gaussian(T, "r")
    torch.testing.assert_close(got[:, :3], left[:, :3])  # channels 0-2: head l
    torch.testing.assert_close(got[:, 3:], right[:, 3:])  # channels 3-5: head r


def test_gaussian_cuts_at_padding():
    T = 6
    layer = identity(single("gauss_att(c, window=3)", "encoder", T))
    pad = torch.tensor([[False] * 4 + [True] * 2])
    got = layer(torch.eye(T).unsqueeze(0), Context("encoder", pad=pad))[0]
    assert torch.all(got[:, 4:] == 0)  # no weight on padding
    torch.testing.assert_close(got[:4, :4], P.gaussian(4, "c", window=3))


def test_gaussian_cross_attention_applies_its_pattern():
    S, T = 8, 5
    program = adl.check(
        "gauss_src_att(l, ratio=1.5)", role="decoder", d_model=S, heads=2, source_d=S
    )
    layer = identity(build_network(program, program.network)[0].chain.layers[0])
    memory = Memory(torch.eye(S).unsqueeze(0), torch.zeros(1, S, dtype=torch.bool))
    got = layer(torch.zeros(1, T, S), Context("decoder", memory=memory))[0]
    torch.testing.assert_close(got, P.gaussian_cross(T, S, "l", ratio=1.5))


def test_gaussian_cross_attention_needs_a_ratio():
    texts = ("pos -> repeat(2, ffl)", "pos -> res_nd(gauss_src_att(l, c, r))")
    sizes = dict(src_vocab=10, tgt_vocab=10, d_model=12, heads=2)
    with pytest.raises(adl.ADLError, match="gauss_src_att needs ratio="):
        adl.build(*texts, **sizes)
    model = adl.build(*texts, **sizes, length_ratio=1.25)
    assert model.decoder.chain.layers[1].chain.layers[0].ratio == 1.25
    assert model.spec.length_ratio == 1.25


def test_hard_retrieval_toy_case():
    """V = [[1,0],[0,1],[2,2]], sampled index 1, G = [1,1]: output [0,1], grad of the
    probabilities [1,1,4], grad of V [[0,0],[1,1],[0,0]] (design.md §4)."""
    v = torch.tensor([[1.0, 0.0], [0.0, 1.0], [2.0, 2.0]], requires_grad=True)
    p = torch.tensor([[0.2, 0.5, 0.3]], requires_grad=True)
    out = HardRetrieval.apply(p, v, torch.tensor([1]))
    assert out.tolist() == [[0.0, 1.0]]
    out.backward(torch.tensor([[1.0, 1.0]]))
    assert p.grad.tolist() == [[1.0, 1.0, 4.0]]
    assert v.grad.tolist() == [[0.0, 0.0], [1.0, 1.0], [0.0, 0.0]]


def test_hard_attention_training_samples_and_inference_takes_the_argmax():
    torch.manual_seed(0)
    layer = single("hard_self_att(heads=2)", "encoder", 8)
    x = torch.randn(3, 5, 8)
    layer.train()
    torch.manual_seed(1)
    a = layer(x, Context("encoder"))
    torch.manual_seed(1)
    b = layer(x, Context("encoder"))
    assert torch.equal(a, b)  # deterministic under a seed
    a.sum().backward()  # gradients reach every projection
    assert all(p.grad is not None and p.grad.abs().sum() > 0 for p in layer.parameters())
    layer.eval()
    q, k, v = (t.view(3, 5, 2, 4).transpose(1, 2) for t in layer.qkv(x).chunk(3, -1))
    idx = (q @ k.transpose(-1, -2)).argmax(-1)  # Eq. 11: argmax of the scores
    picked = torch.gather(v, 2, idx.unsqueeze(-1).expand(-1, -1, -1, 4))
    expected = layer.out(picked.transpose(1, 2).reshape(3, 5, 8))
    torch.testing.assert_close(layer(x, Context("encoder")), expected)


def test_hard_attention_samples_follow_the_softmax():
    torch.manual_seed(0)
    scores = torch.tensor([[[[0.0, 1.0, 2.0]]]]).expand(1, 1, 4000, 3)
    v = torch.eye(3).view(1, 1, 3, 3)
    from adl.nn.hard import retrieve

    picks = retrieve(scores, v, None, training=True)[0, 0].mean(0)
    torch.testing.assert_close(
        picks, torch.softmax(torch.tensor([0.0, 1.0, 2.0]), 0), atol=0.03, rtol=0
    )


@pytest.mark.parametrize("pattern", P.PATTERNS)
def test_fixed_attention_applies_its_pattern(pattern):
    T = 6
    layer = identity(single(f"fixed_self_att({pattern}, learned=0)", "encoder", T))
    got = layer(torch.eye(T).unsqueeze(0), Context("encoder"))[0]
    torch.testing.assert_close(got, P.fixed(pattern, T))


def test_fixed_attention_word_level_reads_the_word_ids():
    T = 6
    layer = identity(single("fixed_self_att(prev, learned=0, unit=word)", "encoder", T))
    assert layer.reads_src_words
    words = torch.tensor([[0, 0, 1, 2, 2, 2]])
    ctx = Context("encoder")
    ctx.extra["words"] = words
    got = layer(torch.eye(T).unsqueeze(0), ctx)[0]
    torch.testing.assert_close(got, P.fixed_words("prev", [0, 0, 1, 2, 2, 2]))
    with pytest.raises(adl.InputError, match="needs the source's word ids"):
        layer(torch.eye(T).unsqueeze(0), Context("encoder"))


def test_word_level_model_says_it_needs_word_ids():
    model = adl.build(
        "pos -> res_nd(fixed_self_att(unit=word))",
        "pos -> res_nd(mh_dot_src_att)",
        src_vocab=10,
        tgt_vocab=10,
        d_model=16,
        heads=2,
    )
    assert model.needs_src_words
    src = torch.randint(4, 10, (2, 5))
    words = torch.tensor([[0, 1, 1, 2, 3], [0, 0, 1, 2, 2]])
    assert model(src, src[:, :3], src_words=words).shape == (2, 3, 10)


def test_fixed_attention_with_a_learned_head_never_attends_padding():
    torch.manual_seed(0)
    model = adl.build(
        "pos -> res_nd(fixed_self_att) -> norm",
        "pos -> res_nd(mh_dot_src_att)",
        src_vocab=10,
        tgt_vocab=10,
        d_model=16,
        heads=2,
    ).eval()
    src = torch.tensor([[5, 6, 7, 0, 0]])
    with torch.no_grad():
        torch.testing.assert_close(model.encode(src).top[:, :3], model.encode(src[:, :3]).top)


def test_local_self_attention_masks():
    layer = single("mh_dot_self_att(window=3)", "encoder", 8)
    mask, causal = layer.mask(Context("encoder"), 5, 5, torch.device("cpu"))
    assert torch.equal(mask.float(), P.band(5, 3)) and not causal
    dec = single("mh_dot_self_att(window=3)", "decoder", 8)
    mask, _ = dec.mask(Context("decoder"), 5, 5, torch.device("cpu"))
    assert torch.equal(mask.float(), P.band(5, 3, causal=True))


def test_joint_model_masks_positions_and_language():
    torch.manual_seed(0)
    text = "pos -> repeat(2, res_nd(mh_dot_self_att(window=3)) -> res_nd(ffl)) -> norm"
    model = adl.build(joint=text, src_vocab=20, tgt_vocab=30, d_model=16, heads=2).eval()
    assert model.spec.joint is not None and model.spec.encoder is None
    layer = model.network.chain.layers[1].copies[0].layers[0].chain.layers[0]
    from adl.nn import JointLayout

    ctx = Context("joint", joint=JointLayout(3, torch.zeros(1, 3, dtype=torch.bool)))
    mask, _ = layer.mask(ctx, 6, 6, torch.device("cpu"))
    assert torch.equal(mask[0, 0].float(), P.joint_band(3, 3, window=3))
    src, tgt = torch.randint(4, 20, (2, 4)), torch.randint(4, 30, (2, 5))
    with torch.no_grad():
        out = model(src, tgt)
        assert out.shape == (2, 5, 30)  # logits at target positions only
        # the source is encoded once, then the target steps through the cache
        memory, state = model.start(src)
        assert state.offset == 4
        steps = torch.cat([model.decode(tgt[:, t : t + 1], memory, state) for t in range(5)], 1)
        torch.testing.assert_close(steps, out, rtol=1e-5, atol=1e-5)
        # beam search reorders the cache and the source layout together
        index = torch.tensor([1, 1, 0])
        memory2, state2 = model.start(src)
        model.decode(tgt[:, :2], memory2, state2)
        state2.reorder(index)
        memory2 = memory2.reorder(index)
        nxt = model.decode(tgt[index, 2:3], memory2, state2)
        torch.testing.assert_close(nxt, out[index, 2:3], rtol=1e-5, atol=1e-5)


def test_joint_positions_start_at_zero_on_each_side():
    from adl.nn.position import sinusoids

    model = adl.build(joint="pos", src_vocab=10, tgt_vocab=10, d_model=8, heads=2, dropout=0.0)
    captured = {}

    def keep(module, args, out):
        captured["x"] = (args[0], out)

    model.network.chain.layers[0].register_forward_hook(keep)
    src, tgt = torch.tensor([[4, 5, 6]]), torch.tensor([[7, 8]])
    model(src, tgt)
    x, y = captured["x"]
    p = sinusoids(torch.tensor([[0, 1, 2, 0, 1]]), 8)
    torch.testing.assert_close(y, x * 8**0.5 + p)
    lang = model.language.weight
    torch.testing.assert_close(x[0, 0], model.src_embed.weight[4] + lang[0])
    torch.testing.assert_close(x[0, 3], model.tgt_embed.weight[7] + lang[1])


@pytest.mark.parametrize(
    "enc,dec",
    [
        (
            "pos -> res_nd(mh_dot_self_att) -> res_nd(gauss_att(l, r, window=3)) -> res_nd(fixed_self_att)",
            "pos -> res_nd(hard_self_att) -> res_nd(mh_dot_src_att) -> res_nd(mlp_att -> linear) "
            "-> res_nd(gauss_src_att(c, ratio=1)) -> res_nd(hard_src_att)",
        ),
    ],
)
def test_attention_records(enc, dec):
    torch.manual_seed(0)
    model = adl.build(enc, dec, src_vocab=20, tgt_vocab=20, d_model=16, heads=2).eval()
    src = torch.tensor([[5, 6, 7, 8, 0], [5, 6, 7, 8, 9]])
    tgt = torch.tensor([[1, 4, 5], [1, 6, 7]])
    records = model.attention(src, tgt)
    names = [(r.layer.split()[0], r.layer.split()[-1], r.kind) for r in records]
    assert names == [
        ("encoder", "mh_dot_self_att", "self"),
        ("encoder", "gauss_att", "self"),
        ("encoder", "fixed_self_att", "self"),
        ("decoder", "hard_self_att", "self"),
        ("decoder", "mh_dot_src_att", "source"),
        ("decoder", "mlp_src_att", "source"),
        ("decoder", "gauss_src_att", "source"),
        ("decoder", "hard_src_att", "source"),
    ]
    assert records[0].layer == "encoder 2.1 mh_dot_self_att"
    soft = records[0].weights
    assert soft.shape == (2, 2, 5, 5)
    torch.testing.assert_close(soft.sum(-1), torch.ones(2, 2, 5))
    assert torch.all(soft[0, :, :, 4] == 0)  # padding never attended
    assert records[2].weights.shape == (2, 8, 5, 5)  # 7 fixed heads + 1 learned
    hard = records[3].weights
    assert torch.all(hard.sum(-1) == 1) and torch.all((hard == 0) | (hard == 1))
    assert torch.all(torch.triu(hard[0, 0], 1) == 0)  # causal
    for r in records:
        if r.kind == "source":
            assert r.weights.shape[-2:] == (3, 5) and torch.all(r.weights[0, :, :, 4] == 0)
    assert model.attention(src, tgt) is not records and model._recording is None
