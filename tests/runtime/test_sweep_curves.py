"""``adl sweep curves``: the validations during training, from the result files alone."""

from __future__ import annotations

import json

import pytest
from conftest import ROOT, run_cli
from test_sweep_spec import GOOD, files

from adl.runtime import sweep
from adl.runtime.sweep import results as res
from adl.runtime.sweep.curves import curves

# system -> seed -> (validations as (step, loss, bleu), test BLEU)
RUNS = {
    "A": {1: ([(10, 4.0, 1.0), (20, 3.0, 5.0)], 6.0), 2: ([(10, 5.0, 2.0), (20, 3.5, 4.0)], 5.0)},
    "B": {1: ([(10, 3.0, 2.0), (20, 2.0, 8.0)], 9.0), 2: ([(10, 4.0, 4.0)], 7.5)},
    "C": {1: ([(10, 3.5, 1.5), (20, 2.5, 6.0)], 7.0)},
}
SYSTEMS = (
    "  - name: B\n    files: [a.enc.adl, a.dec.adl]\n"
    "  - name: C\n    files: [a.enc.adl, a.dec.adl]\n    against: B\n"
    "  - name: B-greedy\n    decode_of: B\n    decode: {beam: 1}\n"
)


def _sweep(tmp_path):
    files(tmp_path)
    (tmp_path / "spec.yaml").write_text(GOOD + SYSTEMS)
    spec, _ = sweep.load(tmp_path / "spec.yaml", tmp_path / "out")
    results = tmp_path / "results"
    res.write_references(results, spec, ["a b c"])
    for name, seeds in {**RUNS, "B-greedy": RUNS["B"]}.items():
        for seed, (validations, bleu) in seeds.items():
            record = {
                "bleu": bleu,
                "chrf": 2 * bleu,
                "steps": validations[-1][0],
                "validations": [{"step": s, "loss": x, "bleu": b} for s, x, b in validations],
            }
            res.write_record(res.record_path(results, spec, name, seed), record, ["a b"])
    return tmp_path / "spec.yaml", results


def test_curves_average_the_seeds_and_pair_each_system_with_the_one_it_is_compared_with(tmp_path):
    spec, results = _sweep(tmp_path)
    text = curves(spec, results)
    # loss: A (4.0+5.0)/2, B (3.0+4.0)/2, C 3.5 from one of two seeds; B-A seed by seed
    # ((3-4)+(4-5))/2 = -1; C-B on the seed both have (3.5-3.0)
    assert "| update | A | B | C | B − A | C − B |" in text
    assert "| 10 | 4.500 | 3.500 | 3.500 | -1.000 | +0.500 |" in text
    # at update 20 B's seed 2 has no validation: its mean and the difference use seed 1 only
    assert "| 20 | 3.250 | 2.000 (1 of 2) | 2.500 | -1.000 | +0.500 |" in text
    assert "| 10 | 1.50 | 3.00 | 1.50 | +1.50 | -0.50 |" in text
    assert "| 20 | 4.50 | 8.00 (1 of 2) | 6.00 | +3.00 | -2.00 |" in text
    # every run of a trained system, its best validations, its test BLEU against its twin
    assert "| A | 1 | 20 | 3.000 (20) | 5.00 (20) | 6.00 |  |  |" in text
    assert "| A | 2 | 20 | 3.500 (20) | 4.00 (20) | 5.00 |  |  |" in text
    assert "| B | 2 | 10 | 4.000 (10) | 4.00 (10) | 7.50 | +2.50 | A |" in text
    assert "| C | 1 | 20 | 2.500 (20) | 6.00 (20) | 7.00 | -2.00 | B |" in text
    assert "B-greedy" not in text  # decodes B's runs: its training is B's


def test_curves_of_a_sweep_with_no_result_say_so(tmp_path):
    spec, _ = _sweep(tmp_path)
    text = curves(spec, tmp_path / "empty")
    assert text.endswith("No run is done yet: no result file to read.\n")


@pytest.mark.slow  # reads every committed result file again: CI runs it (make test-slow)
def test_the_cli_prints_the_curves_of_a_bundled_spec_from_the_committed_files():
    code, out, _ = run_cli("sweep", "curves", "you2020")
    assert code == 0 and out.startswith("# Sweep `you2020`: validation during training")
    # the committed files themselves, read here without the module
    record = json.loads((ROOT / "docs/results/you2020/SH-X-SA/seed1.json").read_text())
    twin = json.loads((ROOT / "docs/results/you2020/SH-X/seed1.json").read_text())
    delta = record["bleu"] - twin["bleu"]
    assert f"| SH-X-SA | 1 | {record['steps']:,} |" in out
    assert f"| {record['bleu']:.2f} | {delta:+.2f} | SH-X |" in out


@pytest.mark.parametrize(
    "argv, message",
    [
        (("curves",), "adl sweep curves takes one SPEC"),
        (("curves", "you2020", "xu2020"), "adl sweep curves takes one SPEC"),
        (
            ("curves", "you2020", "--update-doc", "x.md"),
            "--update-doc and --pictures go with 'adl sweep report'",
        ),
    ],
)
def test_the_cli_says_how_curves_is_used(argv, message):
    code, _, err = run_cli("sweep", *argv)
    assert code == 2 and message in err
