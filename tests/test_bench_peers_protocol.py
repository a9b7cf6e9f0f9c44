"""The peer benchmark's protocol without any peer toolkit: the choice of the tested model
(best checkpoint, or an average that scores higher), resumable jobs, mean ± std, the paired
test and its tie rule, the recipe search, the report (the launchers:
test_bench_peers_launchers.py)."""

import json
import os
import shutil
import statistics
import subprocess
import sys

import pytest
from conftest import ROOT

sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT / "bench" / "peerlib" / "launch"))

from peerlib import kept, report, runs, selection, stats, tune  # noqa: E402
from peerlib import recipe as recipe_mod  # noqa: E402
from peerlib.base import Data, Step, System, read_lines  # noqa: E402
from sacrebleu.metrics import BLEU  # noqa: E402

REFS = [f"sentence number {w} is here today" for w in "one two three four five six seven".split()]

# a fake run: stats.json with three checkpoints, and a line in calls.txt per training
TRAIN = """
import json, sys
stats, calls = sys.argv[1], sys.argv[2]
points = [{"update": u, "seconds": u / 10, "tokens": 100 * u, "name": n}
          for n, u in {"c1": 10, "c2": 20, "c3": 30}.items()]
json.dump({"updates": 30, "tokens": 3000, "seconds": 3.0, "checkpoints": points},
          open(stats, "w"))
open(calls, "a").write("trained\\n")
"""
# a fake translation: the first K references right, the others wrong
TRANSLATE = """
import sys
refs, out, k = sys.argv[1], sys.argv[2], int(sys.argv[3])
lines = open(refs).read().splitlines()
open(out, "w").write("".join((x if i < k else "nothing") + "\\n" for i, x in enumerate(lines)))
"""


class Fake(System):
    """A system whose models translate the first ``quality[model]`` sentences right."""

    name, label = "fake", "Fake"
    quality: dict[str, int] = {}
    calls = None

    def train(self, minutes):
        return Step("train", [sys.executable, "-c", TRAIN, str(self.stats_file), str(self.calls)])

    def translate(self, model, beam, split, output):
        refs = str(self.data.raw[split][1])
        argv = [sys.executable, "-c", TRANSLATE, refs, str(output), str(self.quality[model])]
        return Step("greedy" if beam == 1 else "beam", argv)

    def average(self, models, output):
        return Step(f"average-{len(models)}", [sys.executable, "-c", "pass"])

    def checkpoint_path(self, name):
        return self.out / name


@pytest.fixture
def data(tmp_path):
    d = tmp_path / "data"
    d.mkdir()
    raw = {}
    for split in ("sample", "test"):
        raw[split] = (d / f"{split}.src", d / f"{split}.tgt")
        for path in raw[split]:
            path.write_text("".join(r + "\n" for r in REFS))
    counts = {"sample": len(REFS), "test": len(REFS)}
    return Data(d, d / "joint.model", raw, raw, counts)


@pytest.fixture
def recipe():
    return recipe_mod.load("small_cpu", root=str(ROOT))


def fake(recipe, data, out, quality, calls):
    system = Fake(recipe, data, out, sys.executable, "cpu")
    system.quality, system.calls = quality, calls
    return system


def choose(recipe, data, tmp_path, quality):
    system = fake(recipe, data, tmp_path / "run", quality, tmp_path / "calls.txt")
    system.out.mkdir()
    run = lambda step: runs.run_step(step, system.out / "logs" / f"{step.name}.log", 1)[1]
    assert run(system.train(1)) == ""
    return selection.choose(system, system.stats(), run)


def bleu(k):
    hyps = [r if i < k else "nothing" for i, r in enumerate(REFS)]
    return BLEU().corpus_score(hyps, [REFS]).score


def test_an_average_is_tested_when_it_scores_higher(recipe, data, tmp_path):
    quality = {"c1": 3, "c2": 5, "c3": 4, "average-2.pt": 4, "average-3.pt": 6}
    found = choose(recipe, data, tmp_path, quality)
    assert [p.update for p in found.points] == [10, 20, 30]
    assert [p.bleu for p in found.points] == [bleu(3), bleu(5), bleu(4)]
    assert [p.seconds for p in found.points] == [1.0, 2.0, 3.0]
    assert [a.updates for a in found.averages] == [[20, 30], [10, 20, 30]]  # the last 2, 3
    assert found.model == "average-3.pt" and found.averaged == [10, 20, 30]
    assert found.describe() == "avg 10–30" and found.value == bleu(6)


