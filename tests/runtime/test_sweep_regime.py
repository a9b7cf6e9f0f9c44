"""A curve over the training data (a spec's ``regime:``, adl/runtime/sweep/regime.py): the
keys, the nested subsamples and their equal passes, the rows, the rate search deciding each
system's curve, what ``--check`` lists, the report's curve and its trend."""

from __future__ import annotations

import io
import json
import math
import re
from pathlib import Path

import pytest
import runtime_helpers  # noqa: F401  (puts bench/ on the path)
from toy_task import write_reverse_pairs

from adl.runtime import sweep
from adl.runtime.errors import UserError
from adl.runtime.sweep import results as res
from adl.runtime.sweep.planning import load_plan, outcome_hashes, prepare_regime
from adl.runtime.sweep.regime import make_subsamples, steps_for
from adl.runtime.sweep.regime_report import Point, fit

ENC = "pos -> res_nd(mh_dot_self_att) -> res_nd(ffl) -> norm\n"
DEC = "pos -> res_nd(mh_dot_self_att) -> res_nd(mh_dot_src_att) -> res_nd(ffl) -> norm\n"
RNN = "pos -> res_nd(rnn) -> res_nd(mh_dot_src_att) -> res_nd(ffl) -> norm\n"

SPEC = """name: curve
data: {train: train, valid: valid, test: test, langs: [src, tgt]}
preset: tiny
budget: {steps: 40}
settings:
  model.d_model: 16
  train: {max_tokens: 256, valid_every: 10, bleu: false, threads: 1}
seeds: [1, 2]
baseline: ATT
decode: {beam: 1}
regime:
  sizes: [50, 100, all]
  rates: [1.0e-3, 3.0e-3]
  rate_size: 100
  scale: [schedule.warmup]          # the tiny preset's 100 of its 1,000 updates
systems:
  - name: ATT
    files: [att.enc.adl, att.dec.adl]
    paper: "30.0"
  - name: RNN
    files: [att.enc.adl, rnn.dec.adl]
    paper: "27.0"
"""


def task(folder: Path, text: str = SPEC) -> Path:
    write_reverse_pairs(folder, {"train": 200, "valid": 10, "test": 12}, lengths=(3, 6))
    for name, body in (("att.enc.adl", ENC), ("att.dec.adl", DEC), ("rnn.dec.adl", RNN)):
        (folder / name).write_text(body)
    (folder / "spec.yaml").write_text(text)
    return folder / "spec.yaml"


def test_the_keys_are_checked(tmp_path):
    bad = (
        SPEC.replace("[50, 100, all]", "[100, 50]")
        .replace("rate_size: 100", "rate_size: 70")
        .replace("[schedule.warmup]", "[train.valid_evry]")
    )
    spec = task(tmp_path, bad)
    with pytest.raises(sweep.SpecError) as err:
        sweep.sweep(spec, tmp_path / "out", check=True)
    text = str(err.value)
    assert "regime: sizes must grow from the smallest to the largest (all last)" in text
    assert "regime: scale: unknown setting 'train.valid_evry'" in text
    assert "rate_size must be one of the sizes" not in text  # the sizes are wrong: not checked


def test_the_subsamples_nest_and_the_passes_match(tmp_path):
    spec_path = task(tmp_path)
    spec, plan, kept = load_plan(spec_path, tmp_path / "out", tmp_path / "results")
    assert spec.regime is not None and spec.regime.sizes == [50, 100, None]
    files = make_subsamples(plan.data.train, plan.data.langs, spec.regime)
    assert sorted(files) == [50, 100, 200]
    lines = {k: Path(f[0]).read_text().splitlines() for k, f in files.items()}
    targets = {k: Path(f[1]).read_text().splitlines() for k, f in files.items()}
    assert lines[50] == lines[100][:50] and lines[100] == lines[200][:100]  # each holds the smaller
    assert sorted(lines[200]) == sorted(Path(plan.data.train[0]).read_text().splitlines())
    assert make_subsamples(plan.data.train, plan.data.langs, spec.regime) == files  # kept, same
    # the pairs stay pairs: a target line is its source reversed
    assert all(t == " ".join(reversed(s.split())) for s, t in zip(lines[100], targets[100]))
    # the updates scale with the pairs: equal passes, up to the sample's words
    steps = {k: steps_for(spec, k, 200) for k in files}
    assert steps == {50: 10, 100: 20, 200: 40}
    words = {k: sum(len(t.split()) for t in targets[k]) for k in files}
    passes = [steps[k] / words[k] for k in files]
    assert max(passes) / min(passes) < 1.15
    prepare_regime(spec, plan, kept)
    record = json.loads((kept / "curve" / "regime.json").read_text())
    assert record["pool"] == 200 and record["sizes"] == [50, 100, 200]


