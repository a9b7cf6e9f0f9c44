"""The checker: names, blocks, arguments, sizes, roles, variables."""

import pytest

import adl


def messages(text, role="encoder", **kw):
    with pytest.raises(adl.ADLError) as info:
        adl.check(text, role=role, **kw)
    return [d.message for d in info.value.errors]


def net(text, role="encoder", **kw):
    return adl.check(text, role=role, **kw).network


# --- blocks ------------------------------------------------------------------------------


def test_blocks_expand_in_place():
    n = net("t = res_nd(mh_dot_self_att) -> res_nd(ffl)\npos -> t -> t -> norm")
    assert [x.name for x in n.chain.nodes] == [
        "pos",
        "res_nd",
        "res_nd",
        "res_nd",
        "res_nd",
        "norm",
    ]
    assert n.chain.nodes[1].blocks == ("t",)


def test_block_parameters_take_chains_and_numbers():
    n = net("blk(x, n=2) = repeat(n, res_nd(x))\npos -> blk(ff(64) -> linear) -> blk(cnn, n=3)")
    reps = n.chain.find("repeat")
    assert [r.args["count"] for r in reps] == [2, 3]
    assert [c.name for c in reps[0].children[0].nodes[0].children[0].nodes] == ["ff", "linear"]


def test_block_arguments_resolve_in_the_callers_scope():
    n = net("inner(y) = res(y)\nouter(x) = inner(x -> dropout)\npos -> outer(ffl)")
    res = n.chain.find("res")[0]
    assert [c.name for c in res.children[0].nodes] == ["ffl", "dropout"]


@pytest.mark.parametrize(
    "text, expected",
    [
        ("b(x) = res(x)\npos -> b", "block 'b' needs the argument 'x'"),
        ("b(x) = res(x)\npos -> b(ffl, ffl)", "too many arguments: block 'b' takes 1"),
        ("b(x) = x(3)\npos -> b(ffl)", "'x' is a parameter of block 'b' and takes no arguments"),
        (
            "b(x) = res(x)\npos -> b(3)",
            "argument 1 of 'res' (chain) must be a layer or a chain of layers, not the integer 3",
        ),
        ("b(n) = n\npos -> b(3)", "'n' stands for the integer 3 here, not a layer"),
    ],
)
def test_block_argument_errors(text, expected):
    assert messages(text) == [expected]


def test_an_unknown_block_parameter():
    assert "block 'b' has no parameter 'y'" in messages("b(x) = res(x)\npos -> b(y=ffl)")


def test_recursion_through_another_block_and_through_arguments():
    assert messages("a = b\nb = ffl -> a\npos -> a") == ["recursive block 'a': a -> b -> a"]
    assert messages("a(x) = x\nb = a(b)\npos -> b") == ["recursive block 'b': b -> b"]


def test_unused_blocks_warn():
    p = adl.check("unused = ffl\npos -> norm", role="encoder")
    assert [w.message for w in p.warnings] == ["block 'unused' is never used"]


def test_exponential_expansion_is_stopped():
    text = "".join(f"b{i} = b{i + 1} -> b{i + 1}\n" for i in range(20)) + "b20 = norm\npos -> b0"
    assert messages(text) == [
        "the network expands to more than 10,000 layers (every block use and repeat copy counted)"
    ]


# --- arguments ---------------------------------------------------------------------------


def test_positional_arguments_of_both_spellings():
    cnn = net("cnn(glu)").chain.nodes[0]
    assert (cnn.args["act_type"], cnn.args["num_hidden"], cnn.args["kernel_width"]) == (
        "glu",
        512,
        3,
    )
    cnn = net("cnn(256, 5, relu) -> linear").chain.nodes[0]
    assert (cnn.args["num_hidden"], cnn.args["kernel_width"], cnn.args["act_type"]) == (
        256,
        5,
        "relu",
    )
    ff = net("ff(glu)").chain.nodes[0]
    assert (ff.args["num_hidden"], ff.args["act_type"]) == (512, "glu")
    att = net("mh_dot_src_att(4, 1)", role="decoder").chain.nodes[0]
    assert (att.args["heads"], att.args["s"]) == (4, 1.0)


