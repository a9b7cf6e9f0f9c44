"""The bundled sweep specs: each checks and plans, each paper's main-table rows are there with
the paper's recipe, the docs list every key and spec, and each follow-up spec (long, corpus,
heads, decoder, the control recipe) changes only what it tests."""

from __future__ import annotations

import dataclasses
import re

import pytest
from conftest import ROOT

from adl.runtime import sweep
from adl.runtime.sweep.markdown import corpus
from adl.runtime.sweep.plan import data_files
from adl.runtime.sweep.spec import DATA_KEYS, SYSTEM_KEYS, TOP_KEYS, decode_keys


@pytest.mark.parametrize("name", sweep.bundled())
def test_bundled_specs_check(name):
    spec, plan = sweep.load(name, "/nonexistent/out")
    assert spec.baseline in [s.name for s in spec.systems]
    if spec.regime is None:
        assert len(plan.runs) == len(spec.seeds) * sum(s.trained for s in spec.systems)
    else:  # its rows are planned from the training set's size (test_sweep_regime.py)
        assert not plan.runs and spec.regime.sizes[-1] is None
    assert data_files(spec).bible  # the default corpus


def test_bundled_specs_are_the_papers():
    assert {"you2020", "xu2020", "raganato2020", "domhan2018", "fonollosa2019"} <= set(
        sweep.bundled()
    )
    rows = {  # each paper's main-table rows, by their files (architectures/...)
        "you2020": [
            ("you2020/base.enc.adl", "you2020/base.dec.adl"),
            ("you2020/hc_sa.enc.adl", "you2020/hc_sa.dec.adl"),
            ("you2020/hc_sa.enc.adl", "you2020/hc_all.dec.adl"),
            ("you2020/hc_sa.enc.adl", "you2020/sh_x.dec.adl"),
            ("you2020/base_no_sa.enc.adl", "you2020/base_no_sa.dec.adl"),
            ("you2020/sh_x_no_sa.enc.adl", "you2020/sh_x_no_sa.dec.adl"),
        ],
        "xu2020": [
            ("xu2020/base.enc.adl", "xu2020/base.dec.adl"),
            ("xu2020/base.enc.adl", "xu2020/hard_dec_cross.dec.adl"),
            ("xu2020/base.enc.adl", "xu2020/hard_dec_self_cross.dec.adl"),
            ("xu2020/hard_all.adl",),
        ],
        "raganato2020": [
            (f"raganato2020/{enc}.enc.adl", "transformer.dec.adl")
            for enc in ("8l", "7f_token_1l", "7f_word_1l", "1l", "8f")
        ],
        "domhan2018": [
            (f"domhan2018/table5_{enc}.enc.adl", f"domhan2018/table5_{dec}.dec.adl")
            for enc, dec in [
                *[(enc, "self_att") for enc in ("self_att", "rnn", "cnn")],
                *[("self_att", dec) for dec in ("rnn", "cnn", "combined", "none")],
                ("rnn", "rnn"),
                ("cnn", "cnn"),
            ]
        ],
        "fonollosa2019": [
            ("fonollosa2019/transformer_iwslt.enc.adl", "fonollosa2019/transformer_iwslt.dec.adl"),
            ("fonollosa2019/joint_iwslt.joint.adl",),
            ("fonollosa2019/local_joint_half_iwslt.joint.adl",),
        ],
    }
    arch = ROOT / "architectures"
    for name, wanted in rows.items():
        spec, _ = sweep.load(name, "/nonexistent/out")
        assert len(spec.seeds) >= 3, name
        have = [tuple(f.relative_to(arch).as_posix() for f in s.files) for s in spec.systems]
        for files in wanted:
            assert files in have, (name, files)
        # the recipe control: the baseline's files trained once more with other settings
        base = spec.system(spec.baseline)
        assert base is not None
        assert any(s.files == base.files and s.settings for s in spec.systems), name
        assert spec.preset == f"{name}_bible"  # the paper's recipe, scaled to the corpus
    xu, _ = sweep.load("xu2020", "/nonexistent/out")
    assert {(s.decode_of, s.decode.get("decode_attention")) for s in xu.systems if s.decode_of} == {
        ("BASE", "hard"),
        ("HARD-DEC", "soft"),
    }


def test_docs_list_every_spec_key_and_bundled_spec():
    text = (ROOT / "docs" / "experiments.md").read_text()
    for key in (*TOP_KEYS, *SYSTEM_KEYS, *DATA_KEYS, *decode_keys(), "steps", "minutes"):
        assert f"`{key}" in text, key
    rows = set(re.findall(r"^\| `(\w+)` \| ", text, re.M))
    assert set(sweep.bundled()) <= rows