def test_the_best_checkpoint_stays_unless_an_average_beats_it(recipe, data, tmp_path):
    quality = {"c1": 5, "c2": 5, "c3": 4, "average-2.pt": 5, "average-3.pt": 5}
    found = choose(recipe, data, tmp_path, quality)
    assert found.model == "c1" and found.update == 10  # the first of equals; a tie keeps it
    assert found.averaged == [] and found.describe() == "10"


def test_a_finished_job_is_not_run_again(recipe, data, tmp_path):
    calls = tmp_path / "calls.txt"
    quality = {"c1": 3, "c2": 5, "c3": 4, "average-2.pt": 4, "average-3.pt": 6}
    jobs = [
        runs.Job(fake(recipe, data, tmp_path / "a", quality, calls), 1, "a+b", 1, [1, 4]),
        runs.Job(fake(recipe, data, tmp_path / "b", quality, calls), 1, "a+b", 1, [1]),
    ]
    first = runs.run_rounds([jobs], 1, say=lambda _: None)
    assert len(read_lines(calls)) == 2 and all(j.finished() for j in jobs)
    assert first[0]["beside"] == ["fake"] and set(first[0]["scores"]) == {"1", "4"}
    assert first[0]["scores"]["4"]["bleu"] == pytest.approx(bleu(6))  # the average's test
    assert read_lines(runs.hyp_file(jobs[0].out, 4))[6] == "nothing"
    again = runs.run_rounds([jobs], 1, say=lambda _: None)
    assert len(read_lines(calls)) == 2  # nothing trained again
    assert [r["scores"] for r in again] == [r["scores"] for r in first]
    (jobs[1].out / runs.RESULT).unlink()  # a job stopped before its end
    (jobs[1].out / "leftover").write_text("x")
    runs.run_rounds([jobs], 1, say=lambda _: None)
    assert len(read_lines(calls)) == 3  # only that one trained again, from its start
    assert not (jobs[1].out / "leftover").exists() and jobs[1].finished()


def test_kept_runs_continue_a_benchmark_on_a_fresh_machine(recipe, data, tmp_path):
    calls = tmp_path / "calls.txt"
    quality = {"c1": 3, "c2": 5, "c3": 4, "average-2.pt": 4, "average-3.pt": 6}

    def jobs(out):  # one round of two seeds, as bench_rounds lays out its folders
        return [
            runs.Job(fake(recipe, data, out / f"seed{s}" / "fake", quality, calls), s, "g", 1, [4])
            for s in (1, 2)
        ]

    out, store = tmp_path / "out", tmp_path / "docs" / "results"
    first = jobs(out)
    keep = kept.Kept(store, out)
    runs.run_rounds([first[:1]], 1, say=lambda _: None, on_finish=keep.keep)
    place = store / "seed1" / "fake"
    assert sorted(p.name for p in place.iterdir()) == [runs.RESULT, "test.beam4.txt"]
    assert not (store / "seed2").exists()  # nothing kept of a job that did not run
    # a fresh machine: the same options, an empty --out, the kept files
    again = jobs(tmp_path / "fresh")
    keep = kept.Kept(store, tmp_path / "fresh")
    (again[1].out).mkdir(parents=True)
    (again[1].out / "leftover").write_text("x")
    assert keep.restore(again) == 1 and again[0].finished() and not again[1].finished()
    results = runs.run_rounds([again], 1, say=lambda _: None, on_finish=keep.keep)
    assert len(read_lines(calls)) == 2  # seed 1 was not trained again, seed 2 was
    assert results[0]["scores"] == first[0].result()["scores"]
    assert read_lines(runs.hyp_file(again[0].out, 4)) == read_lines(runs.hyp_file(place, 4))
    assert (store / "seed2" / "fake" / runs.RESULT).is_file()
    assert keep.restore(again) == 0  # finished where it runs: nothing copied over it


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_a_results_folder_git_would_ignore_is_refused(recipe, data, tmp_path):
    repo = tmp_path / "repo"
    repo.mkdir()
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    (repo / ".gitignore").write_text("/runs/\nscratch/\n")
    out = repo / "runs" / "peers" / "x"  # the run folders: ignored, as they should be

    def job(folder):
        return runs.Job(fake(recipe, data, out / folder / "fake", {}, "c"), 1, "g", 1, [1])

    results = kept.Kept(repo / "docs" / "results", out)
    results.check([job("runs/g/seed1")])  # kept files there: committed
    with pytest.raises(ValueError, match=r"git ignores .*\.gitignore:2:scratch/"):
        results.check([job("runs/g/seed1"), job("scratch/seed1")])
    # this project's own rules keep a benchmark's layout (runs/GROUP/seedN/SYSTEM) committable
    layout = ROOT / "docs" / "results" / "peers" / "x" / "runs" / "adl+sockeye" / "seed1"
    assert kept.ignored_by_git([layout / "adl" / runs.RESULT]) == []
    # outside any git work tree there is nothing to check
    kept.Kept(tmp_path / "elsewhere", out).check([job("scratch/seed1")])