def test_required_parameters_are_never_skipped():
    assert messages("repeat(two, ffl)") == [
        "argument 1 of 'repeat' (count) must be a positive integer, not 'two'"
    ]


@pytest.mark.parametrize(
    "text, expected",
    [
        # numbers bind in order (2 skips the symbol-valued act_type to reach dropout)
        (
            "ff(1, 2, 3)",
            [
                "argument 'dropout' of 'ff' must be a rate in [0, 1), not the integer 2",
                "too many arguments: 'ff' takes at most 3 arguments",
            ],
        ),
        ("norm(1, 2)", ["too many arguments: 'norm' takes at most 1 argument"]),
        ("ff(num_hidden=1, d_o=2)", ["argument 'num_hidden' of 'ff' is given twice"]),
        ("id(x=1)", ["'id' has no argument 'x'"]),
        (
            "ff(-3)",
            [
                "argument 'num_hidden' of 'ff' must be a size (a positive integer), not the integer -3"
            ],
        ),
        (
            "dropout(1.5)",
            ["argument 'dropout' of 'dropout' must be a rate in [0, 1), not the number 1.5"],
        ),
        (
            'ff(act="tanhh")',
            [
                "argument 'act_type' of 'ff' must be one of 'relu', 'gelu', 'glu', 'tanh', 'sigmoid', 'swish' or 'none', not the string \"tanhh\""
            ],
        ),
        ("concat", ["'concat' needs at least one chain"]),
    ],
)
def test_argument_errors(text, expected):
    assert messages(text) == expected


def test_defaults_come_from_the_model():
    n = net("ff -> mh_dot_self_att -> dropout", d_model=256, heads=4, dropout=0.3)
    ff, att, drop = n.chain.nodes
    assert ff.args["num_hidden"] == 256 and att.args["heads"] == 4 and drop.args["dropout"] == 0.3
    assert ff.given == () and ff.label() == "ff"


# --- values ------------------------------------------------------------------------------


def test_arithmetic_and_variables():
    n = net("ff(4 * $d_model) -> linear($d_model / 2) -> ff($X - 1)", vars={"X": 10})
    assert [x.d_out for x in n.chain.nodes] == [2048, 256, 9]
    assert messages("ff(4 * true)") == ["arithmetic needs numbers, not true"]
    assert messages("ff(4 / (2 - 2))") == ["division by zero"]
    assert messages("ff($d_model / 3)") == [
        "argument 'num_hidden' of 'ff' must be a size (a positive integer), not the number 170.667"
    ]
    assert messages("ff(m + 1)") == ["'m' is not a parameter of this expression"]


def test_variables_hold_any_value():
    n = net(
        "res_nd($SELF) -> ff(act=$ACT) -> repeat(n, norm)",
        vars={"SELF": "mh_dot_self_att", "ACT": "glu", "n": 3},
    )
    assert n.chain.nodes[0].children[0].nodes[0].name == "mh_dot_self_att"
    assert n.chain.nodes[1].args["act_type"] == "glu"
    assert n.chain.nodes[2].args["count"] == 3


def test_bad_hyper_parameters():
    with pytest.raises(adl.ADLError, match="d_model must be a positive integer"):
        adl.check("pos", role="encoder", d_model=0)
    with pytest.raises(adl.ADLError, match=r"\$heads is a model setting"):
        adl.check("pos", role="encoder", vars={"heads": 2})


# --- sizes -------------------------------------------------------------------------------


def test_size_rules():
    assert net("concat(id, ff(100), linear(28))").d_out == 640
    assert net("act(glu)").d_out == 256
    assert net("birnn(256)").d_out == 256
    assert messages("repeat(2, ff(100))") == [
        "'repeat' feeds each copy into the next, but the chain maps size 512 to 100"
    ]
    assert net("repeat(1, ff(100))").d_out == 100
    assert messages("pos", d_model=511) == ["sinusoidal positions need an even size, not 511"]
    assert messages("mh_dot_self_att(heads=3)") == ["3 heads do not divide the attention size 512"]
    assert (
        net("mh_dot_self_att(heads=3, att_num_hidden=384)").params
        == 3 * (512 * 384 + 384) + 384 * 512 + 512
    )


