"""Every ADL string of Domhan (2018) and the Sockeye acl18 spellings check clean in their role."""

import pytest

import adl

N6 = {"n": 6}

# (role, text, vars): the strings as printed in the paper (→ and the paper's free `n`).
PAPER = [
    # §2.4 RNMT
    ("encoder", "dropout → birnn → repeat(n - 1, res_d(rnn))", N6),
    ("decoder", "dropout → repeat(n, res_d(rnn)) → concat(id, mlp_att) → ff", N6),
    # §2.4 ConvS2S
    ("encoder", "pos → repeat(n, res(cnn(glu) → dropout))", N6),
    ("decoder", "pos → res(dropout → cnn(glu) → dropout → res(dot_src_att(s=1)))", {}),
    # §2.4 Transformer, with named blocks
    ("encoder", "t_enc = res_nd(mh_dot_self_att) → res_nd(ffl)\npos → repeat(n, t_enc) → norm", N6),
    (
        "decoder",
        "t_dec = res_nd(mh_dot_self_att) → res_nd(mh_dot_src_att) → res_nd(ffl)\n"
        "pos → repeat(n, t_dec) → norm",
        N6,
    ),
    # §4.3 Table 3: RNN
    ("encoder", "dropout → res_d(birnn) → repeat(5, res_d(rnn))", {}),
    ("decoder", "dropout → repeat(6, res_d(rnn)) → res_d(dot_src_att) → res_d(ffl)", {}),
    # §4.3 Table 3: the final RNN model (with the paper's typo fft corrected to ffl)
    (
        "encoder",
        "pos → res_nd(birnn) → res_nd(ffl) → repeat(5, res_nd(rnn)) → res_nd(ffl) → norm",
        {},
    ),
    ("decoder", "pos → repeat(6, res_nd(rnn)) → res_nd(mh_dot_src_att) → res_nd(ffl) → norm", {}),
    # §4.3 Table 4: CNN and the final CNN model
    ("encoder", "pos → repeat(6, res_d(cnn))", {}),
    ("decoder", "pos → repeat(6, res_d(cnn) → res_d(dot_src_att))", {}),
    ("encoder", "pos → repeat(6, res_nd(cnn) → res_nd(ffl)) → norm", {}),
    ("decoder", "pos → repeat(6, res_nd(cnn) → res_nd(mh_dot_src_att) → res_nd(ffl)) → norm", {}),
    ("encoder", "pos → repeat(6, res_d(cnn(glu)))", {}),
    # §4.4 Table 5, with named blocks that take the self-attention replacement
    (
        "encoder",
        "t_enc(x_enc) = res_nd(x_enc) → res_nd(ffl)\npos → repeat(6, t_enc(rnn)) → norm",
        {},
    ),
    (
        "encoder",
        "t_enc(x_enc) = res_nd(x_enc) → res_nd(ffl)\npos → repeat(6, t_enc(cnn)) → norm",
        {},
    ),
    (
        "decoder",
        "t_dec(x_dec) = res_nd(x_dec) → res_nd(mh_dot_src_att) → res_nd(ffl)\n"
        "pos → repeat(6, t_dec(rnn)) → norm",
        {},
    ),
    (
        "decoder",
        "t_dec(x_dec) = res_nd(x_dec) → res_nd(mh_dot_src_att) → res_nd(ffl)\n"
        "pos → repeat(6, t_dec(cnn)) → norm",
        {},
    ),
    (
        "decoder",
        "t_dec(x_dec) = res_nd(x_dec) → res_nd(mh_dot_src_att) → res_nd(ffl)\n"
        "pos → repeat(2, t_dec(mh_dot_self_att) → t_dec(rnn) → t_dec(cnn)) → norm",
        {},
    ),
    ("decoder", "t_dec = res_nd(mh_dot_src_att) → res_nd(ffl)\npos → repeat(6, t_dec) → norm", {}),
    # Table 2: which encoder block the source attention reads
    (
        "decoder",
        "pos → repeat(6, res_nd(mh_dot_self_att) → res_nd(mh_dot_src_att(encoder_block=increasing)) "
        "→ res_nd(ffl)) → norm",
        {},
    ),
    (
        "decoder",
        "pos → repeat(6, res_nd(mh_dot_self_att) → res_nd(mh_dot_src_att(encoder_block=decreasing)) "
        "→ res_nd(ffl)) → norm",
        {},
    ),
]

