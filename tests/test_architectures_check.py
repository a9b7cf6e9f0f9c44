"""Every shipped architecture under architectures/ checks clean, cites its paper, and the
paper sets are complete: Domhan (2018) Tables 2-5, You et al. (2020), Raganato et al. (2020),
Xu et al. (2020) and Fonollosa et al. (2019)."""

from pathlib import Path

import pytest

import adl

ROOT = Path(__file__).resolve().parent.parent
ARCH = ROOT / "architectures"
FILES = sorted(ARCH.rglob("*.adl"))
IDS = [str(p.relative_to(ARCH)) for p in FILES]

PAPERS = ("Domhan", "Vaswani", "Gehring", "Luong", "Wu et al", "You", "Raganato", "Xu", "Fonollosa")

DOMHAN2018 = {
    # Table 2: which encoder block the source attention reads (Transformer decoders)
    "table2_upper.dec.adl",
    "table2_increasing.dec.adl",
    "table2_decreasing.dec.adl",
    # Table 3: RNN -> Transformer (whole models)
    "table3_rnmt.adl",
    "table3_rnn.adl",
    "table3_rnn_mh.adl",
    "table3_rnn_mh_pos.adl",
    "table3_rnn_mh_pos_norm.adl",
    "table3_multi_att_1h.adl",
    "table3_multi_att.adl",
    "table3_ff.adl",
    # Table 4: CNN -> Transformer, GLU and ReLU (whole models)
    *(
        f"table4_cnn_{act}{row}.adl"
        for act in ("glu", "relu")
        for row in ("", "_norm", "_mh", "_ff")
    ),
    # Table 5: self-attention replaced on either side
    "table5_self_att.enc.adl",
    "table5_rnn.enc.adl",
    "table5_cnn.enc.adl",
    "table5_self_att.dec.adl",
    "table5_rnn.dec.adl",
    "table5_cnn.dec.adl",
    "table5_combined.dec.adl",
    "table5_none.dec.adl",
}

YOU2020 = {
    # Table 2: BASE, HC-SA, HC-ALL (encoder: hc_sa), SH-X (encoder: hc_sa)
    "base.enc.adl",
    "base.dec.adl",
    "hc_sa.enc.adl",
    "hc_sa.dec.adl",
    "hc_all.dec.adl",
    "sh_x.dec.adl",
    # Table 3 (Table 7 at the IWSLT size): self-attention removed
    "base_no_sa.enc.adl",
    "base_no_sa.dec.adl",
    "sh_x_no_sa.enc.adl",
    "sh_x_no_sa.dec.adl",
    # Table 5: HC-SA as a window-3 convolution, and by indexing
    "hc_sa_conv.enc.adl",
    "hc_sa_conv.dec.adl",
    "hc_sa_index.enc.adl",
    "hc_sa_index.dec.adl",
    # Table 6: the search over head offsets (whole models)
    "table6_ll_ll.adl",
    "table6_ll_cc.adl",
    "table6_ll_lc.adl",
    "table6_lr_lc.adl",
}

RAGANATO2020 = {
    # Table 1 (8L, 7Ftoken+1L, 7Fword+1L, 1L) and Table 5 (8F): encoders for transformer.dec.adl
    "8l.enc.adl",
    "7f_token_1l.enc.adl",
    "7f_word_1l.enc.adl",
    "1l.enc.adl",
    "8f.enc.adl",
}

XU2020 = {
    # Table 3: the soft baseline ("None"), hard retrieval in the decoder, or everywhere
    "base.enc.adl",
    "base.dec.adl",
    "hard_dec_cross.dec.adl",
    "hard_dec_self_cross.dec.adl",
    "hard_all.adl",
}

