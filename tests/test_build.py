"""adl.build: every layer has a module, sizes and parameter counts agree with the checker,
models rebuild from their description, model-level errors are ADL errors."""

import pytest
import torch
from conftest import run_cli
from models import ARCH, TRANSFORMER, adl_files, small_model

import adl
from adl.models import build_network
from adl.nn import IMPLEMENTATIONS, Context, Memory
from adl.registry import REGISTRY

LAYERS = [
    ("dropout", "encoder"),
    ("id", "encoder"),
    ("linear(48)", "encoder"),
    ("linear(48, no_bias=true)", "encoder"),
    ("ff(48)", "encoder"),
    ("ff(48, glu)", "encoder"),
    ("ff(act=gelu)", "encoder"),
    ("ffl", "encoder"),
    ("ffl(100, glu)", "encoder"),
    ("act(glu)", "encoder"),
    ("act(swish)", "encoder"),
    ("norm", "encoder"),
    ("pos", "encoder"),
    ("learn_pos(max_len=64)", "encoder"),
    ("cnn", "encoder"),
    ("cnn(glu, k=4)", "decoder"),
    ("cnn(48, 5, relu, dilation=2)", "decoder"),
    ("rnn", "decoder"),
    ("rnn(48, gru)", "decoder"),
    ("birnn", "encoder"),
    ("birnn(cell=gru)", "encoder"),
    ("mh_dot_self_att", "encoder"),
    ("mh_dot_self_att(heads=2, att_num_hidden=48, num_hidden=40)", "decoder"),
    ("mh_dot_src_att", "decoder"),
    ("mh_dot_att(heads=1)", "decoder"),
    ("dot_src_att(s=1)", "decoder"),
    ("mlp_att", "decoder"),
    ("mlp_src_att(num_hidden=20)", "decoder"),
    ("res(ffl)", "encoder"),
    ("res_d(rnn)", "decoder"),
    ("res_nd(cnn)", "encoder"),
    ("highway(ff -> linear)", "encoder"),
    ("repeat(3, res_nd(ffl))", "encoder"),
    ("concat(id, ff(16), rnn(8))", "decoder"),
]


def test_every_layer_has_a_module():
    assert {s.name for s in REGISTRY} == set(IMPLEMENTATIONS)


@pytest.mark.parametrize("text,role", LAYERS, ids=[t for t, _ in LAYERS])
def test_modules_match_the_checker(text, role):
    """Output size and parameter count of each built layer equal what adl.check says."""
    program = adl.check(text, role=role, d_model=32, heads=4, source_d=24)
    net = program.network
    module, _ = build_network(program, net)
    assert sum(p.numel() for p in module.parameters()) == net.params
    x = torch.randn(2, 5, 32)
    memory = Memory(torch.randn(2, 7, 24), torch.zeros(2, 7, dtype=torch.bool))
    y = module(x, Context(role, pad=torch.zeros(2, 5, dtype=torch.bool), memory=memory))
    assert y.shape == (2, 5, net.d_out)


@pytest.mark.parametrize("path", adl_files(), ids=lambda p: str(p.relative_to(ARCH)))
def test_every_architecture_builds_and_summary_totals_match(path):
    program = adl.check(path)
    for _role, net in program.networks.items():
        # as beside the 6-block Transformer, on data of equal source and target lengths
        module, _ = build_network(program, net, encoder_blocks=6, length_ratio=1.0)
        assert sum(p.numel() for p in module.parameters()) == net.params
    code, out, err = run_cli("compile", "--summary", str(path))
    assert code == 0, err
    totals = [line.split()[-1] for line in out.splitlines() if line.strip().startswith("total")]
    assert totals == [f"{n.params:,}" for n in program.networks.values()]


@pytest.mark.training
def test_the_model_trains_a_step():
    model = small_model(*TRANSFORMER).train()
    src = torch.randint(4, 50, (4, 6))
    tgt = torch.randint(4, 60, (4, 5))
    opt = torch.optim.Adam(model.parameters(), 1e-3)
    losses = []
    for _ in range(5):
        loss = torch.nn.functional.cross_entropy(
            model(src, tgt[:, :-1]).flatten(0, 1), tgt[:, 1:].flatten()
        )
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert losses[-1] < losses[0]


def test_spec_rebuilds_the_model_without_its_files(tmp_path):
    enc = tmp_path / "m.enc.adl"
    dec = tmp_path / "m.dec.adl"
    enc.write_text(
        "# a comment\nt = res_nd(mh_dot_self_att) -> res_nd(ffl($FF))\npos -> repeat(2, t) -> norm\n"
    )
    dec.write_text("pos -> repeat(2, res_nd(rnn) -> res_nd(mh_dot_src_att)) -> norm\n")
    torch.manual_seed(0)
    model = adl.build(
        enc,
        dec,
        src_vocab=30,
        tgt_vocab=40,
        d_model=32,
        heads=4,
        dropout=0.0,
        vars={"FF": 64},
        tie_embeddings=True,
    )
    spec = model.spec.to_dict()
    enc.unlink(), dec.unlink()
    again = adl.build_from_spec(spec)
    again.load_state_dict(model.state_dict())
    src, tgt = torch.randint(4, 30, (2, 5)), torch.randint(4, 40, (2, 4))
    model.eval(), again.eval()
    torch.testing.assert_close(again(src, tgt), model(src, tgt))
    assert again.spec == model.spec
    assert spec["encoder"].startswith("t = res_nd(mh_dot_self_att) -> res_nd(ffl($FF))")
    assert again.output.weight is again.tgt_embed.weight


