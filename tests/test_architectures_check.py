"""Every shipped architecture under architectures/ checks clean, cites its paper, and the
Domhan (2018) set (Tables 2-5) is complete."""
from pathlib import Path

import pytest

import adl

ROOT = Path(__file__).resolve().parent.parent
ARCH = ROOT / "architectures"
FILES = sorted(ARCH.rglob("*.adl"))
IDS = [str(p.relative_to(ARCH)) for p in FILES]

PAPERS = ("Domhan", "Vaswani", "Gehring", "Luong", "Wu et al")

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
    *(f"table4_cnn_{act}{row}.adl" for act in ("glu", "relu") for row in ("", "_norm", "_mh", "_ff")),
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


def expected_roles(path: Path) -> set[str]:
    if path.name.endswith(".enc.adl"):
        return {"encoder"}
    if path.name.endswith(".dec.adl"):
        return {"decoder"}
    return {"encoder", "decoder"}       # model files: encoder = ... and decoder = ...


def test_found_the_architectures():
    assert len(FILES) >= len(DOMHAN2018) + 8


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
    if path.parent.name == "domhan2018":
        assert "BLEU" in " ".join(header), "a Domhan (2018) file reports the paper's BLEU"


def test_domhan2018_set_is_complete():
    on_disk = {p.name for p in (ARCH / "domhan2018").glob("*.adl")}
    assert on_disk == DOMHAN2018, (f"missing: {sorted(DOMHAN2018 - on_disk)}, "
                                   f"unexpected: {sorted(on_disk - DOMHAN2018)}")


def test_table3_rnmt_is_the_rnmt_pair():
    model = adl.check(ARCH / "domhan2018" / "table3_rnmt.adl")
    enc = adl.check(ARCH / "rnmt.enc.adl").network
    dec = adl.check(ARCH / "rnmt.dec.adl").network
    assert model.encoder.params == enc.params
    assert model.decoder.params == dec.params
