"""Each Domhan (2018) reproduction file against the Sockeye acl18 README string of its row.

The README of https://github.com/awslabs/sockeye/tree/acl18 gives the --custom-seq-encoder /
--custom-seq-decoder strings that produced the tables. Both the file and the README string
are checked by ADL and brought to one normal form, a tree of primitive layers in which every
dropout is written out. The README side is read with Sockeye's meanings (sockeye/layers.py,
convolution.py of that branch): every layer gets the model's dropout for a ``dropout``
argument it was not given (``linear``, ``cnn`` and the attentions add dropout to their
output; ADL's ``linear`` and ``cnn`` have none and ADL's attention ``dropout`` is on the
weights), and a bare ``cnn`` is a GLU convolution. ``res_d`` / ``res_nd`` / ``ffl`` /
``repeat`` are expanded. The trees must be equal at both dataset sizes.
"""

from pathlib import Path

import pytest

import adl

ARCH = Path(__file__).resolve().parent.parent / "architectures" / "domhan2018"
D, DROP = 256, 0.1  # NUM_HIDDEN and --custom-seq-dropout of the README commands
SIZES = {"iwslt": 1024, "wmt": 4096}  # FF_NUM_HIDDEN

# The README's strings, verbatim.
T_ENC = "pos->repeat(6,res(norm->mh_dot_self_att)->res(norm->ff($FF_NUM_HIDDEN)->linear))->norm"
T_DEC = (
    "pos->repeat(6,res(norm->mh_dot_self_att)->res(norm->mh_dot_att)"
    "->res(norm->ff($FF_NUM_HIDDEN)->linear))->norm"
)
RNN_FF_ENC = (
    "pos->res(norm->birnn->dropout)->res(norm->ff($FF_NUM_HIDDEN)->linear)"
    "->repeat(5,res(norm->rnn->dropout)->res(norm->ff($FF_NUM_HIDDEN)->linear))->norm"
)
CNN_ENC = (
    "pos->repeat(6,res(norm->cnn($NUM_HIDDEN,3,relu))->res(norm->ff($FF_NUM_HIDDEN)->linear))->norm"
)
NORM_ENC = "pos->res(norm->birnn->dropout)->repeat(5,res(norm->rnn->dropout))->norm"
README = {
    # Table 2 is not in the README: "upper" is its Transformer, the others change the block
    "table2_upper.dec.adl": {"decoder": T_DEC},
    "table2_increasing.dec.adl": {
        "decoder": T_DEC.replace("mh_dot_att", "mh_dot_att(encoder_block=increasing)")
    },
    "table2_decreasing.dec.adl": {
        "decoder": T_DEC.replace("mh_dot_att", "mh_dot_att(encoder_block=decreasing)")
    },
    # Table 3
    "table3_rnn.adl": {
        "encoder": "dropout->res(birnn->dropout)->repeat(5,res(rnn->dropout))",
        "decoder": "dropout->repeat(6,res(rnn->dropout))->res(mh_dot_att(heads=1))"
        "->res(ff($FF_NUM_HIDDEN)->linear)",
    },
    "table3_rnn_mh.adl": {
        "encoder": "dropout->res(birnn->dropout)->repeat(5,res(rnn->dropout))",
        "decoder": "dropout->repeat(6,res(rnn->dropout))->res(mh_dot_att)"
        "->res(ff($FF_NUM_HIDDEN)->linear)",
    },
    "table3_rnn_mh_pos.adl": {
        "encoder": "pos->res(birnn->dropout)->repeat(5,res(rnn->dropout))",
        "decoder": "pos->repeat(6,res(rnn->dropout))->res(mh_dot_att)"
        "->res(ff($FF_NUM_HIDDEN)->linear)",
    },
    "table3_rnn_mh_pos_norm.adl": {
        "encoder": NORM_ENC,
        "decoder": "pos->repeat(6,res(norm->rnn->dropout))->res(norm->mh_dot_att)"
        "->res(norm->ff($FF_NUM_HIDDEN)->linear)->norm",
    },
    "table3_multi_att_1h.adl": {
        "encoder": NORM_ENC,
        "decoder": "pos->repeat(6,res(norm->rnn->dropout)->res(norm->mh_dot_att(heads=1)))"
        "->res(norm->ff($FF_NUM_HIDDEN)->linear)->norm",
    },
    "table3_multi_att.adl": {
        "encoder": NORM_ENC,
        "decoder": "pos->repeat(6,res(norm->rnn->dropout)->res(norm->mh_dot_att))"
        "->res(norm->ff($FF_NUM_HIDDEN)->linear)->norm",
    },
    "table3_ff.adl": {
        "encoder": RNN_FF_ENC,
        "decoder": "pos->repeat(6,res(norm->rnn->dropout)->res(norm->mh_dot_att)"
        "->res(norm->ff($FF_NUM_HIDDEN)->linear))->norm",
    },
    # Table 4
    "table4_cnn_glu.adl": {
        "encoder": "pos->repeat(6,res(cnn))",
        "decoder": "pos->repeat(6,res(cnn->res(mh_dot_att(heads=1))))",
    },
    "table4_cnn_glu_norm.adl": {
        "encoder": "pos->repeat(6,res(norm->cnn))->norm",
        "decoder": "pos->repeat(6,res(norm->cnn)->res(norm->mh_dot_att(heads=1)))->norm",
    },
    "table4_cnn_glu_mh.adl": {
        "encoder": "pos->repeat(6,res(norm->cnn))->norm",
        "decoder": "pos->repeat(6,res(norm->cnn)->res(norm->mh_dot_att))->norm",
    },
    "table4_cnn_glu_ff.adl": {
        "encoder": "pos->repeat(6,res(norm->cnn)->res(norm->ff($FF_NUM_HIDDEN)->linear))->norm",
        "decoder": "pos->repeat(6,res(norm->cnn)->res(norm->mh_dot_att)"
        "->res(norm->ff($FF_NUM_HIDDEN)->linear))->norm",
    },
    "table4_cnn_relu.adl": {
        "encoder": "pos->repeat(6,res(cnn($NUM_HIDDEN,3,relu)))",
        "decoder": "pos->repeat(6,res(cnn($NUM_HIDDEN,3,relu))->res(mh_dot_att(heads=1)))",
    },
    "table4_cnn_relu_norm.adl": {
        "encoder": "pos->repeat(6,res(norm->cnn($NUM_HIDDEN,3,relu)))->norm",
        "decoder": "pos->repeat(6,res(norm->cnn($NUM_HIDDEN,3,relu))"
        "->res(norm->mh_dot_att(heads=1)))->norm",
    },
    "table4_cnn_relu_mh.adl": {
        "encoder": "pos->repeat(6,res(norm->cnn($NUM_HIDDEN,3,relu)))->norm",
        "decoder": "pos->repeat(6,res(norm->cnn($NUM_HIDDEN,3,relu))->res(norm->mh_dot_att))->norm",
    },
    "table4_cnn_relu_ff.adl": {
        "encoder": CNN_ENC,
        "decoder": "pos->repeat(6,res(norm->cnn($NUM_HIDDEN,3,relu))->res(norm->mh_dot_att)"
        "->res(norm->ff($FF_NUM_HIDDEN)->linear))->norm",
    },
    # Table 5
    "table5_self_att.enc.adl": {"encoder": T_ENC},
    "table5_rnn.enc.adl": {"encoder": RNN_FF_ENC},
    "table5_cnn.enc.adl": {"encoder": CNN_ENC},
    "table5_self_att.dec.adl": {"decoder": T_DEC},
    "table5_rnn.dec.adl": {
        "decoder": "pos->repeat(6,res(norm->rnn->dropout)->res(norm->mh_dot_att)"
        "->res(norm->ff($FF_NUM_HIDDEN)->linear))->norm"
    },
    "table5_cnn.dec.adl": {
        "decoder": "pos->repeat(6,res(norm->cnn($NUM_HIDDEN,3,relu))->res(norm->mh_dot_att)"
        "->res(norm->ff($FF_NUM_HIDDEN)->linear))->norm"
    },
    "table5_combined.dec.adl": {
        "decoder": "pos->repeat(2,res(norm->mh_dot_self_att)->res(norm->mh_dot_att)"
        "->res(norm->ff($FF_NUM_HIDDEN)->linear)->res(norm->rnn->dropout)->res(norm->mh_dot_att)"
        "->res(norm->ff($FF_NUM_HIDDEN)->linear)->res(norm->cnn($NUM_HIDDEN,3,relu))"
        "->res(norm->mh_dot_att)->res(norm->ff($FF_NUM_HIDDEN)->linear))->norm"
    },
    "table5_none.dec.adl": {
        "decoder": "pos->repeat(6,res(norm->mh_dot_att)->res(norm->ff($FF_NUM_HIDDEN)->linear))->norm"
    },
}
NOT_IN_README = {"table3_rnmt.adl"}  # the RNMT rows used Sockeye's own RNN model
# the paper_text/ variants print another model than the README's: they must differ from it
VARIANTS = {
    "paper_text/table3_ff.adl": "table3_ff.adl",
    "paper_text/table4_cnn_glu.adl": "table4_cnn_glu.adl",
    "paper_text/table5_rnn.enc.adl": "table5_rnn.enc.adl",
}