def test_model_file_with_both_networks():
    model = adl.build(
        ARCH / "domhan2018" / "table3_rnn.adl", src_vocab=20, tgt_vocab=20, d_model=32, heads=4
    )
    assert model.encoder.role == "encoder" and model.decoder.role == "decoder"


def test_shared_embeddings():
    sizes = dict(src_vocab=20, tgt_vocab=20, d_model=32, heads=4)
    model = adl.build(*TRANSFORMER, **sizes, share_embeddings=True, tie_embeddings=True)
    assert model.src_embed is model.tgt_embed and model.output.weight is model.src_embed.weight
    with pytest.raises(adl.ADLError, match="share_embeddings needs one vocabulary"):
        adl.build(*TRANSFORMER, src_vocab=20, tgt_vocab=21, share_embeddings=True)


def test_encoder_block_selection():
    """increasing: decoder block i reads the encoder's block i; decreasing: block n+1-i."""
    enc = "pos -> repeat(3, res_nd(mh_dot_self_att) -> res_nd(ffl)) -> norm"
    dec = "pos -> repeat(3, res_nd(mh_dot_self_att) -> res_nd(mh_dot_src_att(encoder_block={}))) -> norm"
    levels = {}
    for mode in ("increasing", "decreasing", "top", "0", "-1"):
        model = adl.build(enc, dec.format(mode), src_vocab=10, tgt_vocab=10, d_model=32, heads=4)
        levels[mode] = [
            copy.layers[1].chain.layers[0].level for copy in model.decoder.chain.layers[1].copies
        ]
    assert levels == {
        "increasing": [1, 2, 3],
        "decreasing": [3, 2, 1],
        "top": [None] * 3,
        "0": [0] * 3,
        "-1": [3] * 3,
    }
    # the level reads the recorded block states: U^0 is the input of the repeat
    model = adl.build(
        enc, dec.format("increasing"), src_vocab=10, tgt_vocab=10, d_model=32, heads=4
    ).eval()
    memory = model.encode(torch.randint(4, 10, (2, 5)))
    assert len(memory.blocks) == 4 and not torch.equal(memory.blocks[3], memory.top)


@pytest.mark.parametrize(
    "enc,dec,message",
    [
        (
            "pos -> ffl",
            "repeat(2, res(mh_dot_src_att(encoder_block=increasing)))",
            "encoder_block=increasing needs an encoder built from repeat(n, ...): this encoder has no blocks",
        ),
        (
            "repeat(2, ffl)",
            "repeat(3, res(mh_dot_src_att(encoder_block=decreasing)))",
            "encoder_block=decreasing pairs each of the decoder's 3 blocks with an encoder block, but the encoder has 2",
        ),
        (
            "repeat(2, ffl)",
            "res(mh_dot_src_att(encoder_block=increasing))",
            "encoder_block=increasing pairs decoder blocks with encoder blocks, so it must be inside the decoder's repeat(n, ...)",
        ),
        (
            "repeat(2, ffl)",
            "res(mh_dot_src_att(encoder_block=5))",
            "encoder_block=5 is out of range: the encoder has 2 blocks (0 is their input, 1..2 their outputs)",
        ),
    ],
)
def test_encoder_block_errors(enc, dec, message):
    with pytest.raises(adl.ADLError) as info:
        adl.build(enc, dec, src_vocab=10, tgt_vocab=10, d_model=32, heads=4)
    assert [d.message for d in info.value.errors] == [message]
    assert info.value.errors[0].span is not None


def test_tie_needs_the_model_size():
    with pytest.raises(adl.ADLError, match="tie_embeddings needs the decoder's output"):
        adl.build(
            ARCH / "transformer.enc.adl",
            "pos -> mh_dot_src_att -> ff(100)",
            src_vocab=10,
            tgt_vocab=10,
            tie_embeddings=True,
        )


@pytest.mark.parametrize(
    "flags", [[], ["--tie-embeddings"], ["--share-embeddings", "--tie-embeddings"]]
)
def test_model_summary_total_equals_the_built_model(flags):
    enc, dec = ARCH / "transformer_iwslt.enc.adl", ARCH / "transformer_iwslt.dec.adl"
    code, out, err = run_cli(
        "compile",
        "--summary",
        str(enc),
        str(dec),
        "--d-model",
        "64",
        "--src-vocab",
        "300",
        "--tgt-vocab",
        "300",
        *flags,
    )
    assert code == 0, err
    total = out.strip().splitlines()[-1].split()[-1]
    model = adl.build(
        enc,
        dec,
        src_vocab=300,
        tgt_vocab=300,
        d_model=64,
        tie_embeddings="--tie-embeddings" in flags,
        share_embeddings="--share-embeddings" in flags,
    )
    assert total == f"{sum(p.numel() for p in model.parameters()):,}"