def _commit(kept, spec, name, seed, bleu, hashes):
    """A result file of the rate search, made from what the plan says (its hash)."""
    record = {"bleu": bleu, "chrf": bleu, "validations": [{"step": 10, "bleu": bleu}]}
    record["hash"] = hashes[name, seed]
    res.write_record(res.record_path(kept, spec, name, seed), record, ["x"] * 12)


def test_the_rate_search_comes_first_then_each_systems_curve(tmp_path):
    spec_path = task(tmp_path)
    out, results = tmp_path / "out", tmp_path / "results"
    said = io.StringIO()
    sweep.sweep(spec_path, out, check=True, stream=said, results=results)
    text = said.getvalue()
    assert "4 trained systems = 4 runs; 0 done, 4 to run" in text  # 2 systems x 2 rates
    assert "  50 pairs: 10 updates (schedule.warmup 1)" in text
    assert "  200 pairs: 40 updates (schedule.warmup 4)" in text
    assert "waiting for their rate search: the curves of ATT, RNN" in text
    spec, plan, kept = load_plan(spec_path, out, results)
    rows = {s.name: s for s in plan.spec.systems}
    assert set(rows) == {"ATT@lr0.001", "ATT@lr0.003", "RNN@lr0.001", "RNN@lr0.003"}
    run = next(r for r in plan.runs if r.system == "RNN@lr0.003")
    assert run.seed == 1 and run.config.optim.lr == 0.003 and run.config.train.max_steps == 20
    assert run.config.data.train_src.endswith("regime-s1/train-100.src")
    hashes = outcome_hashes(plan)
    # a file made from something else does not count
    _commit(kept, spec, "ATT@lr0.001", 1, 5.0, {("ATT@lr0.001", 1): "stale"})
    _commit(kept, spec, "ATT@lr0.003", 1, 7.0, hashes)
    assert "ATT@50" not in {s.name for s in load_plan(spec_path, out, results)[1].spec.systems}
    # ATT's search is done (3e-3 wins), RNN's half done: ATT's curve is planned, RNN's waits
    _commit(kept, spec, "ATT@lr0.001", 1, 5.0, hashes)
    _commit(kept, spec, "RNN@lr0.001", 1, 6.0, hashes)
    spec, plan, kept = load_plan(spec_path, out, results)
    rows = {s.name: s for s in plan.spec.systems}
    assert {"ATT@50", "ATT@100", "ATT@200"} <= set(rows) and "RNN@50" not in rows
    assert plan.spec.baseline == "ATT@200"
    att = {r.seed: r for r in plan.runs if r.system == "ATT@50"}
    assert sorted(att) == [1, 2] and att[1].config.optim.lr == 0.003
    assert att[1].config.train.max_steps == 10 and att[1].config.schedule.warmup == 1
    _commit(kept, spec, "RNN@lr0.003", 1, 4.0, hashes)  # RNN keeps 1e-3
    spec, plan, kept = load_plan(spec_path, out, results)
    rows = {s.name: s for s in plan.spec.systems}
    assert rows["RNN@100"].against == "ATT@100" and rows["ATT@100"].compare is False
    rnn = next(r for r in plan.runs if r.system == "RNN@200")
    assert rnn.config.optim.lr == 0.001 and rnn.config.train.max_steps == 40
    # --systems takes a row too (a session that can train only the short runs picks them)
    said = io.StringIO()
    sweep.sweep(spec_path, out, check=True, stream=said, results=results, systems=["ATT@50"])
    assert "only ATT@50 = 2 runs; 0 done, 2 to run" in said.getvalue(), said.getvalue()
    with pytest.raises(UserError, match=r"no system 'ATT@7'.*rows so far: .*ATT@50"):
        sweep.sweep(spec_path, out, check=True, results=results, systems=["ATT@7"])