FONOLLOSA2019 = {
    # Table 1: joint (decoder-only) models, unconstrained and local, at the IWSLT and WMT sizes
    "joint_iwslt.joint.adl",
    "local_joint_iwslt.joint.adl",
    "joint_wmt.joint.adl",
    "local_joint_wmt.joint.adl",
    # the local joint model at half the IWSLT depth (7 layers), for the CPU sweep
    "local_joint_half_iwslt.joint.adl",
    # Table 1's Transformer as fairseq's transformer_iwslt_de_en (post-norm), their baseline
    "transformer_iwslt.enc.adl",
    "transformer_iwslt.dec.adl",
}

SETS = {
    "domhan2018": DOMHAN2018,
    "you2020": YOU2020,
    "raganato2020": RAGANATO2020,
    "xu2020": XU2020,
    "fonollosa2019": FONOLLOSA2019,
}

# folders whose papers print BLEU for every file (Raganato et al.'s tables are not in the
# copy of the paper the files were written from)
WITH_BLEU = {"domhan2018", "you2020", "xu2020", "fonollosa2019"}


def expected_roles(path: Path) -> set[str]:
    if path.name.endswith(".enc.adl"):
        return {"encoder"}
    if path.name.endswith(".dec.adl"):
        return {"decoder"}
    if path.name.endswith(".joint.adl"):
        return {"joint"}
    return {"encoder", "decoder"}  # model files: encoder = ... and decoder = ...


# variant folders: each file is a variant of the reproduction file of the same name one level
# up (prenorm/: pre-norm residuals; paper_text/: as the paper's text prints it)
VARIANTS = sorted(p for p in FILES if p.parent.name in ("prenorm", "paper_text"))


def test_found_the_architectures():
    assert len(FILES) >= sum(map(len, SETS.values())) + 8


@pytest.mark.parametrize("path", FILES, ids=IDS)
def test_checks_clean(path):
    program = adl.check(path)
    assert set(program.networks) == expected_roles(path)
    for role, net in program.networks.items():
        assert net.role == role
        assert net.d_out == 512, f"{role} output is {net.d_out} wide"
        assert net.params > 0
        if role == "decoder":
            assert net.attends_source
    assert [w.message for w in program.warnings] == []


@pytest.mark.parametrize("path", FILES, ids=IDS)
def test_header_cites_a_paper(path):
    lines = path.read_text(encoding="utf-8").splitlines()
    assert lines and lines[0].startswith("#"), "the first line must be a # comment"
    assert any(p in lines[0] for p in PAPERS), f"the first line names no paper: {lines[0]!r}"
    header = [ln for ln in lines[:5] if ln.startswith("#")]
    if path.parent.name in WITH_BLEU:
        assert "BLEU" in " ".join(header), f"a {path.parent.name} file reports the paper's BLEU"


@pytest.mark.parametrize("folder", sorted(SETS))
def test_paper_set_is_complete(folder):
    expected = SETS[folder]
    on_disk = {p.name for p in (ARCH / folder).glob("*.adl")}
    assert on_disk == expected, (
        f"missing: {sorted(expected - on_disk)}, unexpected: {sorted(on_disk - expected)}"
    )


def test_domhan2018_set_is_complete():
    test_paper_set_is_complete("domhan2018")


def test_table3_rnmt_is_the_rnmt_pair():
    model = adl.check(ARCH / "domhan2018" / "table3_rnmt.adl")
    enc = adl.check(ARCH / "rnmt.enc.adl").network
    dec = adl.check(ARCH / "rnmt.dec.adl").network
    assert model.encoder.params == enc.params
    assert model.decoder.params == dec.params


def test_you2020_table6_lr_lc_is_hc_sa():
    model = adl.check(ARCH / "you2020" / "table6_lr_lc.adl", d_model=288)
    enc = adl.check(ARCH / "you2020" / "hc_sa.enc.adl", d_model=288).network
    dec = adl.check(ARCH / "you2020" / "hc_sa.dec.adl", d_model=288).network
    assert model.encoder.params == enc.params
    assert model.decoder.params == dec.params


