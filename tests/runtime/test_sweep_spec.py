"""Sweep specs: every problem at once with file, line and column, before anything trains; the
measurement of training throughput; the paired significance test; rows against another
system; a run's fingerprint (the bundled specs: test_sweep_bundled.py)."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from conftest import run_cli
from sacrebleu.metrics import BLEU

from adl.runtime import sweep
from adl.runtime.sweep import measure
from adl.runtime.sweep.concatenated import paired_test
from adl.runtime.sweep.located import load
from adl.runtime.sweep.plan import decoding_key

ENC = "pos -> res_nd(mh_dot_self_att) -> res_nd(ffl) -> norm\n"
DEC = "pos -> res_nd(mh_dot_self_att) -> res_nd(mh_dot_src_att) -> res_nd(ffl) -> norm\n"


def files(folder: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for split in ("train", "valid", "test"):
        for lang in ("src", "tgt"):
            (folder / f"{split}.{lang}").write_text("a b c\n")
    (folder / "a.enc.adl").write_text(ENC)
    (folder / "a.dec.adl").write_text(DEC)
    (folder / "typo.dec.adl").write_text(DEC.replace("ffl", "fft"))


GOOD = """name: ok
data: {train: train, valid: valid, test: test, langs: [src, tgt]}
preset: tiny
budget: {steps: 10}
seeds: 2
baseline: A
systems:
  - name: A
    files: [a.enc.adl, a.dec.adl]
"""

BAD = """name: bad
data: {train: train, valid: valid, test: tset, langs: [src, tgt]}
preset: tiyn
budget: {stesp: 10}
settings:
  optim.lrr: 0.1
  train.seed: 3
seeds: [1, 1]
baseline: BASE
decode: {beam: 0}
sytems: []
systems:
  - name: A
    files: [a.enc.adl, missing.dec.adl]
  - name: A
    files: [a.enc.adl, a.dec.adl]
  - name: V
    decode_of: X
    files: [a.enc.adl]