def test_a_trend_and_where_it_would_meet_the_papers_gap():
    """Points on Δ = 6 - 2 log10(pairs): the fit finds the line; the paper's Δ of -3 is met
    at 10^4.5 pairs."""
    points = [
        Point(
            n,
            1,
            None,
            6 - 2 * math.log10(n),
            6 - 2 * math.log10(n) - 1,
            6 - 2 * math.log10(n) + 1,
            "ahead",
            "3/3",
            3,
            0,
        )
        for n in (1000, 3000, 10000, 30000)
    ]
    trend = fit(points, -3.0)
    assert trend is not None
    assert trend.a == pytest.approx(6.0) and trend.b == pytest.approx(-2.0)
    assert trend.crossing == pytest.approx(10**4.5)
    low, high = trend.crossing_range
    assert low < 10**4.5 < high
    flat = [Point(n, 1, None, 1.0, 0.0, 2.0, "tie", "3/3", 2, 1) for n in (10, 100, 1000)]
    assert fit(flat, 5.0).crossing is None  # a flat line never meets it
    assert fit(points[:2], -3.0) is None  # two points: no trend


@pytest.mark.slow
def test_a_regime_sweep_runs_the_search_then_the_curves_in_one_call(tmp_path, monkeypatch):
    spec_path = task(
        tmp_path, SPEC.replace("seeds: [1, 2]", "seeds: [1, 2]").replace("steps: 40", "steps: 20")
    )
    out, results = tmp_path / "out", tmp_path / "results"
    log = io.StringIO()
    result = sweep.sweep(spec_path, out, jobs=2, stream=log, results=results)
    assert not result.failed
    assert result.ran == 4 + 2 * 3 * 2  # the search, then 2 systems x 3 sizes x 2 seeds
    table = json.loads((out / "results.json").read_text())
    names = {s["system"] for s in table["systems"]}
    assert {"ATT@50", "RNN@200", "ATT@lr0.001"} <= names
    record = json.loads((results / "curve" / "RNN@50" / "seed1.json").read_text())
    assert record["train_pairs"] == 50 and record["passes"] > 0
    md = (out / "results.md").read_text()
    assert "**RNN against ATT** by training pairs; the paper's Δ -3.00 (lower):" in md
    assert "| 50 | 5 |" in md
    # both sides' passes, each the mean of what its runs recorded: equal passes to be seen
    assert "| pairs | updates | passes (RNN / ATT) |" in md
    assert re.search(r"\| 50 \| 5 \| \d+\.\d / \d+\.\d \|", md), md
    assert (out / "pictures" / "regime-RNN.png").is_file()


def test_the_trend_says_whether_its_crossing_lies_within_the_sizes_run():
    """Δ = 6 - 2 log10(pairs) meets -3 at 10^4.5 pairs: within sizes 1e3..1e5, beyond
    1e3..1e4, below 1e5..1e6 (where the line rises towards the smaller sizes)."""
    from adl.runtime.sweep.regime_report import Curve, _trend_sentence

    def sentence(sizes):
        points = [
            Point(
                n,
                1,
                None,
                6 - 2 * math.log10(n),
                5 - 2 * math.log10(n),
                7 - 2 * math.log10(n),
                "ahead",
                "3/3",
                3,
                0,
            )
            for n in sizes
        ]
        curve = Curve("B", "A", -3.0, "lower", points, fit(points, -3.0))
        return _trend_sentence(curve)

    assert "within the sizes run" in sentence([1e3, 1e4, 1e5])
    assert "extrapolation beyond the largest size run" in sentence([1e3, 3e3, 1e4])
    assert "extrapolation below the smallest size run" in sentence([1e5, 3e5, 1e6])