def test_a_failed_job_is_reported_and_run_again_later(recipe, data, tmp_path):
    job = runs.Job(fake(recipe, data, tmp_path / "a", {}, tmp_path / "calls.txt"), 2, "a", 1, [])
    job.system.train = lambda minutes: Step("train", [sys.executable, "-c", "exit(3)"])
    said = []
    (result,) = runs.run_rounds([[job]], 1, say=said.append)
    assert "failed" in result and not job.finished()
    assert any("failed" in s for s in said)


def test_mean_and_std_over_seeds():
    s = stats.spread([20.0, 22.0, 24.0])
    assert (s.mean, s.std, s.n) == (22.0, 2.0, 3)  # the sample standard deviation
    assert s.text() == "22.00 ± 2.00"
    one = stats.spread([17.5])
    assert one.std is None and one.text() == "17.50"


def test_the_verdict_is_the_intervals_over_the_runs():
    """ADL against a peer: the seed-aware test (the runs are the unit); the sentence-only p
    beside it. Two runs a side that differ sentence by sentence but are equally good in
    the mean are a tie, though the concatenated bootstrap calls them different."""
    good = lambda k, seed: [
        r if i < k or (seed + i) % 3 == 0 else "nothing" for i, r in enumerate(REFS)
    ]
    ours = {1: good(6, 1), 2: good(6, 2), 3: good(7, 3)}
    theirs = {1: good(1, 1), 2: good(2, 2), 4: good(1, 4)}
    pair = stats.compare("peer", 4, ours, theirs, REFS, samples=200)
    assert pair.seeds == [1, 2] and pair.runs == (3, 3)
    # paired by round: the seeds both have count, each ADL run against the peer's of its round
    mean = lambda runs: statistics.fmean(BLEU().corpus_score(runs[s], [REFS]).score for s in (1, 2))
    assert pair.bleu == pytest.approx((mean(ours), mean(theirs)))
    assert pair.bleu_interval.delta == pytest.approx(mean(ours) - mean(theirs))
    assert pair.bleu_interval.paired
    assert pair.bleu_verdict == "ADL ahead" and pair.bleu_interval.low > 0
    assert "paired bootstrap" in pair.test and pair.sentences_bleu_p is not None
    same = stats.compare("peer", 4, ours, ours, REFS, samples=200)
    assert same.bleu_interval.delta == 0 and same.bleu_verdict == "tie"
    assert same.chrf_verdict == "tie" and same.sentences_bleu_p == 1.0
    one = stats.compare("peer", 4, {1: good(7, 1)}, {1: good(1, 1)}, REFS, samples=200)
    assert one.bleu_interval.low is None and one.bleu_verdict == "tie"  # one run: no spread


