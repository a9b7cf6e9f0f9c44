"""A network's role from its file name or definitions: one place (adl.roles) for the checker,
adl.build, the runtime and the CLI."""

from pathlib import Path

import pytest

import adl
from adl.roles import role_from_name, roles_in, stem


@pytest.mark.parametrize(
    "name, role",
    [
        ("t.enc.adl", "encoder"),
        ("dir.enc.adl/t.encoder.adl", "encoder"),
        ("t.dec.adl", "decoder"),
        ("t.decoder.adl", "decoder"),
        ("t.joint.adl", "joint"),
        ("t.adl", None),
        ("t.enc.adl.bak", None),
        (Path("a/t.dec.adl"), "decoder"),
    ],
)
def test_role_from_name(name, role):
    assert role_from_name(name) == role


def test_stem_drops_directory_and_role_suffix():
    assert stem("runs/x.y.decoder.adl") == "x.y"
    assert stem(Path("a/b.joint.adl")) == "b"
    assert stem("plain") == "plain"


def test_roles_in_reads_definitions_or_the_name(tmp_path):
    enc = tmp_path / "t.enc.adl"
    enc.write_text("pos -> ffl\n")
    model = tmp_path / "t.adl"
    model.write_text("block = ffl\nencoder = pos -> block\ndecoder = pos -> ffl\n")
    assert roles_in(enc) == {"encoder"}
    assert roles_in(model) == {"encoder", "decoder"}  # 'block' is no role
    assert roles_in("joint = pos -> ffl") == {"joint"}
    assert roles_in("pos -> ffl") == set()  # text has no name to read a role from


def test_build_and_the_checker_agree_on_a_joint_file(tmp_path):
    joint = tmp_path / "lm.joint.adl"
    joint.write_text("pos -> res_nd(mh_dot_self_att) -> norm\n")
    assert set(adl.check(joint).networks) == {"joint"}
    model = adl.build(joint, src_vocab=11, tgt_vocab=11, d_model=16, heads=2)
    assert model.spec.joint is not None and model.spec.encoder is None