"""


def check(folder: Path, text: str) -> str:
    spec = folder / "spec.yaml"
    spec.write_text(text)
    with pytest.raises(sweep.SpecError) as err:
        sweep.sweep(spec, folder / "out", check=True)
    assert not (folder / "out").exists()  # nothing was made
    return str(err.value)


def test_every_problem_at_once_with_file_and_line(tmp_path):
    files(tmp_path)
    message = check(tmp_path, BAD)
    at = f"{tmp_path / 'spec.yaml'}:"
    expected = [
        f"{at}2:42: error: data: test: no such file {tmp_path / 'tset.src'} or",
        f"{at}3:9: error: unknown preset 'tiyn' (did you mean 'tiny'?)",
        f"{at}4:10: error: unknown key 'stesp' in budget\nhint: did you mean 'steps'?",
        f"{at}6:3: error: settings: unknown setting 'optim.lrr' (did you mean 'optim.lr'?)",
        f"{at}7:3: error: settings: train.seed is set by the spec's seeds:",
        f"{at}8:12: error: seed 1 is given twice",
        f"{at}9:11: error: baseline 'BASE' is not one of the systems (A, V)",
        f"{at}10:16: error: decode: beam takes an integer of at least 1, not 0",
        f"{at}11:1: error: unknown key 'sytems' in the spec\nhint: did you mean 'systems'?",
        f"{at}14:24: error: system 'A': no such file missing.dec.adl",
        f"{at}15:11: error: system 'A' is defined twice (first on line 13)",
        f"{at}18:16: error: decode_of: no system 'X'",
        f"{at}19:5: error: system 'V' decodes the runs of another system",
    ]
    for line in expected:
        assert line in message, line
    assert message.startswith(f"{tmp_path / 'spec.yaml'}: 13 errors, nothing was trained\n")
    # the CLI prints the same, exit 1
    code, _, err = run_cli("sweep", str(tmp_path / "spec.yaml"), "--check")
    assert code == 1 and "adl sweep: error: " in err and "13 errors" in err


def test_files_that_do_not_check_show_the_compiler_message(tmp_path):
    files(tmp_path)
    text = GOOD.replace("a.dec.adl]", "typo.dec.adl]").replace("seeds: 2", "seeds: 2\nvars: {n: 2}")
    message = check(tmp_path, text)
    assert f"{tmp_path / 'spec.yaml'}:9:5: error: system 'A': its model does not check:" in message
    assert "typo.dec.adl:1:68: error: unknown layer 'fft'" in message
    assert "hint: did you mean 'ffl'?" in message


def test_yaml_errors_and_missing_parts(tmp_path):
    files(tmp_path)
    assert ":3:6: error: not valid YAML" in check(tmp_path, "name: x\nbudget: {steps: 1\nseeds: [")
    message = check(tmp_path, "name: x\n")
    for part in ("no budget", "no systems", "no baseline"):
        assert part in message
    assert "'preset' is given twice (first on line 3)" in check(
        tmp_path, GOOD.replace("preset: tiny\n", "preset: tiny\npreset: demo\n")
    )


def test_a_good_spec_plans_its_runs(tmp_path):
    files(tmp_path)
    (tmp_path / "spec.yaml").write_text(
        GOOD
        + "  - name: A-greedy\n    decode_of: A\n    decode: {beam: 1}\n"
        + "settings:\n  optim: {lr: 1e-3}\n  max_tokens: 512\n"
    )
    spec, plan = sweep.load(tmp_path / "spec.yaml", tmp_path / "out")
    assert spec.seeds == [1, 2] and spec.decode == {"beam": 4}
    assert [(r.system, r.seed) for r in plan.runs] == [("A", 1), ("A", 2)]
    run = plan.runs[1]
    assert run.config.train.seed == 2 and run.config.train.max_steps == 10
    assert run.config.optim.lr == 1e-3 and run.config.train.max_tokens == 512
    assert [(d.system, d.options) for d in run.decodings] == [
        ("A", {"beam": 4}),
        ("A-greedy", {"beam": 1}),
    ]
    assert run.decodings[1].folder == tmp_path / "out" / "A-greedy" / "seed-2"


def test_how_a_search_runs_is_not_what_its_result_is_made_from(tmp_path):
    """A result's outcome hash names the search options that change the translations and
    leaves out those that only change how the search runs (workers): adding such an option
    must not make every committed result stale (8cffd70 did, until this test)."""
    from adl.runtime.sweep.planning import outcome_hashes

    files(tmp_path)
    (tmp_path / "spec.yaml").write_text(GOOD)
    _, plain = sweep.load(tmp_path / "spec.yaml", tmp_path / "out")
    (tmp_path / "spec.yaml").write_text(GOOD + "decode: {beam: 4, workers: 2}\n")
    _, threaded = sweep.load(tmp_path / "spec.yaml", tmp_path / "out")
    assert threaded.runs[0].decodings[0].options["workers"] == 2
    assert outcome_hashes(threaded) == outcome_hashes(plain)
    (tmp_path / "spec.yaml").write_text(GOOD + "decode: {beam: 2}\n")
    _, narrower = sweep.load(tmp_path / "spec.yaml", tmp_path / "out")
    changed = outcome_hashes(narrower)
    assert all(changed[k] != v for k, v in outcome_hashes(plain).items())
    # the options a result is made from, as the committed results were hashed: a new search
    # option joins them only by a decision that re-decodes every committed result
    key = decoding_key(plain.runs[0].decodings[0], plain)
    assert set(key["search"]) == {"beam", "penalty", "alpha", "len_a", "len_b", "max_tokens"}


def test_located_yaml_keeps_lines():
    value, problems = load("a: 1\nb:\n  - x: 1e-3\n  - 2\n", "f.yaml")
    assert value == {"a": 1, "b": [{"x": "1e-3"}, 2]} and not problems
    assert str(value.key_mark("b")) == "f.yaml:2:1"
    assert str(value["b"].item_mark(1)) == "f.yaml:4:5"
    assert str(value["b"][0].value_mark("x")) == "f.yaml:3:8"


# --- measuring ---------------------------------------------------------------------------------
class FakeBatch:
    def __init__(self, tokens: int):
        self.tgt_tokens = tokens


def test_throughput_leaves_out_setup_validation_and_checkpoints(monkeypatch):
    """Updates take 1 s for 100 tokens; set-up takes 5 s and each checkpoint (after steps 3
    and 6) 10 s more: the meter reports 100 tokens/s, not less."""
    clock = iter([0.0, 5.0, 6.0, 7.0, 18.0, 19.0, 20.0, 31.0])  # t0, then after steps 1..7
    monkeypatch.setattr(measure.time, "perf_counter", lambda: next(clock))
    saved = []
    meter = measure.Meter(3, {}, saved.append)
    for step in range(1, 8):
        meter(step, [FakeBatch(60), FakeBatch(40)])
    # counted: steps 2, 3 (after 1, 2), 5, 6 (after 4, 5): 4 updates of 1 s
    assert meter.tokens == 400 and meter.seconds == 4.0 and meter.tokens_per_s == 100.0
    assert [s["step"] for s in saved] == [3, 6]
    assert saved[0]["tokens"] == 200 and saved[0]["elapsed"] == 7.0


def test_a_stopped_runs_checkpoint_has_its_snapshot():
    """A run stopped between validations saves a checkpoint where it stopped; its snapshot
    is saved too, so that the resume's totals hold every update before it (the passes)."""
    saved = []
    meter = measure.Meter(3, {}, saved.append)
    for step in range(1, 6):
        meter(step, [FakeBatch(100)])
    meter.snapshot(5)  # what the job does when the training reports it was interrupted
    start = measure.resume_point(saved, 5)
    assert start["step"] == 5 and start["seen"] == 500
    resumed = measure.Meter(3, start, saved.append)
    for step in range(6, 8):
        resumed(step, [FakeBatch(100)])
    assert resumed.seen == 700  # every update once, as an uninterrupted run counts


