"""Which $variables a check reads, unused ones (a warning in adl compile, an error in adl
train), ``adl compile --preset``, and the Sockeye-spelling warning on a bare cnn."""

from pathlib import Path

import pytest
from conftest import ROOT, run_cli

import adl
from adl.runtime.config import ModelConfig
from adl.runtime.errors import ConfigError
from adl.runtime.model.build import check_model

ARCH = ROOT / "architectures"


# --- what a check reads ----------------------------------------------------------------------
def test_program_lists_the_variables_read():
    text = "$ff = 4 * $d_model\n$unused = 3\npos -> repeat($n, res_nd(ffl($ff))) -> norm"
    program = adl.check(text, role="encoder", vars={"n": 2})
    assert program.variables_read == {"n", "ff", "d_model"}  # $unused is declared, not read


def test_a_variable_given_wins_over_the_default_it_replaces():
    program = adl.check(ARCH / "transformer.enc.adl", vars={"enc_layers": 2})
    assert "enc_layers" in program.variables_read and "layers" not in program.variables_read
    program = adl.check(ARCH / "transformer.enc.adl")
    assert {"enc_layers", "layers"} <= program.variables_read


def test_reads_in_an_unused_block_do_not_count():
    program = adl.check("b = ffl($x)\npos -> norm", role="encoder", vars={"x": 8})
    assert "x" not in program.variables_read


def test_bare_variable_names_and_arithmetic_count():
    program = adl.check("pos -> repeat(n - 1, res_nd(ffl))", role="encoder", vars={"n": 3})
    assert "n" in program.variables_read


# --- unused variables ------------------------------------------------------------------------
def test_unused_variable_warning_names_the_nearest_one():
    program = adl.check(ARCH / "transformer.enc.adl", vars={"layer": 3})
    (warning,) = adl.unused_variables(["layer"], [program])
    assert warning.severity == "warning"
    assert warning.message == "variable $layer is set (--var) but the file never reads it"
    assert warning.hint == "did you mean '$layers'?"


def test_unused_variable_without_a_near_name_lists_what_is_read():
    program = adl.check(ARCH / "you2020/base.enc.adl")
    (warning,) = adl.unused_variables(["FFF"], [program], "preset x")
    assert "(preset x)" in warning.message
    assert warning.hint == "the file reads $ff, $layers"


def test_a_variable_read_by_the_other_file_of_the_model_is_used():
    enc, dec = adl.check_model(
        "pos -> repeat($n, res_nd(ffl)) -> norm",
        "pos -> repeat($m, res_nd(mh_dot_src_att)) -> norm",
        vars={"n": 1, "m": 2},
    )
    assert adl.unused_variables(["n", "m"], [enc, dec]) == []
    assert [w.message for w in adl.unused_variables(["n", "m"], [enc])] == [
        "variable $m is set (--var) but the file never reads it"
    ]


def test_compile_warns_about_an_unused_var():
    path = str(ARCH / "transformer.enc.adl")
    code, out, err = run_cli("compile", "--var", "FFF=1024", path)
    assert code == 0 and "ok" in out
    assert "adl: warning: variable $FFF is set (--var) but the file never reads it" in err
    code, _, err = run_cli("compile", "--var", "layer=3", path)
    assert "hint: did you mean '$layers'?" in err
    code, _, err = run_cli("compile", "--var", "layers=3", path)
    assert code == 0 and err == ""


def test_compile_counts_the_reads_of_every_file_given():
    enc, dec = str(ARCH / "transformer.enc.adl"), str(ARCH / "transformer.dec.adl")
    code, _, err = run_cli("compile", "--var", "dec_layers=1", enc, dec)
    assert code == 0 and err == ""
    code, _, err = run_cli("compile", "--var", "dec_layers=1", enc)
    assert "$dec_layers" in err and "did you mean '$enc_layers'?" in err


def test_typo_in_a_file_names_the_variable_and_the_nearest_one(tmp_path):
    path = tmp_path / "x.enc.adl"
    path.write_text("$layers = 6\npos -> repeat($layrs, res_nd(ffl)) -> norm\n")
    code, _, err = run_cli("compile", str(path))
    assert code == 1
    assert "error: unknown variable '$layrs'" in err
    assert "hint: did you mean '$layers'?" in err


# --- adl compile --preset --------------------------------------------------------------------
def test_compile_with_a_preset_uses_its_sizes_and_variables():
    code, out, err = run_cli(
        "compile", "--preset", "you2020_iwslt", str(ARCH / "you2020/base.enc.adl")
    )
    assert code == 0 and err == ""
    assert "encoder 288 → 288" in out
    code, out, _ = run_cli(
        "compile",
        "--preset",
        "you2020_iwslt",
        "--d-model",
        "512",
        str(ARCH / "you2020/base.enc.adl"),
    )
    assert "encoder 512 → 512" in out  # the command line wins over the preset


