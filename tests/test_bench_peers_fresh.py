"""The fresh-ground protocol's machinery without any peer toolkit (issue 54): each peer's own
practice beside the common rule, the ledger of test-set scorings and its refusal, the
protocol file (its corpora's committed references, the options it fixes, its machine time),
the recipe search extended past the committed grid, and the batch columns."""

import json
import sys

import pytest
import test_bench_peers_protocol as shared
from conftest import ROOT
from test_bench_peers_protocol import REFS, Fake, bleu

sys.path.insert(0, str(ROOT / "bench"))

import peers  # noqa: E402
from peerlib import kept, ledger, protocol, report, runs, table, tune  # noqa: E402
from peerlib.base import Own, Step  # noqa: E402

FRESH = ROOT / "bench" / "protocols" / "fresh.yaml"
data, recipe = shared.data, shared.recipe  # the fixtures of the protocol tests


class OwnFake(Fake):
    """A peer with two own practices: an average it makes, and a file its training wrote."""

    name, label = "sockeye", "Sockeye"

    def own_practice(self, stats):
        make = Step("own-average", [sys.executable, "-c", "pass"])
        return [Own("avg", "its average", "own-avg", [make]), Own("best", "its best", "own-best")]


def system(cls, recipe, data, out, quality):
    s = cls(recipe, data, out, sys.executable, "cpu")
    s.quality, s.calls = quality, out.parent / "calls.txt"
    return s


def test_each_peers_own_practice_is_tested_and_compared_beside_the_common_rule(
    recipe, data, tmp_path
):
    quality = {"c1": 3, "c2": 5, "c3": 4, "average-2.pt": 4, "average-3.pt": 4}
    peer_quality = {**quality, "own-avg": 7, "own-best": 2}
    out, store = tmp_path / "out", tmp_path / "kept"
    jobs = []
    for seed in (1, 2):
        folder = out / "runs" / "adl+sockeye" / f"seed{seed}"
        ours = system(Fake, recipe, data, folder / "adl", {**quality, "c2": 6})
        ours.name, ours.label = "adl", "ADL"
        theirs = system(OwnFake, recipe, data, folder / "sockeye", peer_quality)
        about = {"protocol": {"file": "p.yaml", "sha256": "abc", "stage": "10min"}}
        jobs.append(
            [
                runs.Job(ours, seed, "adl+sockeye", 1, [1, 4], own=True, about=about),
                runs.Job(theirs, seed, "adl+sockeye", 1, [1, 4], own=True, about=about),
            ]
        )
    keep = kept.Kept(store, out)
    results = runs.run_rounds(jobs, 1, say=lambda _: None, on_finish=keep.keep)
    peer = results[1]
    assert peer["protocol"]["sha256"] == "abc" and "own" not in results[0]  # ADL: none
    assert set(peer["own"]) == {"avg", "best"} and peer["own"]["avg"]["model"] == "own-avg"
    assert peer["own"]["avg"]["scores"]["4"]["bleu"] == pytest.approx(bleu(7))
    assert peer["scores"]["4"]["bleu"] == pytest.approx(bleu(5))  # the common rule's
    assert set(peer["seconds"]) >= {"own-average", "avg-greedy", "avg-beam4", "beam4"}
    place = store / "runs" / "adl+sockeye" / "seed1" / "sockeye"
    assert (place / "test.avg.beam4.txt").is_file() and (place / "test.best.beam1.txt").is_file()
    report.keys(results)
    spreads = report.spreads(results, [1, 4])
    assert spreads["sockeye:avg"]["bleu-4"].mean == pytest.approx(bleu(7))
    assert spreads["sockeye"]["tokens-per-update"].mean == pytest.approx(100.0)
    pairs = report.pairs(results, [1, 4], REFS)
    assert [(p.selection, p.beam) for p in pairs] == [
        ("", 1),
        ("", 4),
        ("avg", 1),
        ("avg", 4),
        ("best", 1),
        ("best", 4),
    ]
    assert pairs[3].bleu == pytest.approx((bleu(6), bleu(7)))  # ADL's common rule vs its own
    lines = table.pairs_table(pairs, report.labels(results))
    assert lines[0].startswith("| ADL against | peer's model | search |")
    assert lines[2].startswith("| Sockeye | common rule | greedy |")
    assert lines[5].startswith("| Sockeye | avg | beam 4 |")
    summary = table.summary_table(spreads, report.labels(results), [4])
    assert summary[0].startswith(
        "| system | seeds | updates | target tokens (M) | target tokens / update |"
    )
    assert "| Sockeye, its average | 2 | – | – | – |" in "\n".join(summary)
    assert "| Sockeye | 2 | 30 ± 0 | 0.00 ± 0.00 | 100 ± 0 |" in "\n".join(summary)


