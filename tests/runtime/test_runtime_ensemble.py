"""Ensembles (adl/runtime/decode/ensemble.py, ``adl translate --model A B``) and forced-decoding scores
(adl/runtime/decode/forced.py, ``adl score``), on a trained reverse-task run."""

import copy
import json
import math
from types import SimpleNamespace

import pytest
import torch
from conftest import copy_of, run_cli
from runtime_helpers import translate_lines

import adl
from adl.runtime.data.tokenizer import BOS, EOS
from adl.runtime.decode.ensemble import Ensemble, check_vocabularies
from adl.runtime.decode.forced import read_contrastive
from adl.runtime.decode.translator import Translator
from adl.runtime.errors import ConfigError

SOURCES = ["a b c d", "q r s", "f g h i j", "t s a"]
REVERSED = ["d c b a", "s r q", "j i h g f", "a s t"]


@pytest.fixture(scope="module")
def run(tmp_path_factory, reverse_run_once):
    """The session's reverse-task run, a copy of the module's own (its tests share it)."""
    return copy_of(reverse_run_once, tmp_path_factory.mktemp("ensemble"))


def perturbed(model, seed: int = 0, scale: float = 0.05):
    """A copy of ``model`` with noise on every weight: another model of the same vocabulary."""
    other = copy.deepcopy(model)
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in other.parameters():
            p.add_(torch.randn(p.shape, generator=gen) * scale)
    return other


def test_an_ensemble_of_one_is_the_model(run):
    _, out = run
    single = adl.load_model(out)
    one = Translator(Ensemble([single.model]), single.tokenizers)
    assert one.translate(SOURCES, beam=4) == single.translate(SOURCES, beam=4)
    assert one.translate(SOURCES, beam=1) == single.translate(SOURCES, beam=1)
    assert one.score(SOURCES, REVERSED) == single.score(SOURCES, REVERSED)
    listed = adl.load_model([out])  # a list of one path loads the model itself
    assert listed.score(SOURCES, REVERSED) == single.score(SOURCES, REVERSED)


@pytest.mark.parametrize("mode", ["linear", "log_linear"])
def test_an_ensemble_combines_each_step_of_its_models(run, mode):
    """Every step's distribution is the models' combined by hand from their own full
    forward passes: the average probability (linear) or the renormalised average
    log-probability (log_linear); the pair's score sums the combined log-probabilities."""
    _, out = run
    single = adl.load_model(out)
    a, b = single.model, perturbed(single.model)
    ens = Translator(Ensemble([a, b], mode), single.tokenizers)
    got = ens.score(SOURCES, ["d c b a", "q r s", "j i h f g", "a s t"])
    for src, tgt, value in zip(SOURCES, ["d c b a", "q r s", "j i h f g", "a s t"], got):
        x = torch.tensor([single.tokenizers.encode_src([src])[0] + [EOS]])
        y = single.tokenizers.encode_tgt([tgt])[0]
        with torch.no_grad():
            pa = a(x, torch.tensor([[BOS, *y]]))[0].log_softmax(-1).exp()
            pb = b(x, torch.tensor([[BOS, *y]]))[0].log_softmax(-1).exp()
        if mode == "linear":
            combined = ((pa + pb) / 2).log()
        else:
            combined = ((pa.log() + pb.log()) / 2).log_softmax(-1)
        expected = sum(float(combined[i, tok]) for i, tok in enumerate([*y, EOS]))
        assert value == pytest.approx(expected, abs=1e-4)
    # incremental decoding reads the same distributions: greedy's choice at each step is
    # the argmax of the combined full forward pass over its own prefix
    hyp = ens.translate("f g h i j", beam=1)
    ids = single.tokenizers.encode_tgt([hyp])[0]
    x = torch.tensor([single.tokenizers.encode_src(["f g h i j"])[0] + [EOS]])
    with torch.no_grad():
        ens_logp = ens.model(x, torch.tensor([[BOS, *ids]]))[0]
    assert ens_logp.argmax(-1).tolist() == [*ids, EOS]


def test_an_ensemble_translates_the_task(run):
    _, out = run
    two = Translator(
        Ensemble([adl.load_model(out).model, perturbed(adl.load_model(out).model, 1, 0.01)]),
        adl.load_model(out).tokenizers,
    )
    assert two.translate(SOURCES, beam=4) == REVERSED


def test_vocabularies_that_differ_are_refused_by_name():
    def tokenizers(pieces):
        sp = SimpleNamespace(get_piece_size=lambda: len(pieces), id_to_piece=pieces.__getitem__)
        return SimpleNamespace(src=sp, tgt=sp)

    same = tokenizers(["<pad>", "a", "b"])
    check_vocabularies([same, tokenizers(["<pad>", "a", "b"])], ["A", "B"])
    with pytest.raises(
        ConfigError,
        match=r"cannot ensemble B with A: their source vocabularies differ \(4 pieces against 3\)",
    ):
        check_vocabularies([same, tokenizers(["<pad>", "a", "b", "c"])], ["A", "B"])
    with pytest.raises(ConfigError, match=r"piece 2 is 'c' against 'b'"):
        check_vocabularies([same, tokenizers(["<pad>", "a", "c"])], ["A", "B"])
    with pytest.raises(ConfigError, match="unknown ensemble mode"):
        Ensemble([torch.nn.Linear(1, 1)], "max")


