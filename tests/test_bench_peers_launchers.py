"""The peer benchmark's launchers (bench/peerlib/launch/), without any peer toolkit: the clock
that starts at the first update and survives a stop, ADL's launcher on a real run, Sockeye's
length rule, fairseq's checkpoint average."""

import json
import sys
import types

import pytest
from conftest import ROOT

sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT / "bench" / "peerlib" / "launch"))


def test_the_clock_starts_at_the_first_update(tmp_path, monkeypatch):
    import peerclock

    now = [100.0]
    monkeypatch.setattr(peerclock.time, "monotonic", lambda: now[0])
    clock = peerclock.Clock(str(tmp_path / "stats.json"), minutes=0.05)  # 3 s
    assert not clock.over()  # not before the first update
    now[0] = 250.0
    clock.update_started()
    now[0] = 251.5
    clock.update_done(120, 1)
    clock.checkpoint("c1", 1)
    assert not clock.over()
    clock.update_started()  # the clock keeps its start
    now[0] = 253.0
    clock.update_done(80, 2)
    assert clock.over()
    clock.checkpoint("c2", 2)
    found = json.loads((tmp_path / "stats.json").read_text())
    assert found == {
        "updates": 2,
        "tokens": 200,
        "seconds": 3.0,
        "checkpoints": [
            {"update": 1, "seconds": 1.5, "tokens": 120, "name": "c1"},
            {"update": 2, "seconds": 3.0, "tokens": 200, "name": "c2"},
        ],
    }


def test_a_stopped_run_leaves_its_record(tmp_path):
    import peerclock

    clock = peerclock.Clock(str(tmp_path / "stats.json"))

    def training():
        clock.update_started()
        clock.update_done(10, 1)
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        clock.run(training)
    found = json.loads((tmp_path / "stats.json").read_text())
    assert (found["updates"], found["tokens"], found["checkpoints"]) == (1, 10, [])
    assert clock.run(lambda: 7) == 7


def test_the_adl_launcher_records_the_clock_of_a_real_run(tmp_path):
    """bench/peerlib/launch/adl_train.py trains through ``adl train`` and records each
    validated checkpoint: its update, the clock at its end and the target tokens so far."""
    import subprocess

    from conftest import QUICK, sets
    from toy_task import write_reverse_pairs

    write_reverse_pairs(tmp_path / "data", {"train": 100, "valid": 5})
    stats = tmp_path / "stats.json"
    script = ROOT / "bench" / "peerlib" / "launch" / "adl_train.py"
    argv = [sys.executable, str(script), "--peer-stats", str(stats)]
    argv += [str(ROOT / "architectures" / f"transformer.{side}.adl") for side in ("enc", "dec")]
    argv += [
        "--train",
        str(tmp_path / "data" / "train"),
        "--valid",
        str(tmp_path / "data" / "valid"),
    ]
    argv += ["--langs", "src", "tgt", *QUICK, "--out", str(tmp_path / "run")]
    argv += sets("model.vars.layers=1", "max_steps=4", "valid_every=2", "bleu=false", "threads=1")
    done = subprocess.run(argv, capture_output=True, text=True, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    found = json.loads(stats.read_text())
    points = found["checkpoints"]
    assert found["updates"] == 4 and [c["update"] for c in points] == [2, 4]
    assert [c["name"] for c in points] == ["step-0000002.pt", "step-0000004.pt"]  # its files
    assert 0 < points[0]["tokens"] < points[1]["tokens"] == found["tokens"]
    assert 0 < points[0]["seconds"] <= points[1]["seconds"] <= found["seconds"]
    # the benchmark's average of them (adl average --steps): ADL's mean, loadable by name
    folder = tmp_path / "run" / "checkpoints"
    argv = [sys.executable, "-m", "adl", "average", str(tmp_path / "run"), "--steps", "2,4"]
    done = subprocess.run(argv + ["--out", str(folder / "average-2.pt")], capture_output=True)
    assert done.returncode == 0, done.stderr[-2000:]
    import torch

    from adl.runtime.model import checkpoint

    found = checkpoint.load(checkpoint.resolve(tmp_path / "run", "average-2.pt"))
    assert found["averaged_steps"] == [2, 4]
    two, four = (checkpoint.load(folder / c["name"])["model"] for c in points)
    name = next(k for k, v in two.items() if v.is_floating_point() and not v.equal(four[k]))
    torch.testing.assert_close(found["model"][name], (two[name] + four[name]) / 2)


def test_sockeye_translations_get_adls_length_limit(monkeypatch):
    """The launcher's length rule and parameter file, with a stand-in for Sockeye."""
    import sockeye_translate

    seen = {}
    inference = types.SimpleNamespace(get_max_input_output_length=lambda *a, **k: (301, None))

    class Model:
        def load_parameters(self, filename, *a, **k):
            seen["params"] = filename

    def main():
        seen["argv"] = list(sys.argv)
        Model().load_parameters("model/params.best")

    fake = types.ModuleType("sockeye")
    fake.inference = inference
    fake.model = types.SimpleNamespace(SockeyeModel=Model)
    fake.translate = types.SimpleNamespace(main=main)
    monkeypatch.setitem(sys.modules, "sockeye", fake)
    argv = ["x", "--peer-len-a", "1.5", "--peer-len-b", "10", "--peer-params", "m/avg.pt"]
    monkeypatch.setattr(sys, "argv", [*argv, "--models", "m", "--beam-size", "4"])
    sockeye_translate.main()
    assert seen == {"argv": ["x", "--models", "m", "--beam-size", "4"], "params": "m/avg.pt"}
    max_input, max_output = inference.get_max_input_output_length()
    assert max_input == 301
    # Sockeye counts the source with eos and forces eos at the returned length: pieces at
    # most int(1.5 x pieces + 10), as ADL's search
    for pieces in (1, 2, 7, 40):
        assert max_output(pieces + 1) - 1 == int(1.5 * pieces + 10)


def test_fairseq_checkpoints_are_averaged_weight_by_weight(tmp_path):
    import subprocess

    import torch

    a = {"model": {"w": torch.tensor([1.0, 2.0]), "n": torch.tensor([3])}, "cfg": {"x": 1}}
    b = {"model": {"w": torch.tensor([3.0, 6.0]), "n": torch.tensor([5])}, "cfg": {"x": 2}}
    torch.save(a, tmp_path / "a.pt")
    torch.save(b, tmp_path / "b.pt")
    script = ROOT / "bench" / "peerlib" / "launch" / "fairseq_average.py"
    argv = [sys.executable, str(script), "--inputs", str(tmp_path / "a.pt"), str(tmp_path / "b.pt")]
    subprocess.run([*argv, "--output", str(tmp_path / "avg.pt")], check=True)
    avg = torch.load(tmp_path / "avg.pt", weights_only=False)
    assert torch.equal(avg["model"]["w"], torch.tensor([2.0, 4.0]))
    assert torch.equal(avg["model"]["n"], torch.tensor([5])) and avg["cfg"] == {"x": 2}
