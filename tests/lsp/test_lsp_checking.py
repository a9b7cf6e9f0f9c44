"""One implementation of checking: ``adl compile --check``'s (adl.batch.check_files), and
the editor's check of a file with its encoder."""

from pathlib import Path

import adl
from adl.batch import check_files
from adl.lsp.checking import check_text, encoder_of
from adl.lsp.settings import Settings
from adl.source import Source

ENC = "pos -> repeat(3, res_nd(mh_dot_self_att)) -> linear(256)\n"
DEC = "pos -> repeat(2, res_nd(mh_dot_src_att(encoder_block=5))) -> norm\n"


def test_check_files_pairs_a_decoder_with_the_encoder_given_beside_it():
    dec, enc = Source(DEC, "m.dec.adl"), Source(ENC, "m.enc.adl")
    results = check_files([dec, enc])
    assert isinstance(results[1], adl.Program)  # the order given
    assert isinstance(results[0], adl.ADLError)
    [d] = results[0].diagnostics
    assert "the encoder has 3 blocks" in d.message and d.source is dec
    [alone] = check_files([dec])
    assert isinstance(alone, adl.Program)
    assert alone.network.source_d == 512  # alone: d_model; beside the encoder: 256
    fixed = check_files([enc, Source(DEC.replace("=5", "=2"), "m.dec.adl")])[1]
    assert isinstance(fixed, adl.Program) and fixed.network.source_d == 256


def test_check_text_keeps_the_tree_of_a_file_with_errors():
    checked = check_text(Source("t = res_nd(fft)\npos -> t", "x.enc.adl"), Settings())
    assert checked.program is None and checked.tree is not None
    assert [o.name for o in checked.names] == ["t", "res_nd", "fft", "pos", "t"]
    assert [d.message for d in checked.diagnostics] == ["unknown layer 'fft'"]
    broken = check_text(Source("pos -> (", "x.enc.adl"), Settings())
    assert broken.tree is None and broken.diagnostics
    assert [(o.kind, o.name) for o in broken.names] == [("layer", "pos")]  # from the tokens


def test_check_text_reads_the_encoder_and_the_settings():
    enc = Source(ENC, "/m/a.enc.adl")
    checked = check_text(Source(DEC, "/m/a.dec.adl"), Settings(d_model=64, heads=4), enc)
    assert checked.encoder == "/m/a.enc.adl"
    assert "the encoder has 3 blocks" in checked.diagnostics[0].message
    ok = check_text(Source("pos -> ffl($ff)", "x.enc.adl"), Settings(vars=(("ff", 96),)))
    assert (
        ok.program is not None and ok.program.network.chain.nodes[1].label() == "ffl(num_hidden=96)"
    )
    assert ok.diagnostics == []


def test_the_encoder_of_a_decoder():
    there = {Path("/m/a.enc.adl"), Path("/m/b.encoder.adl"), Path("/m/c.enc.adl")}
    exists = there.__contains__
    assert encoder_of(Path("/m/a.dec.adl"), Settings(), exists) == Path("/m/a.enc.adl")
    assert encoder_of(Path("/m/b.decoder.adl"), Settings(), exists) == Path("/m/b.encoder.adl")
    assert encoder_of(Path("/m/a.enc.adl"), Settings(), exists) is None
    assert encoder_of(Path("/m/z.dec.adl"), Settings(), exists) is None
    paired = Settings(partner=Path("/m/c.enc.adl"))
    assert encoder_of(Path("/m/z.dec.adl"), paired, exists) == Path("/m/c.enc.adl")
    assert encoder_of(Path("/m/a.dec.adl"), paired, exists) == Path("/m/a.enc.adl")
