"""Every BLEU and chrF committed under docs/results/peers/ recomputes from what is committed:
each kept run's test translations (``test.beamK.txt``, ``test.OWN.beamK.txt``) scored with
sacrebleu against the test references committed in docs/results/peers/references/, whose
sha256 is the one the benchmark recorded (or its protocol's)."""

import hashlib
import json
import sys

import pytest
from conftest import ROOT

sys.path.insert(0, str(ROOT / "bench"))

from peerlib.base import read_lines  # noqa: E402
from peerlib.runs import hyp_file  # noqa: E402
from sacrebleu.metrics import BLEU, CHRF  # noqa: E402

PEERS = ROOT / "docs" / "results" / "peers"
REFERENCES = PEERS / "references"


def benchmarks():
    """(results folder, its references file) of every committed benchmark with test scores."""
    found = []
    for path in sorted(PEERS.glob("**/results.json")):
        record = json.loads(path.read_text(encoding="utf-8"))
        corpus = record["corpus"].rstrip("/").split("/")[-1]
        found.append((path.parent, REFERENCES / corpus / "test.tgt", record))
    return found


def test_every_benchmark_has_its_references_committed():
    found = benchmarks()
    assert len(found) >= 3
    for folder, refs, record in found:
        assert refs.is_file(), f"{folder}: no committed references {refs}"
        digest = hashlib.sha256(refs.read_bytes()).hexdigest()
        expected = record.get("references_sha256")
        if expected is not None:
            assert digest == expected, f"{refs} is not the test set {folder} was scored on"


@pytest.mark.slow  # reads every committed result file again: CI runs it (make test-slow)
@pytest.mark.parametrize("folder", [f for f, _, _ in benchmarks()], ids=lambda f: f.name)
def test_every_committed_score_recomputes_from_the_committed_translations(folder):
    refs_file = (
        REFERENCES / json.loads((folder / "results.json").read_text())["corpus"].split("/")[-1]
    )
    refs = read_lines(refs_file / "test.tgt")
    # table.score's metrics, the references' statistics computed once for all the runs
    bleu, chrf = BLEU(references=[refs]), CHRF(references=[refs])
    runs = sorted(folder.glob("runs/*/seed*/*/result.json"))
    assert runs, f"{folder}: no kept runs"
    checked = 0
    for path in runs:
        r = json.loads(path.read_text(encoding="utf-8"))
        searches = [("", r["scores"])]
        searches += [(name, own["scores"]) for name, own in r.get("own", {}).items()]
        for own, scores in searches:
            for beam, s in scores.items():
                hyps = read_lines(hyp_file(path.parent, int(beam), own))
                assert len(hyps) == len(refs)
                assert all(hyps[i] == "" for i in s["left_out"])  # scored as empty
                where = f"{path.parent.relative_to(PEERS)} {own or 'common'} beam {beam}"
                assert bleu.corpus_score(hyps, None).score == pytest.approx(s["bleu"], abs=1e-9), (
                    where
                )
                assert chrf.corpus_score(hyps, None).score == pytest.approx(s["chrf"], abs=1e-9), (
                    where
                )
                checked += 1
    assert checked >= len(runs)
