"""adl sweep end to end on a tiny task: two systems (and a decoding variant) x two seeds write
the table, the pictures and ordinary run folders; a sweep killed mid-run finishes when run
again, without training a finished run twice; a spec changed under finished runs is refused."""

from __future__ import annotations

import csv
import hashlib
import io
import json
import os
import re
import shutil
import signal
import statistics
import subprocess
import time
from pathlib import Path

import pytest
from conftest import run_cli
from runtime_helpers import adl_command, env, last_reaches
from toy_task import write_reverse_sweep

from adl.runtime import sweep
from adl.runtime.rundir import RunDir
from adl.runtime.sweep import costs
from adl.runtime.sweep.report import report
from adl.runtime.sweep.table import COLUMNS


def tiny_task(folder: Path, steps: int = 20, valid_every: int = 10) -> Path:
    """Letter sentences and their reversal, two tiny models, a decoding variant, and a spec."""
    settings = (
        "  model.d_model: 32\n"
        f"  train: {{max_tokens: 256, valid_every: {valid_every}, log_every: 5, bleu: false, "
        "threads: 1}\n"
    )
    hard = "  - name: ATT-hard\n    decode_of: ATT\n    decode: {beam: 1, decode_attention: hard}\n"
    sizes = {"train": 300, "valid": 20, "test": 24}
    return write_reverse_sweep(folder, "tiny", sizes, (3, 6), 1, steps, settings, 2, hard)


