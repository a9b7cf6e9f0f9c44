"""train.precision: the choice per device (capability answers mocked), the old train.bf16
setting, CPU bf16 autocast learning like float32, and the fp16 gradient scaler's state
surviving a resume."""

import json

import pytest
import torch
import yaml
from runtime_helpers import model_files, reverse_task

from adl import runtime
from adl.runtime.config import from_dict, load_config
from adl.runtime.errors import ConfigError
from adl.runtime.model import checkpoint as ckpt
from adl.runtime.training.precision import Capability, select

CUDA = torch.device("cuda", 0)
AMPERE = Capability(bf16=True, fp16=True, name="A100")
VOLTA = Capability(bf16=False, fp16=True, name="V100")
PASCAL = Capability(bf16=False, fp16=False, name="GTX 1080")


def asked(capability):
    calls = []

    def query(device):
        calls.append(device)
        return capability

    return query, calls


@pytest.mark.parametrize(
    "capability, chosen", [(AMPERE, "bf16"), (VOLTA, "fp16"), (PASCAL, "fp32")]
)
def test_auto_on_cuda_follows_the_capability(capability, chosen):
    query, calls = asked(capability)
    p = select("auto", CUDA, query)
    assert p.name == chosen and p.device_type == "cuda" and calls == [CUDA]
    assert capability.name in p.describe()
    assert p.scaled == (chosen == "fp16")  # only fp16 scales the loss


def test_what_is_asked_is_what_runs_with_a_warning_in_the_reason():
    assert select("fp32", CUDA, asked(AMPERE)[0]).name == "fp32"
    slow = select("bf16", CUDA, asked(VOLTA)[0])
    assert slow.name == "bf16" and "emulated" in slow.reason
    assert select("fp16", CUDA, asked(PASCAL)[0]).name == "fp16"


def test_the_cpu_is_fp32_unless_asked_and_never_queries_cuda():
    query, calls = asked(AMPERE)
    cpu = torch.device("cpu")
    assert select("auto", cpu, query).name == "fp32"
    bf16 = select("bf16", cpu, query)
    assert bf16.name == "bf16" and bf16.dtype == torch.bfloat16
    assert calls == []
    assert not bf16.scaler().is_enabled() and select("fp16", cpu, query).scaler().is_enabled()
    with bf16.autocast():
        assert torch.nn.Linear(4, 4)(torch.ones(1, 4)).dtype == torch.bfloat16
    with select("auto", cpu, query).autocast():
        assert torch.nn.Linear(4, 4)(torch.ones(1, 4)).dtype == torch.float32
    with pytest.raises(ConfigError, match="train.precision must be one of"):
        select("fp8", cpu, query)


def test_the_old_bf16_setting_maps_to_precision():
    assert load_config(None, ["bf16=true"]).train.precision == "auto"
    assert load_config(None, ["train.bf16=false"]).train.precision == "fp32"
    assert from_dict({"train": {"bf16": False}}).train.precision == "fp32"  # an old config.yaml
    assert from_dict({"train": {"bf16": True}}).train.precision == "auto"
    with pytest.raises(ConfigError, match="train.bf16 takes true or false"):
        load_config(None, ["bf16=3"])
    with pytest.raises(ConfigError, match=r"train.precision must be one of auto, fp32, bf16"):
        load_config(None, ["precision=half"]).validate()


def configure(tmp_path, paths, *sets):
    return runtime.configure(
        model_files(tmp_path),
        preset="tiny",
        train=(paths["train"] + ".src", paths["train"] + ".tgt"),
        sets=["d_model=32", "max_tokens=256", "log_every=10", "keep_last=0", *sets],
    )


def losses(run) -> list[float]:
    lines = (run / "metrics.jsonl").read_text().splitlines()
    return [r["loss"] for r in map(json.loads, lines) if r["split"] == "train"]


def test_cpu_bf16_autocast_learns_like_fp32(tmp_path):
    """The same run in float32 and in bf16 autocast on the CPU: both losses fall by a large
    factor, and at every logged step the two curves stay close (relative to the start)."""
    paths = reverse_task(tmp_path / "data", train=300, valid=5, seed=3)
    curves = {}
    for precision in ("fp32", "bf16"):
        out = tmp_path / precision
        config = configure(tmp_path, paths, f"precision={precision}", "max_steps=120")
        runtime.train(config, out)
        assert yaml.safe_load((out / "config.yaml").read_text())["train"]["precision"] == precision
        assert f"precision {precision} (as asked" in (out / "train.log").read_text()
        curves[precision] = losses(out)
    fp32, bf16 = curves["fp32"], curves["bf16"]
    print("fp32", [round(x, 3) for x in fp32], "\nbf16", [round(x, 3) for x in bf16])
    assert len(fp32) == len(bf16) == 12
    assert fp32[-1] < 0.5 * fp32[0] and bf16[-1] < 0.5 * bf16[0]  # both learn
    gap = max(abs(a - b) for a, b in zip(fp32, bf16))
    assert gap < 0.1 * fp32[0]  # the same curve, within 10 % of the starting loss


def test_auto_on_the_cpu_is_recorded_as_fp32(tmp_path):
    paths = reverse_task(tmp_path / "data", train=100, valid=5)
    out = tmp_path / "run"
    runtime.train(configure(tmp_path, paths, "max_steps=2", "valid_every=2"), out)
    assert yaml.safe_load((out / "config.yaml").read_text())["train"]["precision"] == "fp32"
    assert "precision fp32 (auto: float32 on the CPU)" in (out / "train.log").read_text()
    assert ckpt.load(out / "checkpoints" / "last.pt")["scaler"] == {}  # no scaling in fp32


def test_fp16_scaler_state_survives_a_resume(tmp_path):
    """An fp16 run (CPU autocast, torch.amp.GradScaler("cpu")) stopped at step 10 and
    resumed to step 20 ends with the weights and the scaler state of a run that never
    stopped; without restoring the scaler its growth tracker would restart from 0."""
    paths = reverse_task(tmp_path / "data", train=200, valid=5)
    sets = ("precision=fp16", "valid_every=10")
    whole = runtime.train(configure(tmp_path, paths, *sets, "max_steps=20"), tmp_path / "whole")
    assert whole.step == 20
    part = tmp_path / "part"
    runtime.train(configure(tmp_path, paths, *sets, "max_steps=10"), part)
    at_10 = ckpt.load(part / "checkpoints" / "last.pt")["scaler"]
    assert at_10["scale"] > 0 and at_10["_growth_tracker"] > 0

    config = runtime.configure(resume_from=part, sets=["max_steps=20"])
    assert config.train.precision == "fp16"  # the stored choice
    trainer = runtime.Trainer(config, part, resume=True)
    try:
        assert trainer.state.scaler.is_enabled() and trainer.state.scaler.state_dict() == at_10
        trainer.run()
    finally:
        trainer.close()
    a = ckpt.load(tmp_path / "whole" / "checkpoints" / "last.pt")
    b = ckpt.load(part / "checkpoints" / "last.pt")
    assert a["step"] == b["step"] == 20
    assert a["scaler"] == b["scaler"] and a["scaler"]["_growth_tracker"] > at_10["_growth_tracker"]
    for name in a["model"]:
        assert torch.equal(a["model"][name], b["model"][name]), name
