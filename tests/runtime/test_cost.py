"""The cost instrument (adl.runtime.cost): every model measured the same way against a
baseline in the same run."""

import pytest
import torch

from adl.runtime import cost
from adl.runtime.config import Config

ENC = "pos -> res_nd(mh_dot_self_att) -> res_nd(ffl) -> norm"
DEC = "pos -> res_nd(mh_dot_self_att) -> res_nd(mh_dot_src_att) -> res_nd(ffl) -> norm"
HC = "pos -> res_nd(gauss_att(l, c)) -> res_nd(mh_dot_src_att) -> res_nd(ffl) -> norm"


def candidate(name, dec, tmp_path, enc=ENC):
    files = [tmp_path / f"{name}.enc.adl", tmp_path / f"{name}.dec.adl"]
    files[0].write_text(enc)
    files[1].write_text(dec)
    config = Config()
    config.model.d_model, config.model.heads, config.model.dropout = 16, 2, 0.0
    config.data.vocab_size = 40
    return cost.Candidate.of(name, files, config)


def test_measure_reports_every_figure_against_the_baseline(tmp_path):
    models = [candidate("BASE", DEC, tmp_path), candidate("HC", HC, tmp_path)]
    workload = cost.Workload(lengths=(6,), batch_tokens=24, train_steps=1, sentences=2, rounds=1)
    table = cost.measure(models, "BASE", workload)
    built = {c.name: sum(p.numel() for p in cost.model_of(c, "cpu").parameters()) for c in models}
    assert table.params == built and built["HC"] < built["BASE"]
    for name in ("BASE", "HC"):
        values = table.figures[name][6].values
        assert set(values) == {*cost.FIGURES, *cost.RECORDED}
        assert all(v > 0 for v in values.values())
    assert all(table.ratio("BASE", 6, f) == 1.0 for f in cost.FIGURES)
    ratio = table.ratio("HC", 6, "train_tokens_per_s")
    figures = table.figures
    assert (
        ratio
        == figures["HC"][6].values["train_tokens_per_s"]
        / figures["BASE"][6].values["train_tokens_per_s"]
    )
    data = table.to_json()
    assert data["ratios"]["HC"]["6"]["train_peak_mib"] == table.ratio("HC", 6, "train_peak_mib")
    assert data["machine"]["threads"] >= 1


def test_a_model_that_reads_word_ids_is_measured_beside_one_that_does_not(tmp_path):
    """Word-level fixed patterns (Raganato's 7F+1L word) read the source's word ids: the
    decoding measurement gives them to that model, whatever the baseline reads."""
    word = "pos -> res_nd(fixed_self_att(unit=word)) -> res_nd(ffl) -> norm"
    models = [candidate("BASE", DEC, tmp_path), candidate("WORD", DEC, tmp_path, enc=word)]
    assert not cost.model_of(models[0], "cpu").needs_src_words
    assert cost.model_of(models[1], "cpu").needs_src_words
    workload = cost.Workload(lengths=(5,), batch_tokens=20, train_steps=1, sentences=2, rounds=1)
    table = cost.measure(models, "BASE", workload)
    assert all(v > 0 for v in table.figures["WORD"][5].values.values())


def test_the_baseline_must_be_one_of_the_models(tmp_path):
    with pytest.raises(ValueError, match="the baseline 'X' is not among the models"):
        cost.measure([candidate("BASE", DEC, tmp_path)], "X", cost.Workload(lengths=(4,)))


def test_a_model_that_cannot_train_says_which_and_why(tmp_path):
    bad = candidate("BAD", DEC, tmp_path)
    bad.model["d_model"] = 15  # 2 heads cannot split 15 units
    with pytest.raises(RuntimeError, match="measuring BAD at length 4 failed"):
        cost.probe(bad, 4, cost.Workload(lengths=(4,), batch_tokens=8, train_steps=1))


def test_synthetic_sentences_avoid_the_special_tokens(tmp_path):
    model = cost.model_of(candidate("BASE", DEC, tmp_path), "cpu")
    src, tgt, words = cost.synthetic(model, 3, 5, "cpu", torch.Generator().manual_seed(0))
    assert src.shape == (3, 5) and tgt.shape == (3, 6) and words is None
    assert int(src.min()) >= 4 and int(tgt.min()) >= 4


def test_live_tensors_counts_the_most_bytes_alive_at_once():
    kept = torch.ones(100)  # 400 bytes before counting starts
    with cost.LiveTensors([kept]) as live:
        a = torch.zeros(1000)  # 4,000 bytes
        b = torch.zeros(2000)  # 8,000
        view = b[:10]  # no new storage
        del a
        c = torch.zeros(500)  # 2,000, after a is gone
    assert live.peak == 400 + 4000 + 8000
    assert live.now == 400 + 8000 + 2000
    assert view.numel() == 10 and c.numel() == 500