# --- roles and files -----------------------------------------------------------------------


def test_roles():
    assert messages("birnn", role="joint")[0].startswith(
        "'birnn' is not allowed in a joint network"
    )
    assert messages("res_nd(mh_dot_src_att)", role="joint")[0].startswith(
        "'mh_dot_src_att' is not allowed in a joint network"
    )
    warn = adl.check("pos -> rnn", role="decoder").warnings
    assert [w.message for w in warn] == [
        "this decoder never attends to the source: its translations cannot depend on the input"
    ]


def test_model_files_define_encoder_and_decoder():
    p = adl.check(
        "t = res_nd(ffl)\nencoder = pos -> ff(256) -> t\ndecoder = pos -> concat(id, mlp_att) -> ff"
    )
    assert set(p.networks) == {"encoder", "decoder"}
    assert p.decoder.source_d == 256  # the decoder reads this file's encoder
    assert p.decoder.chain.find("concat")[0].d_out == 768
    assert adl.check("joint = pos -> res_nd(mh_dot_self_att)").network.role == "joint"
    with pytest.raises(adl.ADLError, match="this file defines no 'joint'"):
        adl.check("encoder = pos", role="joint")


@pytest.mark.parametrize(
    "text,message",
    [
        ("encoder(x) = x", "'encoder' names the encoder network and cannot take parameters"),
        (
            "joint = pos\nencoder = pos",
            "a file defines either 'joint' or 'encoder'/'decoder', not both",
        ),
        (
            "encoder = pos\npos -> norm",
            "this file defines 'encoder' and also has a bare network chain",
        ),
        (
            "t = pos",
            "no network: the file has no bare chain and defines no 'encoder', 'decoder' or 'joint'",
        ),
        ("pos", "cannot tell whether this network is an encoder, a decoder or a joint network"),
    ],
)
def test_file_shape_errors(text, message):
    with pytest.raises(adl.ADLError) as info:
        adl.check(text)
    assert info.value.errors[0].message == message


def test_paths_and_sources(tmp_path):
    f = tmp_path / "t.dec.adl"
    f.write_text("pos -> res_nd(mh_dot_src_att)")
    assert adl.check(f).network.role == "decoder"
    assert adl.check(str(f)).network.role == "decoder"
    with pytest.raises(adl.ADLError, match="no such file"):
        adl.check(str(tmp_path / "missing.enc.adl"))
    bad = tmp_path / "bad.enc.adl"
    bad.write_bytes(b"pos -> \xff")
    with pytest.raises(adl.ADLError, match="not UTF-8"):
        adl.check(bad)


def test_program_carries_canonical_text_and_signature():
    p = adl.check("# c\npos→repeat(6,res_nd(ffl))", role="encoder")
    assert p.canonical == "pos -> repeat(6, res_nd(ffl))\n"
    assert p.signature == adl.text_hash(adl.parse(p.canonical))


def test_files_give_variables_defaults():
    text = "$layers = 6\n$ff = 4 * $d_model\nt = res_nd(ffl($ff))\npos -> repeat($layers, t)"
    net = adl.check(text, role="encoder", d_model=64).network
    assert net.chain.nodes[1].args["count"] == 6
    assert net.chain.find("ffl")[0].args["num_hidden"] == 256  # evaluated where used
    net = adl.check(text, role="encoder", d_model=64, vars={"layers": 2, "ff": 100}).network
    assert net.chain.nodes[1].args["count"] == 2  # --var wins
    assert net.chain.find("ffl")[0].args["num_hidden"] == 100
    assert messages("$a = $b\n$b = $a\npos -> ff($a)") == [
        "variable '$a' refers to itself: $a -> $b -> $a"
    ]
    assert messages("$x = 1\n$x = 2\npos") == ["'$x' is given a default twice"]
    assert messages("$heads = 2\npos") == ["'$heads' is a model setting, not a file's variable"]