def test_the_second_domhan_spec_has_every_row_of_tables_2_to_4():
    spec, plan = sweep.load("domhan2018_tables2to4", "/nonexistent/out")
    arch = ROOT / "architectures" / "domhan2018"
    files = {f.name for s in spec.systems for f in s.files}
    assert {f.name for f in arch.glob("table[234]_*.adl")} <= files  # 19 rows: 3 + 8 + 8
    assert len(spec.systems) == 19 and len(plan.runs) == 57
    assert spec.preset == "domhan2018_bible"  # Table 5's recipe and depth


@pytest.mark.parametrize(
    "long, short",
    [("you2020_long", "you2020"), ("xu2020_long", "xu2020"), ("domhan2018_long", "domhan2018")],
)
def test_a_long_spec_trains_its_short_specs_systems_four_times_as_long(long, short):
    # the test of a short budget changes the budget only: same files, recipe and decoding
    a, _ = sweep.load(long, "/nonexistent/out")
    b, _ = sweep.load(short, "/nonexistent/out")
    assert a.steps == 4 * b.steps
    assert_same_but_for_budget_and_data(a, b)


def assert_same_but_for_budget_and_data(a, b):
    """Spec ``a`` trains as ``b`` does (preset, decoding, seeds, settings, vars), and each of
    its systems is the system of that name in ``b`` (files, vars, settings)."""
    assert a.preset == b.preset and a.decode == b.decode
    assert a.seeds == b.seeds and a.settings == b.settings and a.vars == b.vars
    for system in a.systems:
        twin = b.system(system.name)
        assert twin is not None, system.name
        assert (system.files, system.vars, system.settings) == (
            twin.files,
            twin.vars,
            twin.settings,
        )


@pytest.mark.parametrize(
    "whole, bundled", [("domhan2018_corpus", "domhan2018"), ("you2020_corpus", "you2020_long")]
)
def test_a_corpus_spec_trains_on_the_whole_bible_and_changes_nothing_else(whole, bundled):
    # the test of a small corpus changes the corpus only: same files, recipe, budget, decoding
    a, plan = sweep.load(whole, "/nonexistent/out")
    b, _ = sweep.load(bundled, "/nonexistent/out")
    assert a.data.max_words is None and b.data.max_words == 20
    assert dataclasses.replace(a.data, max_words=20) == b.data
    # the tables say which corpus each trained on
    assert corpus(a) == "the Bible en-fr, every verse"
    assert corpus(b) == "the Bible en-fr, verses of at most 20 words a side"
    assert a.steps == b.steps and len(plan.runs) == 6
    assert_same_but_for_budget_and_data(a, b)


def test_the_heads_spec_trains_xus_base_and_hard_dec_with_eight_heads_and_nothing_else():
    # the test of too few heads changes the heads only: same files, recipe, budget, decoding
    a, plan = sweep.load("xu2020_heads", "/nonexistent/out")
    b, _ = sweep.load("xu2020", "/nonexistent/out")
    assert [s.name for s in a.systems] == ["BASE", "HARD-DEC"] and a.baseline == "BASE"
    assert [s[:2] for s in a.settings] == [("model.heads", 8)]
    assert {r.config.model.heads for r in plan.runs} == {8} and len(plan.runs) == 6
    assert {r.config.model.d_model for r in plan.runs} == {256}  # xu2020's width: 4 heads
    assert a.steps == b.steps
    assert_same_but_for_budget_and_data(dataclasses.replace(a, settings=b.settings), b)


def test_the_decoder_spec_trains_raganatos_7f_1l_and_8f_with_the_papers_six_decoder_layers():
    # the test of a weak decoder changes the decoder's depth only; the encoders keep 2 layers
    a, plan = sweep.load("raganato2020_decoder", "/nonexistent/out")
    b, _ = sweep.load("raganato2020", "/nonexistent/out")
    assert [s.name for s in a.systems] == ["7F+1L", "8F"] and a.baseline == "7F+1L"
    assert a.vars == {**b.vars, "dec_layers": 6}
    assert plan.runs[0].config.model.vars == {"layers": 2, "dec_layers": 6}
    assert a.steps == b.steps
    assert_same_but_for_budget_and_data(dataclasses.replace(a, vars=b.vars), b)


def test_fonollosas_joint_models_also_train_with_the_control_recipe():
    # the order measured with the paper's recipe, tested where the models learn: each joint
    # model once more with exactly the settings of the Transformer's recipe control
    spec, _ = sweep.load("fonollosa2019", "/nonexistent/out")
    control = spec.system("TRANSFORMER-demo-recipe")
    assert control is not None and control.settings
    for name in ("JOINT", "LOCAL-JOINT"):
        model, again = spec.system(name), spec.system(f"{name}-demo-recipe")
        assert model is not None and again is not None, name
        assert (again.files, again.vars) == (model.files, model.vars)
        assert not model.settings
        assert [s[:2] for s in again.settings] == [s[:2] for s in control.settings]