def _points(deltas: dict[int, float], half: float = 0.5) -> list[Point]:
    return [
        Point(n, 1, None, d, d - half, d + half, "ahead", "3/3", 3, 0) for n, d in deltas.items()
    ]


def test_the_trend_says_which_way_it_moves_against_the_papers_gap():
    """Δ rising with the data moves away from a paper's Δ below it and towards one above it;
    a line through its points is no misfit, a curve that bends is (χ² on points - 2)."""
    from adl.runtime.sweep.regime_report import Curve, _trend_sentence

    rising = _points({n: 2 * math.log10(n) for n in (1000, 3000, 10000, 30000)})
    trend = fit(rising, 0.0)
    assert trend is not None and trend.chi2 == pytest.approx(0.0, abs=1e-9)
    assert trend.misfit() == pytest.approx(1.0)
    assert trend.towards(0.0) is False and trend.towards(20.0) is True
    away = _trend_sentence(Curve("B", "A", 0.0, "level", rising, trend))
    assert "moves away from the paper's +0.00" in away and "lie off this line" not in away
    # up then flat (a plateau): Δ 0, 4, 6, 6 with intervals of ±0.5 is no line
    bent = _points({1000: 0.0, 2000: 4.0, 4000: 6.0, 8000: 6.0})
    t = fit(bent, 0.3)
    assert t is not None and t.misfit() is not None and t.misfit() < 0.001
    # the χ² by hand: the weights are equal, so it is the residuals' squares over se²
    se = 0.5 / 1.96
    residuals = [d - t.at(n) for n, d in ((1000, 0.0), (2000, 4.0), (4000, 6.0), (8000, 6.0))]
    assert t.chi2 == pytest.approx(sum(r * r for r in residuals) / se**2)
    text = _trend_sentence(Curve("B", "A", 0.3, "level", bent, t))
    assert "lie off this line beyond their intervals: χ²" in text and "2 degrees of freedom" in text
    assert fit(bent[:3], 0.3).misfit() is not None  # three points: one degree of freedom


@pytest.mark.slow  # reads every committed result file again: CI runs it (make test-slow)
def test_the_report_draws_a_regimes_pictures_from_the_committed_results(tmp_path, capsys):
    """`adl sweep report you2020_regime --pictures DIR`: the curve's picture (the one the
    docs commit) drawn from docs/results alone, no run folder, no data."""
    from adl.cli import main

    root = Path(__file__).resolve().parents[2]
    code = main(
        [
            "sweep",
            "report",
            "you2020_regime",
            "--results",
            str(root / "docs" / "results"),
            "--pictures",
            str(tmp_path),
        ]
    )
    assert code == 0
    out = capsys.readouterr().out
    assert f"picture: {tmp_path / 'regime-HC-SA.png'}" in out
    picture = (tmp_path / "regime-HC-SA.png").read_bytes()
    assert picture[:8] == b"\x89PNG\r\n\x1a\n" and len(picture) > 10_000
    # pictures are drawn by the report (a sweep draws its own in its folder)
    assert main(["sweep", "you2020_regime", "--pictures", str(tmp_path)]) == 2
    assert "--pictures go with 'adl sweep report'" in capsys.readouterr().err


def test_the_tables_header_says_the_updates_scale_with_the_pairs():
    """A regime's budget is its largest size's: the header says so, and each size's updates
    are in the curve's table."""
    from adl.runtime.sweep.report import report

    root = Path(__file__).resolve().parents[2]
    text = report("you2020_regime", root / "docs" / "results")
    head = text.split("\n| system |")[0]
    assert "updates at the largest size, fewer at the smaller (equal passes" in head
    assert "| 1,405 | 268 |" in text  # the smallest size's updates, in the curve's table
