"""An encoder and a decoder are checked together: every encoder_block= must name a block the
encoder has, whether they come as two files, one model file, or a checkpoint's spec."""

import pytest
from conftest import ROOT, run_cli

import adl

ARCH = ROOT / "architectures"
FIVE = "pos -> repeat(5, res_nd(mh_dot_self_att) -> res_nd(ffl)) -> norm\n"
SIX_INCREASING = (
    "t = res_nd(mh_dot_self_att) -> res_nd(mh_dot_src_att(encoder_block=increasing))\n"
    "pos -> repeat(6, t) -> norm\n"
)


def test_check_model_refuses_what_only_building_refused_before():
    with pytest.raises(adl.ADLError) as info:
        adl.check_model(FIVE, SIX_INCREASING, d_model=32, heads=4)
    [error] = info.value.errors
    assert error.message == (
        "encoder_block=increasing pairs each of the decoder's 6 blocks with an encoder block, "
        "but the encoder has 5"
    )
    assert SIX_INCREASING[error.span.start : error.span.end] == "increasing"
    assert error.hint == "give the decoder at most 5 blocks, or the encoder at least 6"
    enc, dec = adl.check_model(FIVE.replace("5", "6"), SIX_INCREASING, d_model=32, heads=4)
    assert (enc.network.blocks, dec.network.blocks) == (6, 6)


def test_compile_check_of_a_pair_refuses_it():
    enc = ARCH / "rnmt.enc.adl"  # five blocks
    dec = ARCH / "domhan2018" / "table2_increasing.dec.adl"  # six, reading increasing
    code, out, err = run_cli("compile", "--check", str(enc), str(dec))
    assert code == 1
    assert out.startswith(f"{enc}: ok (encoder 512 → 512, ")
    lines = dec.read_text().splitlines()
    row = next(i for i, line in enumerate(lines) if "encoder_block=increasing" in line)
    col = lines[row].index("increasing")
    assert err == (
        f"{dec}:{row + 1}:{col + 1}: error: encoder_block=increasing pairs each of the "
        "decoder's 6 blocks with an encoder block, but the encoder has 5\n"
        f"  | {lines[row]}\n"
        f"  | {' ' * col}{'^' * len('increasing')}\n"
        f"{enc}: note: the encoder it is checked with\n"
        "hint: give the decoder at most 5 blocks, or the encoder at least 6\n"
        "1 error in 1 file\n"
    )
    code, _, _ = run_cli("compile", "--check", str(ARCH / "transformer.enc.adl"), str(dec))
    assert code == 0


def test_a_model_file_is_checked_as_a_pair():
    text = "encoder = pos -> ffl\ndecoder = pos -> repeat(2, res(mh_dot_src_att(block=1)))\n"
    with pytest.raises(adl.ADLError) as info:
        adl.check(text, d_model=32, heads=4)
    assert [d.message for d in info.value.errors] == [
        "encoder_block=1 needs an encoder built from repeat(n, ...): this encoder has no blocks"
    ]


def test_a_decoder_alone_is_checked_for_what_it_decides():
    # increasing/decreasing pair decoder blocks with encoder blocks: only inside its repeat
    with pytest.raises(adl.ADLError) as info:
        adl.check("pos -> res(mh_dot_src_att(encoder_block=decreasing))", role="decoder")
    assert [d.message for d in info.value.errors] == [
        "encoder_block=decreasing pairs decoder blocks with encoder blocks, so it must be "
        "inside the decoder's repeat(n, ...)"
    ]
    # which blocks exist is the encoder's business: a decoder alone checks
    adl.check("pos -> repeat(9, res(mh_dot_src_att(encoder_block=7)))", role="decoder")


def test_pairs_of_the_library_that_check_also_build():
    """Every encoder of architectures/ with every decoder that names encoder blocks: what
    check_model accepts builds (before, 41 such accepted pairs failed only in adl.build)."""
    decoders = [p for p in ARCH.rglob("*.dec.adl") if "encoder_block" in p.read_text()]
    encoders = sorted(ARCH.rglob("*.enc.adl"))
    refused = 0
    for dec in decoders:
        for enc in encoders:
            try:
                adl.check_model(enc, dec, d_model=16, heads=2)
            except adl.ADLError:
                refused += 1
                continue
            adl.build(enc, dec, src_vocab=8, tgt_vocab=8, d_model=16, heads=2, length_ratio=1.0)
    assert 0 < refused < len(decoders) * len(encoders)