OUTPUT_DROPOUT = {"linear", "cnn", "mh_dot_src_att", "mh_dot_self_att"}  # Sockeye's add one


def normal(chain, sockeye: bool) -> list:
    """A checked chain as primitive layers, dropouts written out, repeats unrolled."""
    out: list = []
    for node in chain.nodes:
        out += _node(node, sockeye)
    return out


def _drop(rate: float) -> list:
    return [("dropout", rate)] if rate else []


def _node(node, sockeye: bool) -> list:
    name, a = node.name, dict(node.args)
    kids = node.children
    if name == "repeat":
        return [item for _ in range(node.repeat) for item in normal(kids[0], sockeye)]
    if name == "res":
        return [("res", tuple(normal(kids[0], sockeye)))]
    if name == "res_d":
        return [("res", tuple(normal(kids[0], sockeye) + _drop(a["dropout"])))]
    if name == "res_nd":
        return [("res", tuple([("norm",)] + normal(kids[0], sockeye) + _drop(a["dropout"])))]
    if name == "norm":
        return [("norm",)]
    if name == "dropout":
        return _drop(a["dropout"])
    if name == "ffl":
        inner = a["num_hidden"] if a["num_hidden"] is not None else 4 * node.d_in
        return [("ff", inner, a["act_type"])] + _drop(a["dropout"]) + [("linear", node.d_in)]
    if sockeye and name in OUTPUT_DROPOUT | {"ff"} and "dropout" not in node.given:
        a["dropout"] = DROP  # Sockeye fills every 'dropout' argument with the model's
    if sockeye and name == "cnn" and "act_type" not in node.given:
        a["act_type"] = "glu"  # Sockeye's bare cnn is a GLU convolution
    if name == "ff":
        return [("ff", a["num_hidden"], a["act_type"])] + _drop(a["dropout"])
    if name == "linear":
        return [("linear", a["num_hidden"])] + _drop(a["dropout"])
    if name == "cnn":
        cnn = ("cnn", a["num_hidden"], a["kernel_width"], a["act_type"], a["dilation"])
        return [cnn] + _drop(a["dropout"])
    if name in ("mh_dot_src_att", "mh_dot_self_att"):
        weights = a.pop("dropout")
        after = DROP if sockeye else 0.0
        return [(name, tuple(sorted(a.items())), ("weights", weights))] + _drop(after)
    return [(name, tuple(sorted(node.plain_args().items())))]


