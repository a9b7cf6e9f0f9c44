"""Seeds where the verdict needs them (adl/runtime/sweep/seeding.py): the spec's keys, the
decision from committed results, the plan's runs for the added seeds, and what --check and
the table say."""

from __future__ import annotations

import io
import random

import pytest
from conftest import run_cli
from sacrebleu.metrics import BLEU
from test_sweep_spec import GOOD, files

from adl.runtime import sweep
from adl.runtime.errors import UserError
from adl.runtime.sweep import results as res
from adl.runtime.sweep.markdown import markdown
from adl.runtime.sweep.seeding import decide, sequence
from adl.runtime.sweep.table import build

SYSTEMS = """  - name: B
    files: [a.enc.adl, a.dec.adl]
  - name: C
    files: [a.enc.adl, a.dec.adl]
  - name: C-decoded
    decode_of: C
    against: C
"""


def _spec(tmp_path, top: str = "", text: str = GOOD + SYSTEMS):
    files(tmp_path)
    (tmp_path / "spec.yaml").write_text(text.replace("seeds: 2\n", "seeds: 2\n" + top))
    return sweep.load(tmp_path / "spec.yaml", tmp_path / "out")


def _commit(results, spec, outputs, refs, seeds):
    res.write_references(results, spec, refs)
    for name, make in outputs.items():
        for seed in seeds:
            hyps = make(seed)
            score = BLEU().corpus_score(hyps, [refs]).score
            record = {"bleu": score, "chrf": score, "parameters": 1}
            res.write_record(res.record_path(results, spec, name, seed), record, hyps)


def _texts():
    rng = random.Random(0)
    words = "the a cat dog sat on mat and ran far home".split()
    refs = [" ".join(rng.choice(words) for _ in range(rng.randint(5, 12))) for _ in range(200)]

    def noisy(rate):
        def make(seed):
            r = random.Random(seed * 1000 + int(rate * 100))
            return [
                " ".join(w if r.random() > rate else r.choice(words) for w in s.split())
                for s in refs
            ]

        return make

    return refs, noisy


def test_the_keys_are_read_and_checked(tmp_path):
    spec, plan = _spec(tmp_path, "seed_budget: 4\nheadline: B\n")
    assert spec.seed_budget == 4 and spec.headline == ["B"]
    assert spec.budget(spec.system("B")) == 4 and sequence(spec, 4) == [1, 2, 3, 4]
    text = (GOOD + SYSTEMS).replace(
        "  - name: C\n", "  - name: C\n    seed_budget: 6\n    claim: level\n"
    )
    spec, _ = _spec(tmp_path, "", text)
    assert spec.budget(spec.system("C")) == 6 and spec.system("C").claim == "level"
    (tmp_path / "spec.yaml").write_text(
        (GOOD + SYSTEMS)
        .replace("seeds: 2\n", "seeds: 2\nseed_budget: 1\nheadline: [Q, A]\n")
        .replace("  - name: C\n", "  - name: C\n    claim: better\n")
    )
    with pytest.raises(sweep.SpecError) as err:
        sweep.sweep(tmp_path / "spec.yaml", tmp_path / "out", check=True)
    message = str(err.value)
    assert "seed_budget 1 is below the 2 seeds every system has" in message
    assert "headline 'Q' is not one of the systems" in message
    assert "headline 'A' is the baseline: name the system compared with it" in message
    assert "claim must be one of higher, lower, level, none, not 'better'" in message