# Sockeye acl18 (README of the acl18 branch): --custom-seq-encoder / --custom-seq-decoder.
SOCKEYE = [
    (
        "decoder",
        "pos->repeat(6,res(norm->mh_dot_self_att)->res(norm->mh_dot_att)->res(norm->ff($FF_NUM_HIDDEN)->linear))->norm",
        {"FF_NUM_HIDDEN": 1024},
    ),
    ("encoder", "pos->repeat(6,res(norm->mh_dot_self_att)->res(norm->ff(2048)->linear))->norm", {}),
    ("encoder", "dropout->res(birnn->dropout)->repeat(5,res(rnn->dropout))", {}),
    (
        "decoder",
        "dropout->repeat(6,res(rnn->dropout))->res(mh_dot_att(heads=1))->res(ff(2048)->linear)",
        {},
    ),
    ("decoder", "dropout->repeat(6,res(rnn->dropout))->res(mh_dot_att)->res(ff(2048)->linear)", {}),
    ("encoder", "pos->res(birnn->dropout)->repeat(5,res(rnn->dropout))", {}),
    ("decoder", "pos->repeat(6,res(rnn->dropout))->res(mh_dot_att)->res(ff(2048)->linear)", {}),
    ("encoder", "pos->res(norm->birnn->dropout)->repeat(5,res(norm->rnn->dropout))->norm", {}),
    (
        "decoder",
        "pos->repeat(6,res(norm->rnn->dropout))->res(norm->mh_dot_att)->res(norm->ff(2048)->linear)->norm",
        {},
    ),
    (
        "decoder",
        "pos->repeat(6,res(norm->rnn->dropout)->res(norm->mh_dot_att(heads=1)))->res(norm->ff(2048)->linear)->norm",
        {},
    ),
    (
        "decoder",
        "pos->repeat(6,res(norm->rnn->dropout)->res(norm->mh_dot_att))->res(norm->ff(2048)->linear)->norm",
        {},
    ),
    (
        "encoder",
        "pos->res(norm->birnn->dropout)->res(norm->ff(2048)->linear)->repeat(5,res(norm->rnn->dropout)->res(norm->ff(2048)->linear))->norm",
        {},
    ),
    (
        "decoder",
        "pos->repeat(6,res(norm->rnn->dropout)->res(norm->mh_dot_att)->res(norm->ff(2048)->linear))->norm",
        {},
    ),
    ("encoder", "pos->repeat(6,res(norm->cnn(512,3,glu,0.1)))->highway(ffl)->norm", {}),
]


@pytest.mark.parametrize("role,text,vars", PAPER + SOCKEYE)
def test_checks_clean(role, text, vars):
    program = adl.check(text, role=role, vars=vars)
    net = program.network
    assert net.role == role
    assert net.d_out == 512
    assert net.params > 0
    errors_or_warnings = [w for w in program.warnings if "never attends" not in w.message]
    assert errors_or_warnings == []


def test_sockeye_cnn_encoder_at_its_model_size():
    # cnn($NUM_HIDDEN, 3, relu) inside res must keep the model size: with NUM_HIDDEN=256 the
    # model is 256 wide (the paper's WMT size); at 512 the residual cannot add 256 to 512.
    text = "pos->repeat(6,res(norm->cnn($NUM_HIDDEN,3,relu)))->norm"
    net = adl.check(text, role="encoder", d_model=256, vars={"NUM_HIDDEN": 256}).network
    assert net.d_out == 256 and net.params == 6 * (3 * 256 * 256 + 256 + 2 * 256) + 2 * 256
    with pytest.raises(adl.ADLError, match="maps size 512 to 256"):
        adl.check(text, role="encoder", vars={"NUM_HIDDEN": 256})


def test_transformer_matches_torch_parameter_count():
    torch = pytest.importorskip("torch")
    enc = adl.check(PAPER[4][1], role="encoder", vars=N6).network
    dec = adl.check(PAPER[5][1], role="decoder", vars=N6).network
    layer_e = torch.nn.TransformerEncoderLayer(512, 8, 2048, norm_first=True)
    layer_d = torch.nn.TransformerDecoderLayer(512, 8, 2048, norm_first=True)

    def count(m):
        return sum(p.numel() for p in m.parameters())

    assert enc.params == 6 * count(layer_e) + 2 * 512  # + the final norm
    assert dec.params == 6 * count(layer_d) + 2 * 512


@pytest.mark.parametrize(
    "text",
    [
        "pos → res_nd(birnn) → res_nd(fft) → repeat(5, res_nd(rnn)) → res_nd(fft) → norm",
        "pos → repeat(6, res_nd(rnn)) → res_nd(mh_dot_src_att) → res_nd(fft) → norm",
    ],
)
def test_paper_typo_fft_gets_hint_ffl(text):
    with pytest.raises(adl.ADLError) as info:
        adl.check(text, role="decoder" if "src_att" in text else "encoder")
    diags = info.value.errors
    assert diags and all(d.message == "unknown layer 'fft'" for d in diags)
    assert all(d.hint == "did you mean 'ffl'?" for d in diags)
    # both uses are reported, each at its own place
    assert len(diags) == text.count("fft")


def test_rnmt_decoder_sizes():
    # concat(id, mlp_att): 512 + the encoder's 512; ff brings it back to the model size.
    net = adl.check(PAPER[1][1], role="decoder", vars=N6).network
    concat = net.chain.find("concat")[0]
    assert (concat.d_in, concat.d_out) == (512, 1024)
    assert net.chain.nodes[-1].d_in == 1024
    # with a 256-wide encoder output the context of mlp_att is 256 wide
    net = adl.check(PAPER[1][1], role="decoder", vars=N6, source_d=256).network
    assert net.chain.find("concat")[0].d_out == 768
