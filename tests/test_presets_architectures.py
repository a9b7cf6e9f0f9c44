"""Every run preset against the architecture files it names (its ``architectures:`` list):
each file builds with the preset's sizes, reads every variable the preset sets, and the
averaging a preset's header asks for is possible with the checkpoints it keeps."""

import re

import pytest
import torch

import adl
from adl.runtime import config as cfg

pytestmark = pytest.mark.usefixtures("one_thread")  # tests/conftest.py


PAIRS = [(p, f) for p in cfg.presets() for f in cfg.preset_files(p)]


def _ids(pairs):
    return [f"{p}:{f.relative_to(cfg.ROOT / 'architectures')}" for p, f in pairs]


@pytest.mark.parametrize("preset,path", PAIRS, ids=_ids(PAIRS))
def test_file_builds_with_the_preset_and_reads_its_variables(preset, path):
    model = cfg.load_config(preset).model
    options = dict(d_model=model.d_model, heads=model.heads, dropout=model.dropout)
    program = adl.check(path, vars=dict(model.vars), **options)
    unused = adl.unused_variables(model.vars, [program], f"preset {preset}")
    assert unused == [], "; ".join(f"{w.message} ({w.hint})" for w in unused)
    assert program.warnings == []
    vocab = dict(src_vocab=100, tgt_vocab=100, length_ratio=1.0, vars=dict(model.vars))
    if "joint" in program.networks:
        files = dict(joint=path)
    elif set(program.networks) == {"encoder", "decoder"}:
        files = dict(encoder=path)
    elif "encoder" in program.networks:  # one side: a minimal partner for the other
        files = dict(encoder=path, decoder="pos -> res_nd(mh_dot_src_att)")
    else:  # a partner with blocks, for decoders that attend to lower encoder blocks
        files = dict(encoder="pos -> repeat(6, res_nd(ffl)) -> norm", decoder=path)
    try:
        with torch.device("meta"):  # the real sizes, without the time to fill the weights
            net = adl.build(**files, **vocab, **options)
    except RuntimeError as exc:  # fixed kernels (gauss_att window/index) are made eagerly
        assert "meta" in str(exc)
        net = adl.build(**files, **vocab, **options)
    assert sum(p.numel() for p in net.parameters()) > 0


@pytest.mark.parametrize("preset", cfg.presets())
def test_preset_sets_only_variables_its_files_read(preset):
    model = cfg.load_config(preset).model
    files = cfg.preset_files(preset)
    if model.vars:
        assert files, f"{preset} sets variables but names no files that read them"


@pytest.mark.parametrize("preset", cfg.presets())
def test_preset_keeps_the_checkpoints_it_averages(preset):
    text = cfg.preset_path(preset).read_text(encoding="utf-8")
    train = cfg.load_config(preset).train
    for which, n in re.findall(r"adl average RUN --(best|last) (\d+)", text):
        kept = train.keep_best if which == "best" else train.keep_last
        assert kept >= int(n), f"{preset} averages the {which} {n} but keeps {kept}"


def test_paper_presets_name_their_files():
    named = {
        p: {f.relative_to(cfg.ROOT / "architectures").as_posix() for f in cfg.preset_files(p)}
        for p in cfg.presets()
    }
    assert "domhan2018/table3_rnmt.adl" in named["domhan2018_iwslt"]
    assert "domhan2018/table3_rnmt.adl" not in named["domhan2018_wmt"]  # it reads no $ff
    assert "you2020/sh_x.dec.adl" in named["you2020_iwslt"] & named["you2020_wmt"]
    assert "xu2020/hard_dec_self_cross.dec.adl" in named["xu2020_base"]
    assert "fonollosa2019/local_joint_iwslt.joint.adl" in named["local_joint_iwslt"]
    assert cfg.preset_files("tiny") == []


def test_domhan_presets_differ_only_in_the_feed_forward_size():
    iwslt, wmt = cfg.load_config("domhan2018_iwslt"), cfg.load_config("domhan2018_wmt")
    assert wmt.model.vars == {"ff": 4096} and iwslt.model.vars == {}
    wmt.model.vars = {}
    assert iwslt.to_dict() == wmt.to_dict()
    assert (iwslt.model.d_model, iwslt.train.max_tokens, iwslt.optim.clip_norm) == (256, 8192, 0.0)
    assert iwslt.train.keep_best == 8 and iwslt.model.share_embeddings


def test_a_glob_that_matches_nothing_is_an_error(tmp_path):
    preset = tmp_path / "p.yaml"
    preset.write_text("architectures: [nowhere/*.adl]\nmodel: {d_model: 64}\n")
    with pytest.raises(cfg.ConfigError, match="matches no file"):
        cfg.preset_files(str(preset))
    assert cfg.load_config(str(preset)).model.d_model == 64  # not a setting: merge skips it