def test_a_resume_continues_from_its_checkpoints_snapshot():
    snaps = [{"step": 20, "tokens": 1}, {"step": 40, "tokens": 2}, {"step": 60, "tokens": 3}]
    assert measure.resume_point(snaps, 40)["tokens"] == 2
    assert measure.resume_point(snaps, 50)["tokens"] == 2  # nearest earlier
    assert measure.resume_point(snaps, None) == {}
    assert [s["step"] for s in measure.keep(snaps, {"step": 80})] == [40, 60, 80]


# --- significance ------------------------------------------------------------------------------
VOCAB = "the king of the city loves the people at the gate in the house and".split()


def _outputs():
    rng = random.Random(0)
    refs = [" ".join(rng.choice(VOCAB) for _ in range(rng.randint(5, 15))) for _ in range(300)]
    noisy = lambda r: " ".join(w if rng.random() > 0.3 else rng.choice(VOCAB) for w in r.split())
    return refs, [noisy(r) for r in refs], [noisy(r) for r in refs]


@pytest.mark.parametrize("test", ["bs", "ar"])
def test_a_corrupted_copy_is_significant_and_the_system_itself_is_not(test):
    refs, hyps, _ = _outputs()
    corrupted = [" ".join(h.split()[: len(h.split()) // 2]) for h in hyps]  # half dropped
    worse = paired_test([hyps], [corrupted], refs, test, 1000)
    assert worse.bleu_p < 0.05 and worse.chrf_p < 0.05
    assert worse.bleu[1] < worse.bleu[0] - 10
    same = paired_test([hyps], [list(hyps)], refs, test, 1000)
    assert same.bleu_p > 0.05 and same.chrf_p > 0.05  # sacrebleu alone says 1/1001


def test_outputs_of_equal_quality_are_not_significant():
    refs, a, b = _outputs()  # the same noise process, drawn twice
    result = paired_test([a], [b], refs, "bs", 1000)
    assert result.bleu_p > 0.05 and result.chrf_p > 0.05
    one = a[:-1] + [a[-1] + " the"]  # one sentence differs by a word
    assert paired_test([a], [one], refs, "bs", 1000).bleu_p > 0.05


def test_seeds_are_paired_in_order():
    refs, a, b = _outputs()
    swapped = paired_test([a, b], [b, a], refs, "bs", 1000)  # same corpus, seeds swapped
    assert swapped.bleu[0] == pytest.approx(swapped.bleu[1]) and swapped.bleu_p == 1.0
    with pytest.raises(ValueError):
        paired_test([a], [a, b], refs)


def test_a_check_before_the_data_is_prepared_says_committed_results_are_not_counted(tmp_path):
    import io

    files(tmp_path)
    spec = tmp_path / "spec.yaml"
    spec.write_text(
        GOOD.replace(
            "data: {train: train, valid: valid, test: test, langs: [src, tgt]}",
            f"data: {{dir: {tmp_path / 'bible'}}}",
        )
    )
    said = io.StringIO()
    sweep.sweep(spec, tmp_path / "out", check=True, stream=said)
    assert (
        "0 done, 2 to run, committed results not counted before the data is prepared"
        in said.getvalue()
    )
    assert not (tmp_path / "out").exists()


def test_a_table_without_runs_says_so_instead_of_empty_facts(tmp_path):
    from adl.runtime.sweep import markdown as markdown_mod
    from adl.runtime.sweep import table as table_mod

    _, plan = sweep.load("domhan2018_tables2to4", tmp_path / "out")
    text = markdown_mod.markdown(table_mod.build(plan, tmp_path / "results"), title=False)
    assert "Test set: not read yet (no run done)." in text
    assert "0 sentences" not in text and "``" not in text  # no empty signature
    assert "| UPPER (baseline) | 0/3 | – |" in text


# --- against: a row compared with another system than the baseline ----------------------------
def test_against_names_another_system_and_the_errors_say_where(tmp_path):
    files(tmp_path)
    systems = "".join(
        f"  - name: {name}\n    files: [a.enc.adl, a.dec.adl]\n    against: {other}\n"
        for name, other in (("B", "b"), ("C", "C"))
    )
    baseline_too = GOOD.replace("a.dec.adl]\n", "a.dec.adl]\n    against: B\n")
    message = check(tmp_path, baseline_too + systems)
    at = f"{tmp_path / 'spec.yaml'}:"
    assert message.startswith(f"{tmp_path / 'spec.yaml'}: 3 errors")
    assert f"{at}10:14: error: system 'A' is the baseline, what the others are compared" in message
    assert f"{at}13:14: error: against: no system 'b'\nhint: did you mean 'B'?" in message
    assert f"{at}16:14: error: system 'C' cannot be compared with itself" in message


def test_decode_of_names_another_system_that_trains_and_the_errors_say_where(tmp_path):
    files(tmp_path)
    systems = "".join(
        f"  - name: {name}\n    decode_of: {other}\n"
        for name, other in (("B", "B"), ("C", "B"), ("D", "a"))
    )
    message = check(tmp_path, GOOD + systems)
    at = f"{tmp_path / 'spec.yaml'}:"
    assert message.startswith(f"{tmp_path / 'spec.yaml'}: 3 errors")
    assert f"{at}11:16: error: system 'B' cannot decode its own runs" in message
    assert (
        f"{at}13:16: error: decode_of: 'B' trains nothing itself (it decodes 'B'): name a "
        "system with files:" in message
    )
    assert f"{at}15:16: error: decode_of: no system 'a'\nhint: did you mean 'A'?" in message


def test_a_row_against_another_system_is_measured_against_its_runs(tmp_path):
    from adl.runtime.sweep import markdown as markdown_mod
    from adl.runtime.sweep import results as res
    from adl.runtime.sweep import table as table_mod

    files(tmp_path)
    systems = "".join(
        f"  - name: {name}\n    files: [a.enc.adl, a.dec.adl]\n{extra}"
        for name, extra in (("B", ""), ("C", "    against: B\n"))
    )
    (tmp_path / "spec.yaml").write_text(GOOD + systems)
    spec, plan = sweep.load(tmp_path / "spec.yaml", tmp_path / "out")
    assert [spec.compared_with(s) for s in spec.systems] == [None, "A", "B"]
    refs, noisy, _ = _outputs()
    half = [" ".join(h.split()[: len(h.split()) // 2]) for h in noisy]
    outputs = {"A": half, "B": refs, "C": noisy}  # A worst, B perfect, C between them
    results = tmp_path / "results"
    res.write_references(results, spec, refs)
    bleu = {n: BLEU().corpus_score(h, [refs]).score for n, h in outputs.items()}
    for name, hyps in outputs.items():
        for seed in spec.seeds:
            record = {"bleu": bleu[name], "chrf": bleu[name] / 2, "parameters": 1}
            res.write_record(res.record_path(results, spec, name, seed), record, hyps)
    table = table_mod.build(plan, results)
    rows = {r.system: r.values for r in table.rows}
    assert rows["B"]["against"] == "A" and rows["B"]["delta_bleu"] == pytest.approx(
        bleu["B"] - bleu["A"]
    )
    assert rows["C"]["against"] == "B" and rows["C"]["delta_bleu"] == pytest.approx(
        bleu["C"] - bleu["B"]
    )
    # its translations against B's (perfect), not A's: every seed's the same, so only the
    # test set varies, and the interval lies below 0
    assert rows["C"]["verdict"] == "behind" and rows["C"]["p_bleu"] < 0.05
    text = markdown_mod.markdown(table, title=False)
    assert "| C (vs B) | 2/2 |" in text and "| B | 2/2 |" in text
    assert "A row marked (vs X) is measured against system X instead" in text
    assert table.to_json()["systems"][2]["against"] == "B"


def test_an_against_that_is_not_a_name_is_said_once(tmp_path):
    files(tmp_path)
    message = check(tmp_path, GOOD.replace("a.dec.adl]\n", "a.dec.adl]\n    against: [B]\n"))
    assert message.startswith(f"{tmp_path / 'spec.yaml'}: 1 error")
    assert f"{tmp_path / 'spec.yaml'}:10:14: error: against takes a string, not a list" in message


# --- a run on disk against the spec: by the files' contents, wherever they lie --------------
def _stored(run, fingerprint):
    import json

    from adl.runtime.sweep.state import STATE

    run.folder.mkdir(parents=True, exist_ok=True)
    (run.folder / STATE).write_text(json.dumps({"state": "done", "fingerprint": fingerprint}))


def _differences(spec, out):
    """What check_disk says of the first run: its changes, or [] when it matches."""
    from adl.runtime.sweep.plan import check_disk

    _, plan = sweep.load(spec, out)
    problems = check_disk(plan)
    return [p.message.split("spec gives now (")[1].rstrip(")") for p in problems]


def test_a_moved_project_is_the_same_run_and_an_edited_file_is_not(tmp_path):
    import shutil

    from adl.runtime.sweep.plan import fingerprint

    files(tmp_path / "a")
    (tmp_path / "a" / "spec.yaml").write_text(GOOD)
    _, plan = sweep.load(tmp_path / "a" / "spec.yaml", tmp_path / "out")
    run = plan.runs[0]
    _stored(run, fingerprint(run.config))
    shutil.copytree(tmp_path / "a", tmp_path / "b")  # the project, moved
    _, moved = sweep.load(tmp_path / "b" / "spec.yaml", tmp_path / "out")
    assert moved.runs[0].config.model.encoder != run.config.model.encoder  # other paths
    assert _differences(tmp_path / "b" / "spec.yaml", tmp_path / "out") == []
    (tmp_path / "b" / "a.enc.adl").write_text(ENC.replace("-> norm", "-> res_nd(ffl) -> norm"))
    assert _differences(tmp_path / "b" / "spec.yaml", tmp_path / "out") == [
        "model.encoder: other contents"
    ]


def test_a_fingerprint_stored_by_paths_is_read_by_contents(tmp_path):
    # the form an earlier ADL wrote: path settings by path, each file as "file PATH": hash
    import shutil

    from adl.runtime.sweep.plan import WHERE, file_hash

    files(tmp_path / "a")
    (tmp_path / "a" / "spec.yaml").write_text(GOOD)
    _, plan = sweep.load(tmp_path / "a" / "spec.yaml", tmp_path / "out")
    config = plan.runs[0].config
    old = {
        f"{section}.{key}": repr(value)
        for section, values in config.to_dict().items()
        for key, value in values.items()
        if f"{section}.{key}" not in WHERE
    }
    m, d = config.model, config.data
    for path in (m.encoder, m.decoder, d.train_src, d.train_tgt, d.valid_src, d.valid_tgt):
        old[f"file {path}"] = file_hash(path)
    _stored(plan.runs[0], old)
    shutil.copytree(tmp_path / "a", tmp_path / "b")
    spec = tmp_path / "b" / "spec.yaml"
    assert _differences(spec, tmp_path / "out") == []  # the same files, elsewhere
    (tmp_path / "b" / "train.src").write_text("a b d\n")
    assert _differences(spec, tmp_path / "out") == ["data.train_src: other contents"]
    old["model.dropout"] = "0.5"
    _stored(plan.runs[0], old)
    assert _differences(spec, tmp_path / "out") == [
        f"data.train_src: other contents; model.dropout: 0.5 -> {config.model.dropout!r}"
    ]


def test_the_status_without_the_test_data_shows_a_result_as_done_and_unchecked(tmp_path):
    # e.g. `adl sweep FOLDER --status` from another folder, whose data/ has no corpus
    import json

    from adl.runtime.sweep.state import RESULT
    from adl.runtime.sweep.status import _one

    files(tmp_path)
    (tmp_path / "spec.yaml").write_text(GOOD)
    _, plan = sweep.load(tmp_path / "spec.yaml", tmp_path / "out")
    run = plan.runs[0]
    decoding = run.decodings[0]
    decoding.folder.mkdir(parents=True)
    (decoding.folder / RESULT).write_text(json.dumps({"bleu": 12.5, "chrf": 40.0, "key": {}}))
    state = {"state": "done", "train": {"done": True, "steps": 10}}
    here = _one(
        plan, run, decoding, state, test_here=True
    )  # the data is here: the key is checked, and differs
    assert (here.state, here.detail) == ("pending", "to decode")
    away = _one(plan, run, decoding, state, test_here=False)
    assert away.state == "done"
    assert away.detail == f"BLEU 12.50, chrF 40.00 (not checked: no test data at {tmp_path})"
