"""``adl compile``: exit codes, messages, the summary table."""

import subprocess
import sys

import pytest
from conftest import ROOT, run_cli

import adl

ENC = ROOT / "architectures" / "transformer.enc.adl"
DEC = ROOT / "architectures" / "transformer.dec.adl"


def write(tmp_path, name, text):
    p = tmp_path / name
    p.write_text(text)
    return str(p)


def test_check_valid_files_exit_0():
    code, out, err = run_cli("compile", "--check", str(ENC), str(DEC))
    assert code == 0, err
    assert f"{ENC}: ok (encoder 512 → 512, 18,915,328 parameters)" in out
    assert f"{DEC}: ok (decoder 512 → 512, 25,225,216 parameters)" in out


def test_invalid_file_exit_1_without_traceback(tmp_path):
    f = write(tmp_path, "x.enc.adl", "pos -> repeat(6, res_nd(fft))")
    code, out, err = run_cli("compile", "--check", f)
    assert code == 1
    assert "error: unknown layer 'fft'" in err and "Traceback" not in err
    assert err.rstrip().endswith("1 error in 1 file")


def test_usage_errors_exit_2(tmp_path):
    f = write(tmp_path, "x.enc.adl", "pos")
    assert run_cli("compile")[0] == 2
    assert run_cli("compile", "--role", "middle", f)[0] == 2
    assert run_cli("compile", "--heads", "0", f)[0] == 2
    assert run_cli("compile", "--var", "NOEQUALS", f)[0] == 2
    assert run_cli("nonsense")[0] == 2


def test_debug_shows_the_traceback(tmp_path):
    f = write(tmp_path, "x.enc.adl", "pos -> fft")
    with pytest.raises(adl.ADLError):
        run_cli("--debug", "compile", f)


def test_role_from_the_file_name_and_from_definitions(tmp_path):
    enc = write(tmp_path, "a.enc.adl", "pos -> res_nd(mh_dot_src_att)")
    dec = write(tmp_path, "a.dec.adl", "pos -> res_nd(mh_dot_src_att)")
    model = write(
        tmp_path,
        "model.adl",
        "encoder = pos -> res_nd(mh_dot_self_att)\ndecoder = pos -> res_nd(mh_dot_src_att)\n",
    )
    unknown = write(tmp_path, "what.adl", "pos -> ffl")
    assert run_cli("compile", enc)[0] == 1  # source attention in an encoder
    assert run_cli("compile", dec)[0] == 0
    code, out, _ = run_cli("compile", model)
    assert code == 0 and "encoder 512 → 512" in out and "decoder 512 → 512" in out
    code, _, err = run_cli("compile", unknown)
    assert code == 1 and "cannot tell whether this network is an encoder" in err
    assert run_cli("compile", "--role", "encoder", unknown)[0] == 0


def test_vars_and_model_options(tmp_path):
    f = write(
        tmp_path,
        "s.dec.adl",
        "pos->repeat(6,res(norm->mh_dot_self_att)->res(norm->mh_dot_att)"
        "->res(norm->ff($FF_NUM_HIDDEN)->linear))->norm",
    )
    assert run_cli("compile", f)[0] == 1
    code, out, err = run_cli("compile", "--var", "FF_NUM_HIDDEN=1024", f)
    assert code == 0, err
    code, out, err = run_cli(
        "compile", "--d-model", "256", "--heads", "4", "--var", "FF_NUM_HIDDEN=1024", f
    )
    assert code == 0 and "decoder 256 → 256" in out


def test_warnings_go_to_stderr_and_keep_exit_0(tmp_path):
    f = write(tmp_path, "lm.dec.adl", "pos -> repeat(2, res_nd(mh_dot_self_att) -> res_nd(ffl))")
    code, out, err = run_cli("compile", f)
    assert code == 0
    assert "warning: this decoder never attends to the source" in err


def test_a_decoder_beside_its_encoder_reads_the_encoders_size(tmp_path):
    enc = write(tmp_path, "m.enc.adl", "pos -> ff(256)")
    dec = write(tmp_path, "m.dec.adl", "pos -> concat(id, mlp_att) -> ff")
    code, out, err = run_cli("compile", "--summary", dec, enc)
    assert code == 0, err
    assert "concat" in out and "512 → 768" in out


def test_summary_table():
    code, out, err = run_cli("compile", "--summary", str(ENC))
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0] == f"{ENC} (encoder)"
    assert lines[1].split() == ["position", "layer", "size", "params"]
    rows = {
        line.split()[0]: line
        for line in lines[3:]
        if line.strip() and not line.strip().startswith("-")
    }
    assert rows["1"].split() == ["1", "pos", "512", "→", "512", "0"]
    assert rows["2"].split() == ["2", "repeat(6)", "512", "→", "512", "18,914,304"]
    assert rows["2.1.1"].split() == ["2.1.1", "mh_dot_self_att", "512", "→", "512", "1,050,624"]
    assert rows["2.2.1"].split()[1] == "ffl"
    assert rows["3"].split() == ["3", "norm", "512", "→", "512", "1,024"]
    assert rows["total"].split() == ["total", "512", "→", "512", "18,915,328"]


def test_summary_labels_show_the_written_arguments(tmp_path):
    f = write(
        tmp_path,
        "c.enc.adl",
        "pos -> cnn(256, 3, relu) -> ff(1024, act=glu) -> repeat(2, ffl(d_ff=300))",
    )
    code, out, _ = run_cli("compile", "--summary", f)
    assert code == 0
    assert "cnn(num_hidden=256, kernel_width=3, act_type=relu)" in out
    assert "ff(num_hidden=1024, act_type=glu)" in out
    assert "ffl(num_hidden=300)" in out


def test_console_script_runs():
    exe = ROOT / ".venv" / "bin" / "adl"
    cmd = [str(exe)] if exe.exists() else [sys.executable, "-m", "adl"]
    r = subprocess.run(cmd + ["compile", "--check", str(ENC)], capture_output=True, text=True)
    assert r.returncode == 0 and "ok (encoder" in r.stdout


def test_a_worker_reports_user_errors_as_the_command_does(tmp_path, capsys):
    """The processes of ``adl train --nproc`` print a user error like ``adl train`` does:
    one message, exit 1, no traceback (adl.errors.report, the one place)."""
    from adl.runtime.training.worker import main as worker

    config = tmp_path / "config.yaml"
    config.write_text("optim:\n  lrr: 1\n")
    assert worker([str(config), str(tmp_path / "run")]) == 1
    err = capsys.readouterr().err
    assert err.splitlines() == [
        f"adl train: error: {config}: unknown setting 'optim.lrr' (did you mean 'optim.lr'?)"
    ]