def scoring(protocol_sha, reason=None):
    return ledger.Scoring("ding-de-en", "f" * 64, "p.yaml", protocol_sha, "10min", reason)


def test_the_ledger_refuses_a_second_protocol_on_a_scored_test_set_without_a_reason(tmp_path):
    book = ledger.Ledger(tmp_path / "ledger.jsonl", ROOT)
    book.check(scoring("aaa"))  # never scored: fine
    book.record(scoring("aaa"), "10 min, greedy, beam 4", system="adl", seed=1)
    book.check(scoring("aaa"))  # the same protocol again (its next run): fine
    with pytest.raises(ledger.Refused, match="needs --rescore-reason"):
        book.check(scoring("bbb"))
    with pytest.raises(ledger.Refused):
        book.check(scoring(None))  # a run without a protocol is another protocol too
    book.check(scoring("bbb", "the references were fixed"))
    book.record(scoring("bbb", "the references were fixed"), "10 min, greedy", system="adl", seed=1)
    lines = book.lines()
    assert [line["protocol_sha256"] for line in lines] == ["aaa", "bbb"]
    assert lines[1]["rescore_reason"] == "the references were fixed"
    assert lines[0]["commit"] and lines[0]["date"][:2] == "20"
    other = ledger.Scoring("x", "e" * 64, None, None, None)
    book.check(other)  # another test set: its own history
    md = ledger.history_markdown([lines[0], {**lines[0], "seed": 2}, lines[1]])
    assert md.count("\n") == 2 + 2  # head, rule, two rows: the two runs under 'aaa' are one
    assert "10 min, greedy, beam 4 (2 runs)" in md
    assert "scored again because: the references were fixed" in md


def test_the_committed_ledger_has_every_earlier_scoring_of_a_held_out_test_set():
    lines = ledger.Ledger(ROOT / "docs" / "results" / "peers" / "ledger.jsonl", ROOT).lines()
    old = [line for line in lines if line.get("reconstructed")]
    count = lambda corpus: sum(line["corpus"] == corpus for line in old)
    assert (count("emoji-en-fr"), count("gnu-en-fr"), count("wesnoth-en-fr")) == (6, 5, 3)
    fresh = protocol.load(FRESH, ROOT)
    fresh_tests = {c.test_sha256 for c in fresh.corpora.values()}
    for line in lines:
        if line["test_sha256"] in fresh_tests:  # only ever under the fresh protocol
            assert line["protocol_sha256"] == fresh.sha256


def test_the_fresh_protocol_names_committed_references_and_fixes_its_options(capsys):
    p = protocol.load(FRESH, ROOT)
    assert [(b.name, b.minutes, b.seeds, len(b.corpora)) for b in p.budgets] == [
        ("10min", 10.0, 5, 3),
        ("40min", 40.0, 3, 1),
    ]
    assert p.beams == [1, 4, 5] and set(p.systems["peers"]) == {"sockeye", "fairseq"}
    for c in p.corpora.values():  # the committed copy is the test set the protocol names
        assert protocol.sha256_of(ROOT / c.reference) == c.test_sha256
        assert c.name in c.build and "en-fr" not in c.name
    assert protocol.check_signatures(p.spec["metrics"], table.signatures()) == []
    for flags in (["--minutes", "5"], ["--seeds", "2"], ["--corpus", "x"], ["--beam", "5"]):
        with pytest.raises(SystemExit):
            peers.main(["--protocol", str(FRESH), *flags])
        assert "--protocol fixes what" in capsys.readouterr().err


def test_a_corpus_whose_test_set_is_not_the_protocols_is_refused(tmp_path):
    (tmp_path / "test.tgt").write_text("another reference\n")
    corpus = protocol.Corpus("c", str(tmp_path), "python bench/corpora.py c", "0" * 64, None)
    with pytest.raises(ValueError, match="not the test set the protocol was written for"):
        protocol.check_corpus(corpus, ROOT)