def test_compile_with_a_preset_warns_about_its_unused_variables():
    code, _, err = run_cli("compile", "--preset", "domhan2018_wmt", str(ARCH / "rnmt.enc.adl"))
    assert code == 0
    assert "variable $ff is set (preset domhan2018_wmt) but the file never reads it" in err


def test_compile_a_preset_without_files_checks_the_files_it_names():
    code, out, err = run_cli("compile", "--preset", "local_joint_iwslt")
    assert code == 0 and err == ""
    # joint and local joint, the local one at half depth (the sweep's), and their pre-norm variants
    assert out.count(": ok (joint 256 → 256") == 5


def test_compile_with_an_unknown_preset_is_one_clear_error():
    code, _, err = run_cli("compile", "--preset", "domhan2018", str(ARCH / "rnmt.enc.adl"))
    assert code == 1
    assert "unknown preset 'domhan2018' (did you mean 'domhan2018_wmt'?" in err or (
        "unknown preset 'domhan2018' (did you mean 'domhan2018_iwslt'?" in err
    )
    assert "Traceback" not in err


# --- adl train -------------------------------------------------------------------------------
def test_train_refuses_an_unused_variable_before_it_writes(tmp_path):
    model = ModelConfig(
        encoder=str(ARCH / "transformer.enc.adl"), decoder=str(ARCH / "transformer.dec.adl")
    )
    model.vars = {"layer": 2}
    with pytest.raises(
        ConfigError, match=r"\$layer is set \(model.vars\).*did you mean '\$layers'"
    ):
        check_model(model)
    model.vars = {"layers": 2}
    check_model(model)  # read by both files


def test_adl_train_stops_on_an_unused_variable_and_writes_nothing(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    for side in ("src", "tgt"):
        (data / f"train.{side}").write_text("a b c\nd e f\n" * 20)
    out = tmp_path / "run"
    code, _, err = run_cli(
        "train",
        str(ARCH / "transformer.enc.adl"),
        str(ARCH / "transformer.dec.adl"),
        "--train", str(data / "train"), "--langs", "src", "tgt",
        "--preset", "tiny", "--set", "model.vars.layrs=1", "--out", str(out),
    )  # fmt: skip
    assert code == 1
    assert "variable $layrs is set (model.vars)" in err and "did you mean '$layers'?" in err
    assert not Path(out).exists()


# --- Sockeye's spelling ------------------------------------------------------------------------
def test_bare_cnn_in_sockeye_spelling_warns():
    program = adl.check("pos->repeat(6,res(cnn->res(mh_dot_att(heads=1))))", role="decoder")
    (warning,) = program.warnings
    assert warning.message.startswith("bare 'cnn' is a ReLU convolution in ADL but a GLU one")
    assert "'mh_dot_att', line 1" in warning.message
    assert warning.hint.startswith("write cnn(glu)")
    assert warning.span.start == len("pos->repeat(6,res(")


@pytest.mark.parametrize(
    "text",
    [
        "pos->repeat(6,res(norm->cnn))->norm",  # res(norm -> ...)
        "pos->repeat(6,res(cnn))->highway(ffl)",  # highway
        "pos->repeat(6,res(cnn)->res(cnn($NUM_HIDDEN,3,relu)))",  # cnn(num_hidden, ...)
        "pos->repeat(6,res(cnn)->res(ff($FF_NUM_HIDDEN)->linear))",  # the README's variable
    ],
)
def test_each_sockeye_marker_makes_a_bare_cnn_warn(text):
    program = adl.check(text, role="encoder", vars={"NUM_HIDDEN": 512, "FF_NUM_HIDDEN": 1024})
    assert [w.message[:10] for w in program.warnings] == ["bare 'cnn'"]


@pytest.mark.parametrize(
    "text",
    [
        "pos -> repeat(6, res_d(cnn))",  # the paper's spelling: bare cnn is ReLU, no warning
        "pos->repeat(6,res(norm->cnn(glu)))->norm",  # activation written out
        "pos->repeat(6,res(norm->cnn(act_type=relu)))->norm",
        "pos->repeat(6,res(norm->cnn(256,3,relu)))->norm",
        "t(cnn) = res(norm -> cnn)\npos -> t(rnn) -> norm",  # a block parameter named cnn
    ],
)
def test_no_warning_without_sockeye_spelling_or_with_an_activation(text):
    assert adl.check(text, role="encoder", d_model=256).warnings == []