def test_fonollosa2019_local_windows():
    """The windows of Fonollosa et al. (2019) §4, from the input layer to the output layer."""
    iwslt = [3, 5, 7, 9, 11, 13, 15, 17, 21, 25, 29, 33, 37, 41]
    wmt = [7, 15, 31] + [63] * 11
    for name, windows in (
        ("local_joint_iwslt.joint.adl", iwslt),
        ("local_joint_half_iwslt.joint.adl", iwslt[1::2]),
        ("local_joint_wmt.joint.adl", wmt),
    ):
        net = adl.check(ARCH / "fonollosa2019" / name).network
        assert _windows(net.chain) == windows, name


def _windows(chain) -> list[int]:
    """The attention windows of a checked chain in order, repeats unrolled."""
    out = []
    for node in chain.nodes:
        if node.name == "mh_dot_self_att":
            out.append(node.args["window"])
        for child in node.children:
            out.extend(_windows(child) * node.repeat)
    return out


@pytest.mark.parametrize("path", FILES, ids=IDS)
def test_header_says_what_it_follows_and_how_it_deviates(path):
    from adl.docgen import header_parts

    parts = header_parts(path)
    assert parts["what"] and parts["follows"] and parts["deviations"], (
        "the header needs a description, a 'Follows:' line and a 'Deviations:' line"
    )


@pytest.mark.parametrize("path", VARIANTS, ids=[str(p.relative_to(ARCH)) for p in VARIANTS])
def test_variant_has_its_reproduction_file(path):
    reproduction = path.parent.parent / path.name
    assert reproduction.exists()
    assert f"../{path.name}" in path.read_text(encoding="utf-8")


PRENORM = [p for p in VARIANTS if p.parent.name == "prenorm"]


@pytest.mark.parametrize("path", PRENORM, ids=[str(p.relative_to(ARCH)) for p in PRENORM])
def test_prenorm_variant_differs_only_in_the_norms(path):
    """The same layers in the same order; the pre-norm form adds a final norm where the
    reference code has none (post-norm), and differs in no other parameter."""
    variant = adl.check(path, d_model=256, heads=4)
    reproduction = adl.check(path.parent.parent / path.name, d_model=256, heads=4)
    for role, net in variant.networks.items():
        other = reproduction.networks[role]
        final_norm = path.parent.parent.name == "xu2020"  # Neutron's order has one too
        assert net.params == other.params + (0 if final_norm else 2 * 256), role
        layers = [n.label() for _, _, n in net.chain.walk() if n.name not in _RESIDUALS]
        other_layers = [n.label() for _, _, n in other.chain.walk() if n.name not in _RESIDUALS]
        assert layers == other_layers, role


_RESIDUALS = {"res_d", "res_nd", "res", "norm"}


def test_you2020_reproduction_files_are_post_norm():
    """stupidNMT: norm(x + dropout(f(x))), no final norm."""
    for name in ("base.enc.adl", "hc_sa.dec.adl", "sh_x.dec.adl"):
        chain = adl.check(ARCH / "you2020" / name, d_model=288, heads=4).network.chain
        assert chain.nodes[-1].name == "repeat" or chain.nodes[-1].name == "norm"
        assert not chain.find("res_nd")
        assert chain.find("res_d") and chain.find("norm")
        if chain.nodes[-1].name == "norm":  # sh_x: the last layer is written out
            assert chain.nodes[-2].name == "res_d"


def test_raganato_1l_learned_head_is_one_eighth_of_the_model():
    net = adl.check(ARCH / "raganato2020" / "1l.enc.adl").network
    (att,) = {
        (n.args["heads"], n.args["att_num_hidden"]) for n in net.chain.find("mh_dot_self_att")
    }
    assert att == (1, 512 // 8)


def test_hc_all_offsets_follow_the_reference_run_and_the_text_variant():
    def offsets(path):
        (node,) = {
            tuple(n.args["offsets"]) for n in adl.check(path).network.chain.find("gauss_src_att")
        }
        return node

    assert offsets(ARCH / "you2020" / "hc_all.dec.adl") == ("l", "r")
    assert offsets(ARCH / "you2020" / "paper_text" / "hc_all.dec.adl") == ("l", "c", "r")