def test_the_machine_time_is_measured_on_the_committed_rounds():
    p = protocol.load(FRESH, ROOT)
    held = [
        (
            ROOT / "docs" / "results" / "peers" / "heldout-grid" / c,
            ROOT / "docs" / "results" / "peers" / "references" / f"{c}-en-fr" / "test.tgt",
        )
        for c in ("emoji", "gnu", "wesnoth")
    ]
    m = protocol.measured(held)
    assert set(m) == {"adl", "sockeye", "fairseq"}
    assert all(0 < found["valid"] < 30 and found["rest"] > 0 for found in m.values())
    # a 10-minute round is 600 s on the clock and minutes after it
    assert 600 < protocol.job_seconds(m["adl"], 10, 7000, [1, 4, 5], 1) < 1200
    hours = protocol.estimate(p, ROOT, held)
    assert 30 * 600 / 3600 < hours["10min"] < 30 * 1200 / 3600
    assert 6 * 2400 / 3600 < hours["40min"] < 6 * 3600 / 3600


def test_the_search_is_extended_from_the_committed_grid(recipe):
    committed = tune.committed(
        ROOT / "docs" / "results" / "peers" / "tune-grid-bible" / "recipes.json", recipe
    )
    first = committed["adl"][1]
    assert first["settings"] == {"dropout": 0.0, "lr": 0.002, "warmup": 300}
    assert first["mean"] == pytest.approx(16.614909855254993)  # reused as committed
    pooled = tune.pool(
        ROOT / "docs" / "results" / "peers" / "tune-grid-bible" / "recipes.json",
        ROOT / "docs" / "results" / "peers" / "tune-grid-quran" / "recipes.json",
    )
    spec = protocol.load(FRESH, ROOT).tuning
    todo = tune.at_chosen(pooled, spec["extension"], recipe)
    assert [tune.cell_name(c) for c in todo["sockeye"]] == [
        "dropout=0,lr=0.0005,warmup=300",
        "dropout=0,lr=0.0005,warmup=1000",
        "dropout=0,lr=0.001,warmup=1000",
        "dropout=0,lr=0.002,warmup=1000",
    ]
    offered = {"adl": [c["settings"] for c in committed["adl"]] + todo["adl"]}
    cell = lambda lr, warmup: {"dropout": 0.0, "lr": lr, "warmup": warmup}
    best = lambda c: {"adl": {"settings": c}}
    # at the lowest rate and the longest warm-up offered: both edges are passed
    found = tune.beyond_edges(best(cell(0.0005, 1000)), offered, ["lr", "warmup"], 2)
    assert found == {"adl": [cell(0.00025, 1000), cell(0.0005, 2000)]}
    # inside in rate, at the longest warm-up: a longer one; once offered, nothing more
    found = tune.beyond_edges(best(cell(0.001, 1000)), offered, ["lr", "warmup"], 2)
    assert found == {"adl": [cell(0.001, 2000)]}
    offered["adl"].append(cell(0.001, 2000))
    assert tune.beyond_edges(best(cell(0.001, 1000)), offered, ["lr", "warmup"], 2) == {}
    # the highest rate at warm-up 300: twice the rate, and a shorter warm-up
    found = tune.beyond_edges(best(cell(0.002, 300)), offered, ["lr", "warmup"], 2)
    assert found == {"adl": [cell(0.004, 300), cell(0.002, 150)]}


def test_a_fresh_corpus_ledger_line_is_written_as_each_run_finishes(recipe, data, tmp_path):
    from peerlib.bench import Options, scoring_recorder

    o = Options(
        corpus=tmp_path / "ding-de-en",
        out=tmp_path / "out",
        minutes=10,
        beams=[1, 4, 5],
        protocol={"file": "p.yaml", "sha256": "abc", "stage": "10min"},
        ledger=tmp_path / "ledger.jsonl",
    )
    job = runs.Job(system(OwnFake, recipe, data, tmp_path / "j", {}), 3, "g", 10, [1, 4, 5])
    job.own = True
    seen = []
    record = scoring_recorder(o, data, seen.append)
    record(job)
    (line,) = ledger.Ledger(o.ledger, ROOT).lines()
    assert seen == [job]  # the kept files first
    assert (line["corpus"], line["protocol_sha256"], line["stage"]) == (
        "ding-de-en",
        "abc",
        "10min",
    )
    assert (line["system"], line["seed"]) == ("sockeye", 3)
    assert line["what"] == "10 min, greedy, beam 4, beam 5, common rule, own practice"
    assert json.loads(json.dumps(line)) == line