def file_tree(path: Path, role: str, ff: int) -> list:
    program = adl.check(path, role=role, d_model=D, dropout=DROP, vars={"ff": ff})
    return normal(program.networks[role].chain, sockeye=False)


def readme_tree(text: str, role: str, ff: int) -> list:
    variables = {"FF_NUM_HIDDEN": ff, "NUM_HIDDEN": D}
    program = adl.check(text, role=role, d_model=D, dropout=DROP, vars=variables)
    return normal(program.network.chain, sockeye=True)


CASES = [(f, r) for f, roles in README.items() for r in roles]


@pytest.mark.parametrize("size", sorted(SIZES))
@pytest.mark.parametrize("name,role", CASES, ids=[f"{f}:{r}" for f, r in CASES])
def test_file_is_the_readme_string(name, role, size):
    ff = SIZES[size]
    assert file_tree(ARCH / name, role, ff) == readme_tree(README[name][role], role, ff)


def test_every_reproduction_file_has_its_readme_row():
    files = {p.name for p in ARCH.glob("*.adl")}
    assert files == set(README) | NOT_IN_README


@pytest.mark.parametrize("variant,reproduction", sorted(VARIANTS.items()))
def test_paper_text_variants_differ_from_the_model_that_ran(variant, reproduction):
    roles = adl.check(ARCH / variant).networks
    differs = [
        r
        for r in roles
        if file_tree(ARCH / variant, r, 1024) != readme_tree(README[reproduction][r], r, 1024)
    ]
    assert differs, f"{variant} is the README's model: it is no variant"


def test_normal_form_tells_sockeye_and_adl_spellings_apart():
    """Pasted into ADL as written, a README string is another model: the normal form (and so
    the tests above) sees the difference."""
    text = "pos->repeat(6,res(norm->cnn)->res(norm->mh_dot_att))->norm"
    as_adl = normal(adl.check(text, role="decoder", d_model=D).network.chain, sockeye=False)
    assert as_adl != readme_tree(text, "decoder", 1024)
    old = "pos->repeat(6,res(norm->rnn->dropout)->res(norm->mh_dot_att)->res(norm->ff(1024)->linear))->norm"
    old_tree = normal(adl.check(old, role="decoder", d_model=D).network.chain, sockeye=False)
    assert old_tree != readme_tree(README["table5_rnn.dec.adl"]["decoder"], "decoder", 1024)