def result(system, seed, group, folder, k):
    """A finished job's result whose test translations get the first k sentences right."""
    folder.mkdir(parents=True)
    hyps = [r if i < k else "nothing" for i, r in enumerate(REFS)]
    runs.hyp_file(folder, 1).write_text("".join(h + "\n" for h in hyps))
    score = {"bleu": bleu(k), "chrf": 50.0 + k, "bp": 1.0, "ratio": 1.0, "left_out": []}
    label = {"adl": "ADL", "sockeye": "Sockeye", "fairseq": "fairseq"}[system]
    return {
        "system": system,
        "label": label,
        "seed": seed,
        "group": group,
        "folder": str(folder),
        "scores": {"1": score},
    }


def test_each_peer_is_compared_with_the_adl_runs_beside_it(tmp_path):
    found = []
    for seed in (1, 2):
        for group, peer, ours, theirs in (
            ("adl+sockeye", "sockeye", 7, 2),
            ("adl+fairseq", "fairseq", 3, 3),
        ):
            where = tmp_path / group / str(seed)
            found.append(result("adl", seed, group, where / "adl", ours))
            found.append(result(peer, seed, group, where / peer, theirs))
    report.keys(found)
    assert {r["key"] for r in found} == {"adl@sockeye", "adl@fairseq", "sockeye", "fairseq"}
    assert report.labels(found)["adl@sockeye"] == "ADL (beside Sockeye)"
    spreads = report.spreads(found, [1])
    assert spreads["adl@sockeye"]["bleu-1"].mean == pytest.approx(bleu(7))
    assert spreads["fairseq"]["chrf-1"].n == 2
    pairs = {p.peer: p for p in report.pairs(found, [1], REFS)}
    # each peer against the ADL runs of its own rounds, seed by seed
    assert pairs["sockeye"].seeds == [1, 2] and pairs["sockeye"].bleu_interval.favour == (2, 0)
    assert pairs["sockeye"].bleu_interval.delta == pytest.approx(bleu(7) - bleu(2))
    assert pairs["fairseq"].bleu_verdict == "tie"  # the same outputs as its ADL runs
    assert pairs["fairseq"].bleu_interval.delta == 0
    one = [r for r in found if r["group"] == "adl+sockeye"]
    report.keys(one)
    assert {r["key"] for r in one} == {"adl", "sockeye"}
    alone = [  # one slot: ADL in a round of its own, then each peer
        result("adl", 1, "adl", tmp_path / "alone" / "adl", 7),
        result("sockeye", 1, "sockeye", tmp_path / "alone" / "sockeye", 7),
    ]
    report.keys(alone)
    (pair,) = report.pairs(alone, [1], REFS)
    assert pair.peer == "sockeye" and pair.bleu_verdict == "tie"


def test_the_recipe_search_grid_and_choice(tmp_path):
    grid = tune.parse_grid(["dropout=0,0.1,0.3", "lr=1e-3,2e-3"])
    assert grid == {"dropout": [0.0, 0.1, 0.3], "lr": [0.001, 0.002]}
    cells = tune.cells(grid)
    assert len(cells) == 6 and cells[:2] == [
        {"dropout": 0.0, "lr": 0.001},
        {"dropout": 0.0, "lr": 0.002},
    ]
    with pytest.raises(ValueError, match="changes"):
        tune.parse_grid(["heads=2,4"])
    run = lambda system, cell, value: {
        "system": system,
        "settings": cell,
        "selection": {"value": value},
        "seed": 1,
        "updates": 500,
        "tokens": 600_000,
    }
    results = [
        run("adl", cells[0], 10.0),
        run("adl", cells[0], 12.0),  # mean 11
        run("adl", cells[1], 11.0),
        run("adl", cells[1], 11.0),  # mean 11: the later tie
        run("adl", cells[2], 9.0),
        run("sockeye", cells[3], 8.0),
        run("sockeye", cells[4], 9.5),
        {"system": "sockeye", "settings": cells[5], "failed": "exit 1"},
    ]
    chosen = tune.choose(results, grid)
    assert chosen["adl"]["settings"] == cells[0] and chosen["adl"]["score"] == 11.0
    assert chosen["sockeye"]["settings"] == cells[4]
    assert [c["settings"] for c in chosen["sockeye"]["cells"]] == [cells[3], cells[4]]
    path = tmp_path / "recipes.json"
    tune.write(path, chosen, {"corpus": "bible"})
    assert tune.settings(tune.pool(path)) == {"adl": cells[0], "sockeye": cells[4]}
    assert json.loads(path.read_text())["corpus"] == "bible"
    md = "\n".join(tune.markdown(chosen, {"adl": "ADL"}, "bleu"))
    assert "| dropout=0,lr=0.001 | 11.00 ± 1.41 **(chosen)** | – |" in md
    assert "| dropout=0,lr=0.001 | 1: 500, 1,200; 1: 500, 1,200 | – |" in md  # per run