def test_a_tuning_corpus_recipes_file_holds_its_committed_and_new_cells(recipe, tmp_path):
    from peerlib.protocol_run import write_recipes

    p = protocol.load(FRESH, ROOT)
    folders = {"bible": "tune-grid-bible", "quran-en-fr": "tune-grid-quran"}
    new = {"dropout": 0.0, "lr": 0.0005, "warmup": 1000}
    files = []
    for corpus, value in (("bible", 20.0), ("quran-en-fr", 1.0)):
        committed = tune.committed(
            ROOT / "docs" / "results" / "peers" / folders[corpus] / "recipes.json", recipe
        )
        offered = {s: [c["settings"] for c in cells] + [new] for s, cells in committed.items()}
        ran = [
            {"system": s, "settings": new, "selection": {"value": value}, "seed": 1}
            for s in committed
        ]
        (tmp_path / corpus).mkdir()
        write_recipes(tmp_path / corpus, corpus, committed, ran, offered, p)
        files.append(tmp_path / corpus / "recipes.json")
    record = json.loads(files[0].read_text())
    assert record["protocol"]["sha256"] == p.sha256 and record["reused"].endswith("recipes.json")
    assert len(record["systems"]["adl"]["cells"]) == 7  # six committed, one new
    assert record["systems"]["adl"]["settings"] == new  # 20 beats the committed 16.61
    pooled = tune.pool(*files)  # (20 + 1) / 2 = 10.5 against ADL's committed 14.05
    assert pooled["adl"]["settings"] == {"dropout": 0.0, "lr": 0.002, "warmup": 300}
    assert pooled["adl"]["score"] == pytest.approx(14.046, abs=1e-3)


def test_a_protocol_stage_row_of_the_history_counts_the_stage_verdicts_once_its_results_exist(
    tmp_path,
):
    from peerlib import docs

    (tmp_path / "bench" / "protocols").mkdir(parents=True)
    (tmp_path / "bench" / "protocols" / "fresh.yaml").write_bytes(FRESH.read_bytes())
    fresh = protocol.load(tmp_path / "bench" / "protocols" / "fresh.yaml", tmp_path)
    line = {
        "date": "2026-11-30T07:40:27+00:00",
        "commit": "112da99cf69c",
        "corpus": "ding-de-en",
        "test_sha256": "3" * 64,
        "protocol": "bench/protocols/fresh.yaml",
        "protocol_sha256": fresh.sha256,
        "stage": "10min",
        "what": "10 min, greedy",
        "system": "adl",
        "seed": 1,
    }
    assert docs.stage_verdicts(line, tmp_path) is None  # the stage has no results yet
    committed = ROOT / "docs" / "results" / "peers" / "fresh" / "10min" / "ding-de-en"
    template = json.loads((committed / "results.json").read_text(encoding="utf-8"))["pairs"][0]

    def pair(peer, beam, low, high):
        interval = {**template["bleu_interval"], "low": low, "high": high}
        tie = {**template["chrf_interval"], "low": -1.0, "high": 1.0}
        return {
            **template,
            "peer": peer,
            "beam": beam,
            "bleu_interval": interval,
            "chrf_interval": tie,
        }

    folder = tmp_path / fresh.results("10min", "ding-de-en")
    folder.mkdir(parents=True)
    pairs = [
        pair("fairseq", 1, 0.5, 1.5),  # ADL ahead
        pair("fairseq", 4, -1.0, 1.0),  # tie
        pair("sockeye", 1, -2.0, -1.0),  # the peer ahead
    ]
    record = {"protocol": fresh.about("10min"), "pairs": pairs}
    (folder / "results.json").write_text(json.dumps(record), encoding="utf-8")
    said = docs.stage_verdicts(line, tmp_path)
    assert said == (
        "against fairseq 0.12.3 (2 comparisons): BLEU ADL ahead 1, tie 1; chrF tie 2; "
        "against Sockeye 3.1.34 (1 comparison): BLEU peer ahead 1; chrF tie 1"
    )
    md = ledger.history_markdown([line], lambda row: docs.stage_verdicts(row, tmp_path))
    assert md.splitlines()[-1].endswith(said.replace("|", "/") + " |")
    # results of another protocol, or a line of a protocol file that has changed since: none
    (folder / "results.json").write_text(
        json.dumps({**record, "protocol": {**record["protocol"], "sha256": "f" * 64}}),
        encoding="utf-8",
    )
    assert docs.stage_verdicts(line, tmp_path) is None
    (folder / "results.json").write_text(json.dumps(record), encoding="utf-8")
    assert docs.stage_verdicts({**line, "protocol_sha256": "e" * 64}, tmp_path) is None
