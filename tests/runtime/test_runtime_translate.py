"""``adl translate`` and ``adl eval`` on a run trained by the tests."""

import io
import shutil
import sys

import pytest
import torch
from conftest import run_cli
from runtime_helpers import QUICK, data_args, model_files, reverse_task

from adl.runtime import checkpoint as ckpt


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """A reverse-task run of 300 steps (a module's tests share it)."""
    tmp = tmp_path_factory.mktemp("translate")
    paths = reverse_task(tmp / "data", train=2000, valid=40)
    out = tmp / "run"
    code, _, err = run_cli(
        "train",
        *model_files(tmp),
        *data_args(paths),
        *QUICK,
        "--set",
        "d_model=48",
        "--set",
        "max_tokens=1024",
        "--set",
        "max_steps=300",
        "--set",
        "valid_every=300",
        "--out",
        str(out),
    )
    assert code == 0, err
    return tmp, out


def translate(monkeypatch, *argv, stdin=""):
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(stdin.encode("utf-8"))))
    return run_cli("translate", *argv)


def test_translate_stdin_to_stdout(run, monkeypatch):
    tmp, out = run
    code, stdout, err = translate(
        monkeypatch, "--model", str(out), "--beam", "4", stdin="a b c d\n\nq r s\n"
    )
    assert code == 0, err
    lines = stdout.split("\n")
    assert len(lines) == 4 and lines[1] == "" and lines[3] == ""  # one line per input line
    assert lines[0] == "d c b a" and lines[2] == "s r q"


def test_translate_files_and_nbest(run, tmp_path):
    tmp, out = run
    src = tmp_path / "in.txt"
    src.write_text("a b c\nf g h i j\n")
    hyp = tmp_path / "out.txt"
    code, _, err = run_cli(
        "translate",
        "--model",
        str(out),
        "--input",
        str(src),
        "--output",
        str(hyp),
        "--beam",
        "3",
        "--checkpoint",
        "last",
    )
    assert code == 0, err
    assert hyp.read_text().splitlines() == ["c b a", "j i h g f"]
    code, stdout, err = run_cli(
        "translate", "--model", str(out), "--input", str(src), "--beam", "3", "--nbest", "3"
    )
    assert code == 0, err
    rows = [line.split(" ||| ") for line in stdout.splitlines()]
    assert [r[0] for r in rows] == ["0"] * 3 + ["1"] * 3
    assert rows[0][1] == "c b a"
    scores = [float(r[3]) for r in rows[:3]]
    assert scores == sorted(scores, reverse=True)


def test_greedy_is_beam_1(run, tmp_path):
    tmp, out = run
    src = tmp_path / "in.txt"
    src.write_text("".join(f"{' '.join('abcdefghij'[i : i + 4])}\n" for i in range(6)))
    outs = []
    for beam in ("1", "1"):
        code, stdout, err = run_cli(
            "translate", "--model", str(out), "--input", str(src), "--beam", beam
        )
        outs.append(stdout)
    assert outs[0] == outs[1]


@pytest.mark.training
def test_eval_of_a_run_and_of_a_hypothesis_file(run, tmp_path):
    tmp, out = run
    data = tmp / "data"
    code, stdout, err = run_cli(
        "eval",
        "--model",
        str(out),
        "--src",
        str(data / "valid.src"),
        "--ref",
        str(data / "valid.tgt"),
        "--beam",
        "2",
        "--output",
        str(tmp_path / "hyp.txt"),
    )
    assert code == 0, err
    assert stdout.startswith("BLEU = ") and "signature: nrefs:1|" in stdout and "chrF2 = " in stdout
    bleu = float(stdout.split()[2])
    assert bleu > 50
    code, again, err = run_cli(
        "eval", "--hyp", str(tmp_path / "hyp.txt"), "--ref", str(data / "valid.tgt")
    )
    assert code == 0, err
    assert again == stdout


def test_a_moved_run_still_translates(run, tmp_path, monkeypatch):
    tmp, out = run
    moved = tmp_path / "elsewhere"
    shutil.copytree(out, moved)
    (moved / "tokenizer").rename(moved / "gone")  # the checkpoint carries everything
    code, stdout, err = translate(monkeypatch, "--model", str(moved), stdin="e f g\n")
    assert code == 0, err
    assert stdout == "g f e\n"


def test_bad_input_gets_one_clear_message(run, tmp_path, monkeypatch):
    tmp, out = run
    bad = tmp_path / "bad.txt"
    bad.write_bytes(b"a b c\n\xff\xfe d\n")
    code, _, err = run_cli("translate", "--model", str(out), "--input", str(bad))
    assert code == 1 and f"{bad}:2: not valid UTF-8" in err and "Traceback" not in err
    good = tmp_path / "good.txt"
    good.write_text("a b\n")
    code, _, err = run_cli("translate", "--model", str(tmp_path / "nothing"), "--input", str(good))
    assert code == 1 and "no such run directory or checkpoint file" in err
    # a checkpoint whose weights belong to another architecture
    state = ckpt.load(out / "checkpoints" / "last.pt")
    state["spec"] = dict(
        state["spec"], decoder="pos -> repeat(2, res_nd(rnn) -> res_nd(mh_dot_src_att)) -> norm\n"
    )
    other = tmp_path / "other.pt"
    torch.save(state, other)
    code, _, err = translate(monkeypatch, "--model", str(other), stdin="a b\n")
    assert code == 1 and "weights do not fit the model it describes" in err
    code, _, err = run_cli("eval", "--hyp", str(bad), "--ref", str(tmp / "data" / "valid.tgt"))
    assert code == 1 and "not valid UTF-8" in err
    short = tmp_path / "short.txt"
    short.write_text("x\n")
    code, _, err = run_cli("eval", "--hyp", str(short), "--ref", str(tmp / "data" / "valid.tgt"))
    assert code == 1 and "has 1 lines but" in err
    assert run_cli("eval", "--ref", str(short))[0] == 2
    assert run_cli("translate", "--model", str(out), "--beam", "0")[0] == 2