def test_an_ensemble_has_no_one_attention(run):
    _, out = run
    with pytest.raises(ConfigError, match="no one attention"):
        adl.load_model([out, out]).attention("a b c", "c b a")


def test_cli_translates_with_an_ensemble(run, tmp_path):
    _, out = run
    code, single, err = translate_lines(out, SOURCES, tmp_path, "--beam", "4")
    src = tmp_path / "in.txt"
    assert code == 0, err
    code, both, err = run_cli(
        "translate", "--model", str(out), str(out), "--input", str(src), "--beam", "4"
    )
    assert code == 0, err
    assert both == single and single.splitlines() == REVERSED  # p twice, averaged, is p
    code, _, err = run_cli(
        "translate", "--model", str(out), str(out), "--engine", "ctranslate2", "--input", str(src)
    )
    assert code == 2 and "one --model" in err


def test_a_uniform_model_scores_every_piece_log_1_over_v(run, tmp_path):
    """A hand-computed score: with the output layer zeroed every next piece has probability
    1/V, so a pair scores -(pieces + 1) log V, whatever the source."""
    _, out = run
    t = adl.load_model(out)
    with torch.no_grad():
        for p in t.model.output.parameters():
            p.zero_()
    vocab = t.tokenizers.tgt_vocab
    targets = ["d c b a", "a", "q r s t"]
    got = t.score(["x y", "a", "b"], targets)
    for target, value in zip(targets, got):
        pieces = len(t.tokenizers.encode_tgt([target])[0]) + 1
        assert value == pytest.approx(-pieces * math.log(vocab), rel=1e-5)


def test_adl_score_prints_the_translators_scores(run, tmp_path):
    _, out = run
    src, tgt = tmp_path / "s.txt", tmp_path / "t.txt"
    targets = ["d c b a", "q r s", "j i h g f", "s a t"]
    src.write_text("\n".join(SOURCES) + "\n")
    tgt.write_text("\n".join(targets) + "\n")
    code, stdout, err = run_cli("score", "--model", str(out), "--src", str(src), "--tgt", str(tgt))
    assert code == 0, err
    t = adl.load_model(out)
    expected = t.score(SOURCES, targets)
    rows = [line.split("\t") for line in stdout.splitlines()]
    assert [float(total) for total, _ in rows] == [round(v, 4) for v in expected]
    lengths = [len(ids) + 1 for ids in t.tokenizers.encode_tgt(targets)]
    for (total, per), n in zip(rows, lengths):
        assert float(per) == pytest.approx(float(total) / n, abs=1e-4)
    assert f"{len(targets)} pairs" in err
    # the same pairs as TSV on --input; an ensemble of the run with itself scores the same
    tsv = tmp_path / "pairs.tsv"
    tsv.write_text("".join(f"{s}\t{t}\n" for s, t in zip(SOURCES, targets)))
    code, again, err = run_cli("score", "--model", str(out), str(out), "--input", str(tsv))
    assert code == 0, err
    assert [float(r.split("\t")[0]) for r in again.splitlines()] == pytest.approx(
        [float(total) for total, _ in rows], abs=2e-4
    )


def test_adl_score_contrastive_counts_decisions(run, tmp_path):
    _, out = run
    items = [
        {"source": "a b c d", "reference": "d c b a", "variants": ["a b c d", "d c a b"]},
        {"source": "q r s", "reference": "s r q", "contrastive": "q r s"},
    ]
    path = tmp_path / "set.jsonl"
    path.write_text("".join(json.dumps(i) + "\n" for i in items))
    code, stdout, err = run_cli("score", "--model", str(out), "--input", str(path), "--contrastive")
    assert code == 0, err
    assert "accuracy 1.0000 (3 of 3 decisions)" in stdout
    # the same set as TSV, with a variant that is the reference itself: not beaten
    tsv = tmp_path / "set.tsv"
    tsv.write_text("a b c d\td c b a\ta b c d\td c b a\n")
    code, stdout, err = run_cli("score", "--model", str(out), "--input", str(tsv), "--contrastive")
    assert code == 0, err
    assert "accuracy 0.5000 (1 of 2 decisions)" in stdout and "(0 of 1)" in stdout


def test_bad_contrastive_input_is_named():
    with pytest.raises(Exception, match=r"set:1: a TSV item is"):
        read_contrastive(["a\tb"], "set")
    with pytest.raises(Exception, match=r"set:2: the record has no variants"):
        read_contrastive(
            [
                '{"source": "a", "reference": "b", "variants": ["c"]}',
                '{"source": "a", "reference": "b"}',
            ],
            "set",
        )


def test_adl_score_usage_errors(run):
    _, out = run
    code, _, err = run_cli("score", "--model", str(out), "--src", "x")
    assert code == 2 and "--src and --tgt together" in err
    code, stdout, _ = run_cli("score", "--help")
    assert code == 0 and "--contrastive" in stdout
