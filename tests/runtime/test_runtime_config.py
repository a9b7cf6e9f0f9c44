"""Configuration: typed defaults, the presets of the papers, --set overrides, did-you-mean."""

import dataclasses
import os

import pytest
import yaml
from conftest import run_cli

from adl.runtime import config as cfg
from adl.runtime.config import load_config
from adl.runtime.errors import ConfigError
from adl.runtime.run.configure import configure


def test_every_default_has_a_comment():
    text = (cfg.Path(cfg.__file__)).read_text()
    for section in cfg.SECTIONS.values():
        for f in dataclasses.fields(section):
            line = next(l for l in text.splitlines() if l.strip().startswith(f"{f.name}:"))
            assert "#" in line, f"{section.__name__}.{f.name} has no comment"


def test_presets_carry_the_papers_settings():
    names = {"tiny", "you2020_iwslt", "you2020_wmt", "domhan2018_iwslt", "domhan2018_wmt"}
    assert names | {"transformer_base", "local_joint_iwslt", "xu2020_base"} <= set(cfg.presets())
    you = load_config("you2020_iwslt").validate()
    assert (you.model.d_model, you.model.heads, you.model.vars) == (
        288,
        4,
        {"ff": 507, "layers": 5},
    )
    assert (you.optim.lr, you.schedule.kind, you.optim.label_smoothing) == (3e-4, "linear", 0.0)
    domhan = load_config("domhan2018_iwslt")
    domhan.data.valid_src = "valid.src"  # it stops by validation patience
    domhan.validate()
    assert (domhan.optim.optimizer, domhan.optim.lr, domhan.optim.clip_norm) == ("adam", 2e-4, 0.0)
    assert (domhan.schedule.kind, domhan.schedule.factor, domhan.schedule.patience) == (
        "plateau",
        0.7,
        8,
    )
    assert (domhan.model.d_model, domhan.train.max_tokens, domhan.train.keep_best) == (256, 8192, 8)
    assert load_config("domhan2018_wmt").model.vars == {"ff": 4096}
    base = load_config("transformer_base").validate()
    assert (base.schedule.kind, base.schedule.warmup) == ("inverse_sqrt", 4000)
    joint = load_config("local_joint_iwslt").validate()
    assert (joint.model.d_model, joint.model.heads, joint.model.vars) == (256, 4, {})
    assert (joint.schedule.warmup, joint.optim.lr, joint.train.max_steps) == (4000, 7e-4, 85000)


def test_set_overrides_with_types_and_bare_names():
    c = load_config(
        "tiny",
        [
            "optim.lr=1e-3",
            "max_steps=50",
            "betas=[0.9, 0.98]",
            "model.vars.FF=1024",
            "data.valid_src=null",
            "bleu=false",
        ],
    )
    assert c.optim.lr == 1e-3 and isinstance(c.optim.lr, float)
    assert c.train.max_steps == 50 and c.optim.betas == [0.9, 0.98]
    assert c.model.vars["FF"] == 1024 and c.train.bleu is False
    assert load_config(None, ["lr=1"]).optim.lr == 1.0  # an int is a valid float


@pytest.mark.parametrize(
    "item, message",
    [
        ("optim.lrr=1", "unknown setting 'optim.lrr' (did you mean 'optim.lr'?)"),
        ("max_step=5", "did you mean 'max_steps'?"),
        ("train.max_steps=many", "train.max_steps takes an integer, not 'many'"),
        ("bf16=3", "train.bf16 takes true or false"),
        ("patience=1", "'patience' is ambiguous: say schedule.patience or train.patience"),
        ("novalue", "--set takes key=value"),
    ],
)
def test_bad_overrides_say_what_is_wrong(item, message):
    with pytest.raises(ConfigError) as err:
        load_config(None, [item])
    assert message in str(err.value)


def test_choices_and_cross_checks():
    with pytest.raises(ConfigError, match="schedule.kind must be one of"):
        load_config(None, ["schedule.kind=cosine"]).validate()
    with pytest.raises(ConfigError, match="linear decays to train.max_steps"):
        load_config(None, ["schedule.kind=linear", "max_steps=0"]).validate()


def test_a_preset_file_with_an_unknown_key(tmp_path):
    f = tmp_path / "mine.yaml"
    f.write_text("optim:\n  learning_rate: 0.1\n")
    with pytest.raises(ConfigError, match=r"mine.yaml: unknown setting 'optim.learning_rate'"):
        load_config(str(f))
    f.write_text("optimizer:\n  lr: 0.1\n")
    with pytest.raises(ConfigError, match="unknown section 'optimizer' \\(did you mean 'optim'"):
        load_config(str(f))
    with pytest.raises(ConfigError, match="unknown preset 'tinny' \\(did you mean 'tiny'\\?\\)"):
        load_config("tinny")


def test_the_config_round_trips_through_yaml(tmp_path):
    c = load_config("transformer_base", ["model.vars.FF=4096"])
    cfg.write(c, tmp_path / "config.yaml")
    again = cfg.from_dict(yaml.safe_load((tmp_path / "config.yaml").read_text()))
    assert again == c


def test_resume_keeps_the_model_and_data(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    c = load_config("tiny")
    c.data.train_src, c.data.train_tgt = "a.en", "a.de"
    cfg.write(c, run / "config.yaml")
    again = configure(resume_from=run, sets=["max_steps=99"])
    assert again.data.train_src == os.path.abspath("a.en") and again.train.max_steps == 99
    assert configure(resume_from=run, train=("a.en", "a.de")).data.train_tgt.endswith("a.de")
    with pytest.raises(ConfigError, match="data.train_src"):
        configure(resume_from=run, train=("b.en", "a.de"))


def test_cli_reports_a_bad_setting_in_one_line(tmp_path):
    (tmp_path / "m.enc.adl").write_text("pos")
    (tmp_path / "m.dec.adl").write_text("pos -> mh_dot_src_att")
    code, out, err = run_cli(
        "train",
        str(tmp_path / "m.enc.adl"),
        str(tmp_path / "m.dec.adl"),
        "--train",
        str(tmp_path / "x"),
        "--langs",
        "en",
        "de",
        "--set",
        "optim.lrate=1",
        "--out",
        str(tmp_path / "run"),
    )
    assert code == 1
    assert err.strip() == (
        "adl train: error: unknown setting 'optim.lrate' (did you mean 'optim.lr'?)"
    )


def test_cli_usage_errors_exit_2(tmp_path):
    assert run_cli("train")[0] == 2  # no model
    assert run_cli("train", "--resume")[0] == 2  # no --out
    assert run_cli("train", "a.adl", "b.adl", "c.adl")[0] == 2  # three files
    assert run_cli("average", str(tmp_path))[0] == 2  # --last or --best


def test_the_wheel_ships_the_presets(project_wheel):
    import zipfile

    names = zipfile.ZipFile(project_wheel).namelist()
    assert {f"adl/runtime/presets/{p}.yaml" for p in cfg.presets()} <= set(names)
    assert "adl/runtime/training/worker.py" in names and "adl/cli/train.py" in names
    # one installed package: no top-level `runtime` module beside `adl`
    assert {n.split("/")[0] for n in names if not n.startswith("adl-")} == {"adl"}