def test_recipe_searches_of_two_corpora_pool_by_the_mean_of_their_means(tmp_path):
    grid = {"max_tokens": [1000.0, 2000.0]}
    small, large = tune.cells(grid)
    run = lambda system, cell, seed, value: {
        "system": system,
        "settings": cell,
        "selection": {"value": value},
        "seed": seed,
    }
    # corpus A: ADL 2,000 leads by 0.5 (means 10 and 10.5); corpus B: 1,000 leads by 2
    a = [run("adl", small, 1, 9.0), run("adl", small, 2, 11.0), run("adl", large, 1, 10.5)]
    a += [run("sockeye", small, 1, 7.0), run("sockeye", large, 1, 6.0)]
    b = [run("adl", small, 1, 22.0), run("adl", large, 1, 20.0), run("adl", large, 2, 20.0)]
    about = {"grid": grid, "metric": "bleu"}
    tune.write(tmp_path / "a.json", tune.choose(a, grid), {**about, "corpus": "A"})
    tune.write(tmp_path / "b.json", tune.choose(b, grid), {**about, "corpus": "B"})
    assert tune.settings(tune.pool(tmp_path / "a.json")) == {"adl": large, "sockeye": small}
    pooled = tune.pool(tmp_path / "a.json", tmp_path / "b.json")
    # ADL: 1,000 -> (10 + 22) / 2 = 16, 2,000 -> (10.5 + 20) / 2 = 15.25; each corpus once
    assert pooled["adl"]["settings"] == small and pooled["adl"]["score"] == 16.0
    assert [c["mean"] for c in pooled["adl"]["cells"]] == [16.0, 15.25]
    assert pooled["adl"]["cells"][1]["by_corpus"] == [
        {"corpus": "A", "mean": 10.5},
        {"corpus": "B", "mean": 20.0},
    ]
    assert pooled["sockeye"]["settings"] == small  # searched on A only
    assert tune.settings(tune.pool(tmp_path / "a.json", tmp_path / "b.json")) == {
        "adl": small,
        "sockeye": small,
    }
    md = "\n".join(tune.pooled_markdown(pooled, {"adl": "ADL"}))
    assert "| max_tokens=1000 | **10.00, 22.00 → 16.00** | **7.00 → 7.00** |" in md
    assert "| max_tokens=2000 | 10.50, 20.00 → 15.25 | 6.00 → 6.00 |" in md
    tune.write(tmp_path / "c.json", tune.choose(b, grid), {**about, "metric": "chrf"})
    with pytest.raises(ValueError, match="metric"):
        tune.pool(tmp_path / "a.json", tmp_path / "c.json")
    (tmp_path / "results.json").write_text('{"runs": []}')
    with pytest.raises(ValueError, match="results.json: not the recipes file of a --tune run"):
        tune.pool(tmp_path / "a.json", tmp_path / "results.json")


def test_the_curves_picture(tmp_path):
    from matplotlib.image import imread
    from peerlib import curves

    series = [
        curves.Series("ADL", 1, [60, 120], [1e5, 2e5], [5.0, 9.0], [30.0, 38.0]),
        curves.Series("ADL", 2, [60, 120], [1e5, 2e5], [4.0, 8.0], [29.0, 37.0]),
        curves.Series("fairseq 0.12.3", 1, [70, 130], [9e4, 1.9e5], [3.0, 7.0], [28.0, 35.0]),
    ]
    out = curves.draw(series, tmp_path / "curves.png", "Peers on test")
    assert imread(out).shape[:2] == (750, 1100)
    with pytest.raises(ValueError):
        curves.draw([], tmp_path / "none.png", "")