def test_a_headline_pair_gets_the_budget_and_a_clear_pair_does_not(tmp_path):
    spec, plan = _spec(tmp_path, "seed_budget: 4\nheadline: C\n")
    results = tmp_path / "results"
    refs, noisy = _texts()
    # B far better than A on every seed: its 99 % interval excludes 0 at the spec's 2 seeds
    outputs = {"A": noisy(0.6), "B": noisy(0.05), "C": noisy(0.6), "C-decoded": noisy(0.6)}
    assert decide(spec, results) == {n: [1, 2] for n in outputs} | {
        "A": [1, 2, 3, 4],
        "C": [1, 2, 3, 4],
    }
    _commit(results, spec, outputs, refs, [1, 2])
    seeds = decide(spec, results)
    assert seeds["B"] == [1, 2]  # clear at the first look: no more seeds
    assert seeds["C"] == seeds["A"] == [1, 2, 3, 4]  # the headline pair: the budget
    # C-decoded against C: the same outputs as C's, so its interval holds 0: more seeds,
    # which its trained system C makes
    assert seeds["C-decoded"] == [1, 2, 3, 4]
    planned = plan.with_seeds(seeds)
    assert sorted({(r.system, r.seed) for r in planned.runs}) == sorted(
        [("A", s) for s in (1, 2, 3, 4)] + [("B", 1), ("B", 2)] + [("C", s) for s in (1, 2, 3, 4)]
    )
    run = next(r for r in planned.runs if (r.system, r.seed) == ("C", 3))
    assert [d.system for d in run.decodings] == ["C", "C-decoded"] and run.config.train.seed == 3
    # the table: the added seeds missing until they are committed, then counted
    table = build(plan, results)
    rows = {r.system: r for r in table.rows}
    assert rows["C"].planned == 4 and len(rows["C"].runs) == 2
    assert "C seed 3" in table.missing and "B seed 3" not in table.missing
    _commit(results, spec, outputs, refs, [3, 4])
    table = build(plan, results)
    rows = {r.system: r for r in table.rows}
    assert len(rows["C"].runs) == 4 and rows["B"].values["seeds"] == 2
    text = markdown(table, title=False)
    assert "| C | 4/4 |" in text and "| B | 2/2 |" in text
    assert "- Seeds: 2 a system; the headline pair (C and the system compared with) 4" in text


def test_check_says_which_seeds_each_system_gets(tmp_path):
    spec, plan = _spec(tmp_path, "seed_budget: 3\nheadline: C\n")
    said = io.StringIO()
    sweep.sweep(tmp_path / "spec.yaml", tmp_path / "out", check=True, stream=said)
    assert "x 2 seeds; seeds 3 for A, C = 8 runs; 0 done, 8 to run" in said.getvalue()


def test_systems_trains_only_the_runs_of_those_named(tmp_path):
    """--systems: a decoding variant names its trained system; the seeds each system gets
    are decided as for the whole spec; a name the spec lacks is an error naming its systems."""
    _spec(tmp_path, "seed_budget: 3\nheadline: C\n")
    said = io.StringIO()
    out = tmp_path / "out"
    sweep.sweep(tmp_path / "spec.yaml", out, check=True, stream=said, systems=["C-decoded"])
    assert "seeds 3 for A, C; only C = 3 runs; 0 done, 3 to run" in said.getvalue()
    said = io.StringIO()
    sweep.sweep(tmp_path / "spec.yaml", out, check=True, stream=said, systems=["A", "B"])
    assert "; only A, B = 5 runs; 0 done, 5 to run" in said.getvalue()
    with pytest.raises(UserError, match="has no system 'D': its systems are A, B, C, C-decoded"):
        sweep.sweep(tmp_path / "spec.yaml", out, check=True, systems=["C", "D"])


def test_the_cli_reads_systems_as_a_comma_list(tmp_path):
    _spec(tmp_path, "seed_budget: 3\nheadline: C\n")
    spec, out = str(tmp_path / "spec.yaml"), str(tmp_path / "out")
    code, said, _ = run_cli("sweep", spec, "--out", out, "--check", "--systems", "A, C-decoded")
    assert code == 0 and "; only A, C = 6 runs; 0 done, 6 to run" in said
    code, _, err = run_cli("sweep", spec, "--out", out, "--check", "--systems", "E")
    assert code == 1 and "has no system 'E'" in err
    code, _, err = run_cli("sweep", spec, "--out", out, "--check", "--systems", "")
    assert code == 1 and "has no system ''" in err  # given but empty: not the whole spec
