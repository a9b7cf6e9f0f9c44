"""docs/runtime.md stays true: its quick start runs as written; every preset, setting and
run-directory entry it names exists."""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT
from runtime_helpers import env

from adl.runtime import config as cfg
from adl.runtime.rundir import RunDir

DOC = (ROOT / "docs" / "runtime.md").read_text(encoding="utf-8")


@pytest.mark.slow
def test_the_quick_start_runs_as_written(tmp_path):
    script = re.search(r"```sh\n(.*?)```", DOC, re.S).group(1)
    e = env()
    e["PATH"] = str(Path(sys.executable).parent) + os.pathsep + e["PATH"]  # adl, python3
    r = subprocess.run(
        ["bash", "-e", "-c", script],
        cwd=tmp_path,
        env=e,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert r.returncode == 0, r.stderr[-3000:]
    promised = re.search(r"The last line prints `(.*?)`", DOC).group(1)
    assert r.stdout.strip().splitlines()[-1] == promised
    assert (tmp_path / "toy" / "run" / "checkpoints" / "average.pt").is_file()
    # "Using a trained model" goes on in toy/: its Python prints what the page shows, and
    # the export and CTranslate2 commands write and print what it shows
    section = DOC[DOC.index("## Using a trained model") : DOC.index("## Translating and scoring")]
    script = re.search(r"```sh\n(.*?)```", section, re.S).group(1)
    shown = re.search(r"prints\n\n```text\n(.*?)```", section, re.S).group(1)

    def sh(script: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            ["bash", "-e", "-c", script],
            cwd=tmp_path / "toy",
            env=e,
            capture_output=True,
            text=True,
            timeout=600,
        )

    r = sh(script)
    assert r.returncode == 0, r.stderr[-3000:]
    assert r.stdout == shown
    for command, output in re.findall(r"^\$ (.*)\n((?:[^$`].*\n)*)", section, re.M):
        r = sh(command)
        assert r.returncode == 0, (command, r.stderr[-3000:])
        assert r.stdout == output, command


def test_the_presets_table_lists_every_preset():
    table = re.findall(r"^\| `(\w+)` \|", DOC, re.M)
    assert sorted(table) == cfg.presets()


def test_every_setting_named_exists():
    named = set(re.findall(r"`((?:model|data|optim|schedule|train)\.\w+)", DOC))
    named -= {"train.en", "train.de"}  # data files in the examples
    named -= {"model.json", "model.safetensors"}  # the files of adl export
    assert named and named <= set(cfg.keys())


def test_the_layout_matches_run_dir():
    run = RunDir(Path("RUN"))
    for path in (
        run.config,
        run.checkpoints / "step-NNNNNNN.pt",
        run.last,
        run.best,
        run.average,
        run.metrics,
        run.log,
        run.lock,
        run.damaged,
        run.tokenizer / "joint.model",
    ):
        assert f"{path}" in DOC, path


def test_every_adl_train_option_is_documented():
    from adl.cli import parser

    train = parser()._subparsers._group_actions[0].choices["train"]
    options = {o for a in train._actions for o in a.option_strings if o.startswith("--")}
    options -= {"--help"}
    missing = sorted(o for o in options if not re.search(rf"{re.escape(o)}\b(?!-)", DOC))
    assert "--init-from" in options and not missing, missing


@pytest.mark.slow  # reads every committed result file again: CI runs it (make test-slow)
def test_the_experiments_tables_are_the_committed_results():
    """docs/experiments.md holds one report block per bundled spec, each exactly what
    ``adl sweep report SPEC`` makes of docs/results/SPEC (regenerate with
    ``adl sweep report --update-doc docs/experiments.md``)."""
    from adl.runtime import sweep
    from adl.runtime.sweep.report import BLOCK, update_doc

    path = ROOT / "docs" / "experiments.md"
    blocks = [m["args"] for m in BLOCK.finditer(path.read_text(encoding="utf-8"))]
    assert sorted(blocks) == sorted(sweep.bundled())
    assert update_doc(path, write=False) == [], (
        "run adl sweep report --update-doc docs/experiments.md"
    )


def test_each_papers_account_lists_its_disagreements_and_quotes_no_sentence_only_p():
    """docs/experiments.md: every paper's section lists its disagreements with the paper, and
    no account quotes a p-value of the sentence-only test as a finding (the verdicts are the
    tables', from the test over the runs)."""
    text = (ROOT / "docs" / "experiments.md").read_text(encoding="utf-8")
    papers = text.split("## The five papers, measured")[1].split("\n## ")[0]
    sections = re.split(r"^### ", papers, flags=re.M)[1:]
    names = ["You et al.", "Xu et al.", "Raganato et al.", "Domhan (2018): how much", "Fonollosa"]
    for name in names:
        (section,) = [s for s in sections if s.startswith(name)]
        assert "**Disagreements with the paper" in section, name
        prose = "\n".join(line for line in section.splitlines() if not line.startswith("|"))
        assert not re.search(r"p = 0\.00\d", prose), name