@pytest.mark.slow  # about a minute: a whole sweep of real runs
def test_sweep_writes_the_table_pictures_and_run_folders(tmp_path, monkeypatch):
    monkeypatch.setattr(costs, "ROUNDS", 2)  # the cost columns' workload, small for a test
    monkeypatch.setattr(costs, "SENTENCES", 4)
    spec = tiny_task(tmp_path / "task")
    out = tmp_path / "sweep"
    log = io.StringIO()
    result = sweep.sweep(spec, out, jobs=2, stream=log)
    assert result.ran == 4 and not result.failed  # 2 trained systems x 2 seeds

    with open(out / "results.csv") as f:
        rows = list(csv.DictReader(f))
    assert tuple(rows[0]) == COLUMNS
    assert [r["system"] for r in rows] == ["ATT", "RNN", "ATT-hard"]
    base, rnn, greedy = rows
    assert base["baseline"] == "True" and base["p_bleu"] == ""  # no test against itself
    for row in (rnn, greedy):
        assert row["seeds"] == "2"
        assert 0 <= float(row["p_bleu"]) <= 1 and 0 <= float(row["p_chrf"]) <= 1
        assert 0 < float(row["p_bleu_sentences"]) <= 1
        assert row["verdict"] in ("ahead", "behind", "tie")
        assert float(row["bleu_low"]) <= float(row["delta_bleu"]) <= float(row["bleu_high"])
        for key in ("bleu_mean", "chrf_mean", "bleu_std", "delta_chrf"):
            float(row[key])
    for row in rows:
        assert int(row["parameters"]) > 0
        assert float(row["train_tokens_per_s"]) > 0
        assert float(row["decode_sentences_per_s"]) > 0
        assert float(row["train_peak_mib"]) > 0
    # a decoding variant is the same model: its parameters and training cost are the base's
    assert greedy["parameters"] == base["parameters"]
    assert greedy["train_tokens_per_s"] == base["train_tokens_per_s"]
    assert rnn["parameters"] != base["parameters"]

    md = (out / "results.md").read_text()
    assert (
        "| system | seeds | BLEU | chrF | Δ BLEU [95 % interval] | seeds +/− | verdict | "
        "p runs | p sentences | Δ chrF [95 % interval] | paper | paper's Δ | reproduced | "
        "parameters | memory | train | greedy | beam |" in md
    )
    assert md.count("| 1.00 | 1.00 | 1.00 | 1.00 |") == 1  # the baseline against itself
    assert str(tmp_path) not in md  # nothing of this machine's folders
    assert "nrefs:1|case:mixed" in md and "paired bootstrap (sacrebleu bs:1000" in md
    assert md in log.getvalue()  # printed at the end
    table = json.loads((out / "results.json").read_text())
    assert table["baseline"] == "ATT" and table["seeds"] == [1, 2]
    assert set(table["systems"][1]["runs"]) == {"1", "2"}
    for name in ("bleu.png", "bleu_speed.png"):
        assert (out / "pictures" / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"

    for system in ("ATT", "RNN"):  # ordinary run folders, as adl train --out makes
        for seed in (1, 2):
            run = RunDir(out / system / f"seed-{seed}")
            assert run.config.is_file() and run.last.is_file() and run.tokenizer.is_dir()
            assert f"seed: {seed}" in run.config.read_text()
            hyps = (run.root / "test.hyp").read_text().splitlines()
            assert len(hyps) == 24
    assert (out / "ATT-hard" / "seed-1" / "test.hyp").is_file()

    status = sweep.status(out)
    assert [r.state for r in status.runs] == ["done"] * 6
    code, text, _ = run_cli("sweep", str(out), "--status")
    assert code == 0 and "6 runs: 6 done" in text and "ATT-hard" in text

    # the result files meant for the repository, and the cost columns
    kept = out / "results" / "tiny"
    for system in ("ATT", "RNN", "ATT-hard"):
        for seed in (1, 2):
            record = json.loads((kept / system / f"seed{seed}.json").read_text())
            hyps = (kept / system / f"seed{seed}.hyp").read_text()
            assert record["hash"] and record["source"] and record["machine"]["cpu"]
            assert record["hyp_sha256"] == hashlib.sha256(hyps.encode()).hexdigest()
            assert record["bleu_signature"].startswith("nrefs:1")
    cost = json.loads((kept / "cost.json").read_text())
    assert set(cost["ratios"]) == {"ATT", "RNN", "ATT-hard"} and cost["hash"]
    assert (cost["workload"]["rounds"], cost["workload"]["sentences"]) == (2, 4)
    assert all(len(r) == 2 for r in cost["figures"]["RNN"]["32"]["rounds"].values())
    assert "the models taking turns 2 times, the median counts; 4 sentences a decoding" in md
    spread = {  # the widest distance of a speed's rounds from their median, as md says it
        kind: max(
            abs(v / statistics.median(x["32"]["rounds"][f]) - 1)
            for x in cost["figures"].values()
            for f in figs
            for v in x["32"]["rounds"][f]
        )
        for kind, figs in (
            ("training", ["train_tokens_per_s"]),
            ("decoding", ["greedy_sentences_per_s", "beam4_sentences_per_s"]),
        )
    }
    assert (
        f"within ±{100 * spread['training']:.0f} % of their median in training and "
        f"±{100 * spread['decoding']:.0f} % in decoding" in md
    )
    assert (kept / "test.ref").read_text().splitlines() == (
        spec.parent / "test.tgt"
    ).read_text().splitlines()

    # run again: nothing is trained, the table is the same
    again = sweep.sweep(spec, out, jobs=2, stream=io.StringIO())
    assert again.ran == 0 and (out / "results.md").read_text() == md

    # a changed spec under finished runs is refused before anything trains
    spec.write_text(spec.read_text().replace("model.d_model: 32", "model.d_model: 48"))
    with pytest.raises(sweep.SpecError) as err:
        sweep.sweep(spec, out, stream=io.StringIO())
    assert "model.d_model: 32 -> 48" in str(err.value)
    assert "spec.yaml:12:5: error: system 'ATT', seed 1:" in str(err.value)
    spec.write_text(spec.read_text().replace("model.d_model: 48", "model.d_model: 32"))

    # the run folders gone (a fresh machine with the committed files): nothing is trained,
    # and the report from the result files alone is the table, byte for byte
    for system in ("ATT", "RNN", "ATT-hard"):
        shutil.rmtree(out / system)
    fresh = sweep.sweep(spec, out, jobs=2, stream=io.StringIO())
    assert fresh.ran == 0 and not (out / "ATT" / "seed-1").exists()
    assert (out / "results.md").read_text() == md
    assert report(spec, out / "results") == md
    code, text, _ = run_cli("sweep", "report", str(spec), "--results", str(out / "results"))
    assert code == 0 and text == md

    # results kept elsewhere (--results): the sweep folder remembers where, so its status,
    # report and the next sweep in it find them without being told
    shutil.move(out / "results", tmp_path / "kept")
    moved = sweep.sweep(spec, out, stream=io.StringIO(), results=tmp_path / "kept")
    assert moved.ran == 0 and not (out / "results").exists()
    assert [r.state for r in sweep.status(out).runs] == ["done"] * 6
    assert report(out) == md
    assert sweep.sweep(spec, out, stream=io.StringIO()).ran == 0
    assert not (out / "results").exists()


@pytest.mark.slow
def test_a_sigterm_to_the_sweep_stops_its_job_with_a_checkpoint(tmp_path):
    """``kill PID`` of a local sweep (its process alone, not its group) stops the job it
    runs as Ctrl-C does: the job saves a checkpoint and ends with the sweep, instead of
    training on with no one to record its result, and the next job, which the pool has
    already handed to its queue, does not start; the runs then resume."""
    spec = tiny_task(tmp_path / "task", steps=400, valid_every=10)
    out = tmp_path / "sweep"
    run, queued = RunDir(out / "ATT" / "seed-1"), out / "ATT" / "seed-2"
    child = subprocess.Popen(
        adl_command("sweep", str(spec), "--out", str(out), "--jobs", "1", "--systems", "ATT"),
        env=env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        deadline = time.monotonic() + 240
        while not last_reaches(run, 10):  # the job trains and has saved a checkpoint
            assert child.poll() is None, "the sweep ended before it could be stopped"
            assert time.monotonic() < deadline
            time.sleep(0.02)
        holder = json.loads((run.root / ".lock").read_text())["pid"]  # the job's process
        assert holder != child.pid
        child.send_signal(signal.SIGTERM)
        printed, _ = child.communicate(timeout=120)
    finally:
        if child.poll() is None:
            child.kill()
    assert "interrupted: runs under way saved a checkpoint" in printed, printed
    deadline = time.monotonic() + 30
    while True:  # the job's process ends too (os.kill(pid, 0) finds no such process)
        try:
            os.kill(holder, 0)
        except ProcessLookupError:
            break
        assert time.monotonic() < deadline, "the job trains on after its sweep ended"
        time.sleep(0.1)
    stopped = re.search(r"interrupted at step ([\d,]+)", (run.root / "train.log").read_text())
    assert stopped, (run.root / "train.log").read_text()
    snapshots = json.loads((run.root / "job.json").read_text())["train"]["snapshots"]
    assert snapshots[-1]["step"] == int(stopped.group(1).replace(",", ""))  # the resume's totals
    assert not (run.root / "result.json").exists()
    time.sleep(2)  # time for a queued job to start, were it to
    assert not (queued / "train.log").exists()
    assert {(r.seed, r.state) for r in sweep.status(out).runs if r.system == "ATT"} == {
        (1, "stopped"),
        (2, "pending"),
    }
    result = sweep.sweep(spec, out, systems=["ATT"], stream=io.StringIO())
    assert result.ran == 2 and not result.failed and (run.root / "result.json").exists()


@pytest.mark.slow
def test_a_killed_sweep_finishes_without_training_twice(tmp_path):
    spec = tiny_task(tmp_path / "task", steps=200, valid_every=10)
    spec.write_text(spec.read_text().replace("seeds: [1, 2]", "seeds: [1]"))
    out = tmp_path / "sweep"
    first, second = RunDir(out / "ATT" / "seed-1"), RunDir(out / "RNN" / "seed-1")
    child = subprocess.Popen(
        adl_command("sweep", str(spec), "--out", str(out), "--jobs", "1"),
        env=env(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,  # its own process group: kill the sweep and its jobs
    )
    try:
        deadline = time.monotonic() + 240
        while not last_reaches(second, 10):  # ATT is done; RNN has a checkpoint
            assert child.poll() is None, "the sweep ended before it could be killed"
            assert time.monotonic() < deadline
            time.sleep(0.02)
        os.killpg(child.pid, signal.SIGKILL)
    finally:
        child.wait()
    assert not (second.root / "result.json").exists()
    kept = {p.name: p.stat().st_mtime_ns for p in first.checkpoints.iterdir()}
    kept_result = (first.root / "result.json").read_text()
    deadline = time.monotonic() + 30  # SIGKILL takes a moment to end the job's process
    while {(r.system, r.state) for r in sweep.status(out).runs} != {
        ("ATT", "done"),
        ("ATT-hard", "done"),
        ("RNN", "stopped"),
    }:
        assert time.monotonic() < deadline, sweep.status(out).render()
        time.sleep(0.05)

    # the project moved (its spec, model files and data elsewhere): the runs are the same
    shutil.move(tmp_path / "task", tmp_path / "moved")
    spec = tmp_path / "moved" / spec.name
    result = sweep.sweep(spec, out, stream=io.StringIO())
    assert result.ran == 1 and not result.failed  # only the killed run
    assert {p.name: p.stat().st_mtime_ns for p in first.checkpoints.iterdir()} == kept
    assert (first.root / "result.json").read_text() == kept_result
    log = second.log.read_text()
    assert "resuming in" in log and "from step" in log
    assert "done (max steps) at step 200" in log
    assert [r.state for r in sweep.status(out).runs] == ["done"] * 3


@pytest.mark.slow
def test_submitit_local_executor(tmp_path):
    spec = tiny_task(tmp_path / "task", steps=10)
    out = tmp_path / "sweep"
    result = sweep.sweep(spec, out, executor="submitit-local", stream=io.StringIO(), poll=0.2)
    assert result.ran == 4 and not result.failed
    assert list((out / "jobs").iterdir())  # submitit's own logs
    with open(out / "results.csv") as f:
        assert len(list(csv.DictReader(f))) == 3


def tie_task(tmp_path: Path, monkeypatch) -> Path:
    """Two tiny systems, ATT and RNN, at two seeds, and ATT-again: ATT decoded the same way
    and compared with ATT (a tie on every seed, so it gets a third seed)."""
    monkeypatch.setattr(costs, "ROUNDS", 1)  # the cost columns' workload, small for a test
    monkeypatch.setattr(costs, "SENTENCES", 2)
    same = "  - name: ATT-again\n    decode_of: ATT\n    against: ATT\n    seed_budget: 3\n"
    settings = (
        "  model.d_model: 16\n  train: {max_tokens: 256, valid_every: 4, bleu: false, threads: 1}\n"
    )
    spec = write_reverse_sweep(
        tmp_path / "task",
        "again",
        {"train": 60, "valid": 8, "test": 12},
        (3, 5),
        1,
        4,
        settings,
        1,
        same,
    )
    return spec


def test_a_pair_that_cannot_tell_gets_its_seeds_in_the_same_call(tmp_path, monkeypatch):
    """A row whose first look cannot tell (here the same model decoded the same way: Δ is 0
    on every seed) gets seeds up to its budget once its first seeds are done, in the same
    ``adl sweep`` call; the other rows keep the spec's seeds."""
    spec = tie_task(tmp_path, monkeypatch)
    out = tmp_path / "sweep"
    log = io.StringIO()
    result = sweep.sweep(spec, out, jobs=2, stream=log)
    assert result.ran == 5 and not result.failed  # ATT, RNN x 2 seeds, then ATT seed 3
    assert "seeds 3 for ATT, ATT-again = 5 runs; 4 done, 1 to run" in log.getvalue()
    table = json.loads((out / "results.json").read_text())
    assert table["seeds_of"] == {"ATT": [1, 2, 3], "RNN": [1, 2], "ATT-again": [1, 2, 3]}
    again = table["systems"][2]
    assert again["verdict"] == "tie" and again["delta_bleu"] == 0
    code, text, _ = run_cli("sweep", str(spec), "--out", str(out), "--check")
    assert code == 0 and "5 runs; 5 done, 0 to run" in text


@pytest.mark.slow  # three tiny runs: the default run keeps one such test (the one above)
def test_systems_trains_the_named_systems_runs_and_their_added_seeds_only(tmp_path, monkeypatch):
    """``systems``: the decoding variant ATT-again names ATT, whose runs (and the seed its
    tie adds) are trained in the one call; RNN's are not."""
    spec = tie_task(tmp_path, monkeypatch)
    out = tmp_path / "sweep"
    log = io.StringIO()
    result = sweep.sweep(spec, out, jobs=2, stream=log, systems=["ATT-again"])
    assert result.ran == 3 and not result.failed  # ATT x 2 seeds, then ATT seed 3
    assert "; only ATT = 3 runs; 2 done, 1 to run" in log.getvalue()
    assert sorted(p.name for p in (out / "ATT").glob("seed-*")) == ["seed-1", "seed-2", "seed-3"]
    assert not (out / "RNN").exists()
