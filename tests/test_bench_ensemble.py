"""bench/ensemble.py names its systems by the runs' folders relative to the folder above the
one they share, so that a committed result holds no machine's absolute paths."""

import sys

from conftest import ROOT

sys.path.insert(0, str(ROOT / "bench"))

import ensemble  # noqa: E402


def test_runs_named_from_the_folder_above_the_one_they_share(tmp_path):
    a, b = tmp_path / "you2020" / "BASE" / "seed-1", tmp_path / "you2020" / "HC-SA" / "seed-1"
    assert ensemble.run_names([str(a), str(b)]) == ["you2020/BASE/seed-1", "you2020/HC-SA/seed-1"]


def test_seeds_of_one_system_keep_the_system_in_their_names(tmp_path):
    runs = [str(tmp_path / "sweep" / "HC-SA" / f"seed-{n}") for n in (1, 2)]
    assert ensemble.run_names(runs) == ["HC-SA/seed-1", "HC-SA/seed-2"]


def test_the_committed_result_holds_no_absolute_path():
    import json

    rows = json.loads((ROOT / "docs/results/bench/ensemble.json").read_text())["rows"]
    assert all(not r["system"].startswith("/") for r in rows)