def test_the_tables():
    from peerlib import table

    score = {"bleu": 20.5, "chrf": 45.25, "bp": 0.9, "ratio": 0.95, "left_out": [4, 9]}
    run = {
        "system": "adl",
        "label": "ADL",
        "key": "adl",
        "seed": 1,
        "beside": ["sockeye"],
        "updates": 1200,
        "tokens": 2_345_678,
        "train_seconds": 900.2,
        "selection": {"chosen": "avg 800–1,200"},
        "scores": {"4": score},
        "train_error": "stopped after 1800 s",
    }
    failed = {"system": "sockeye", "label": "Sockeye", "seed": 1, "failed": "exit 1"}
    lines = table.runs_table([run, failed], {"adl": "ADL"}, [1, 4])
    assert lines[0].startswith("| system | seed | beside | updates | target tokens |")
    assert lines[2] == (
        "| ADL | 1 | sockeye | 1,200 | 2,345,678 | 900 s | avg 800–1,200 | – | – "
        "| 20.50 / 45.25 | 0.900 / 0.950 | 2 (lines 5, 10); training: stopped after 1800 s |"
    )
    assert lines[3].endswith("| failed: exit 1 |") and lines[3].count("|") == lines[2].count("|")
    measured = {**run, "seconds": {"train": 950.0}, "cpu_seconds": {"train": 836.0}}
    assert "| 900 s (88 % CPU) |" in table.runs_table([measured], {}, [4])[2]
    spreads = {"adl": {"bleu-4": stats.spread([20.0, 22.0]), "chrf-4": stats.spread([40.0, 44.0])}}
    summary = table.summary_table(spreads, {"adl": "ADL"}, [4])
    assert summary[2] == "| ADL | 2 | 21.00 ± 1.41 | 42.00 ± 2.83 |"
    from adl.runtime.sweep.significance import Interval

    b = Interval("BLEU", 1.0, -0.5, 2.5, 0.2, 3.0, 0.5, 0.3, (2, 2), {1: 2.0, 2: -0.1})
    c = Interval("chrF", -1.0, -1.8, -0.2, 0.01, 3.0, 0.3, 0.1, (2, 2), {1: -1.0, 2: -1.0})
    pair = stats.Pair(
        "sockeye", 4, [1, 2], (2, 2), (21.0, 20.0), (42.0, 43.0), b, c, 0.001, 0.0004, "bs"
    )
    (line,) = table.pairs_table([pair], {"sockeye": "Sockeye"})[2:]
    assert line == (
        "| Sockeye | beam 4 | 2 / 2 | 21.00 / 20.00 | +1.00 [-0.50, +2.50] | 1/1 | tie | 0.200 "
        "| 0.001 | 42.00 / 43.00 | -1.00 [-1.80, -0.20] | peer ahead |"
    )


@pytest.mark.skipif(not os.path.isfile("/proc/self/stat"), reason="reads Linux's /proc")
def test_a_steps_cpu_time_counts_its_workers(tmp_path):
    from peerlib.base import Step

    spin = "import time\nt = time.process_time()\nwhile time.process_time() - t < 0.8: pass\n"
    worker = f"import subprocess, sys\nsubprocess.Popen([sys.executable, '-c', {spin!r}])\n"
    worker += "import time\ntime.sleep(4)\n"  # idle itself while its child spins
    cpu: dict = {}
    _, error = runs.run_step(
        Step("work", [sys.executable, "-c", worker]), tmp_path / "w.log", 1, cpu
    )
    assert error == ""
    _, error = runs.run_step(
        Step("idle", [sys.executable, "-c", "import time; time.sleep(1.5)"]),
        tmp_path / "i.log",
        1,
        cpu,
    )
    assert error == ""
    assert cpu["work"] >= 0.5 > cpu["idle"]  # the child's 0.8 s of CPU, read while it lived


def test_the_peer_verdicts_of_the_performance_page_are_the_committed_results():
    """docs/performance.md's peer tables are generated from the committed results.json
    (python bench/peers.py --update-doc docs/performance.md): no verdict written by hand."""
    from peerlib.docs import BLOCK, update_doc

    page = ROOT / "docs" / "performance.md"
    assert len(BLOCK.findall(page.read_text(encoding="utf-8"))) >= 4
    assert update_doc(page, ROOT, write=False) == [], (
        "run python bench/peers.py --update-doc docs/performance.md"
    )
