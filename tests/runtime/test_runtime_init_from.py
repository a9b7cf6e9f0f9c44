"""Fine-tuning: `adl train --init-from RUN_OR_CHECKPOINT` starts from another run's weights
with a fresh optimizer and schedule, the source's tokenizer (unless --new-tokenizer), and
an architecture that must match (a mismatch names the first differing tensor)."""

import pytest
import torch
from conftest import run_cli, sets
from runtime_helpers import QUICK, data_args, model_files, reverse_task

from adl import runtime
from adl.runtime.model import checkpoint as ckpt
from adl.runtime.rundir import RunDir


@pytest.fixture(scope="module")
def source(tmp_path_factory):
    """A tiny trained run (validated: it has a best.pt) and its data and files."""
    where = tmp_path_factory.mktemp("source")
    paths = reverse_task(where / "data", train=100, valid=5)
    files = model_files(where)
    run = RunDir(where / "run")
    argv = [*data_args(paths), *QUICK, "--set", "max_steps=4", "--set", "valid_every=2"]
    code, _, err = run_cli("train", *files, *argv, "--set", "bleu=false", "--out", str(run.root))
    assert code == 0, err
    return run, files, paths


def fine_tune_config(source, files=None, *sets, **options):
    run, model, paths = source
    return runtime.configure(
        model if files is None else files,
        preset="tiny",
        train=(paths["train"] + ".src", paths["train"] + ".tgt"),
        sets=["d_model=32", "max_tokens=256", "max_steps=2", *sets],
        init_from=str(run.root),
        **options,
    )


@pytest.mark.parametrize("with_files", [True, False], ids=["adl-files", "checkpoint-spec"])
def test_the_weights_at_step_0_are_the_source_runs(source, tmp_path, with_files):
    run = source[0]
    best = ckpt.load(run.best)
    trainer = runtime.Trainer(fine_tune_config(source, None if with_files else []), tmp_path / "ft")
    try:
        assert trainer.step == 0
        mine = trainer.state.model.state_dict()
        assert list(mine) == list(best["model"])
        assert all(torch.equal(mine[k], best["model"][k]) for k in mine)
        assert trainer.state.optimizer.state_dict()["state"] == {}  # a fresh optimizer
        assert trainer.state.schedule.lr(1) == trainer.cfg.optim.lr / trainer.cfg.schedule.warmup
        # the optimizer is made with the rate of its first update (the schedule's)
        assert trainer.state.optimizer.param_groups[0]["lr"] == trainer.state.schedule.lr(1)
        assert trainer.state.book.history == [] and trainer.state.book.best_value is None
        ft = RunDir(tmp_path / "ft")
        assert (ft.tokenizer / "joint.model").read_bytes() == (
            run.tokenizer / "joint.model"
        ).read_bytes()
        summary = trainer.run()
    finally:
        trainer.close()
    assert summary.step == 2  # counted from 0, not from the source's 4
    state = ckpt.load(ft.last)
    assert state["config"]["train"]["init_from"] == str(run.root)
    assert any(not torch.equal(v, best["model"][k]) for k, v in state["model"].items())  # trained
    assert f"from the weights of {run.best}" in ft.log.read_text()


def test_a_checkpoint_file_can_be_named(source, tmp_path):
    run = source[0]
    step2 = run.step_file(2)  # not its best: any checkpoint file
    cfg = fine_tune_config(source)
    cfg.train.init_from = str(step2)
    trainer = runtime.Trainer(cfg, tmp_path / "ft")
    try:
        weights = ckpt.load(step2)["model"]
        assert all(torch.equal(v, weights[k]) for k, v in trainer.state.model.state_dict().items())
    finally:
        trainer.close()


def fine_tune(source, out, *argv):
    """``adl train --init-from SOURCE ARGV``: (exit code, the last line of stderr)."""
    run, _, paths = source
    code, _, err = run_cli(
        "train",
        *data_args(paths, valid=False),
        *QUICK,
        "--set",
        "max_steps=2",
        *argv,
        "--init-from",
        str(run.root),
        "--out",
        str(out),
    )
    return code, err.splitlines()[-1]


def test_another_architecture_names_the_first_differing_tensor(source, tmp_path):
    run, files, _ = source
    assert fine_tune(source, tmp_path / "ft", *files, "--set", "d_model=48") == (
        1,
        f"adl train: error: --init-from {run.best}: another architecture than this model: "
        "encoder.chain.layers.1.copies.0.layers.0.norm.weight is [32] in the checkpoint and "
        "[48] in this model",
    )
    assert not RunDir(tmp_path / "ft").holds_a_run()  # a corrected command can use --out


def test_a_tokenizer_of_another_size_does_not_fit(source, tmp_path):
    run, files, _ = source
    vocab = ckpt.load(run.best)["model"]["src_embed.weight"].shape[0]
    new = ["--new-tokenizer", "--set", "vocab_size=40"]
    code, err = fine_tune(source, tmp_path / "ft", *files, *new)
    assert code == 1 and err.startswith(
        f"adl train: error: --init-from {run.best}: another architecture than this model: "
    )
    assert f"is [{vocab}, 32] in the checkpoint and [40, 32] in this model" in err
    # without .adl files the model is the checkpoint's own: its vocabulary must be kept
    assert fine_tune(source, tmp_path / "ft2", *new) == (
        1,
        f"adl train: error: --init-from {run.best}: its model has vocabularies of {vocab} / "
        f"{vocab} pieces, the tokenizer of this run 40 / 40: reuse its tokenizer "
        "(no --new-tokenizer)",
    )


def test_fine_tuning_from_the_command_line(source, tmp_path):
    run, _, paths = source
    out = RunDir(tmp_path / "ft")
    code, stdout, err = run_cli(
        "train",
        *data_args(paths),
        *QUICK,
        *sets("max_steps=2", "valid_every=2"),
        "--init-from",
        str(run.root),
        "--out",
        str(out.root),
    )
    assert code == 0, err
    assert stdout.startswith(f"{out.root}: 2 steps")
    assert "tokenizer: joint sentencepiece (of " in err


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--resume", "--init-from", "x", "--out", "o"], "it does not go with --resume"),
        (["a.adl", "--new-tokenizer", "--out", "o"], "--new-tokenizer goes with --init-from"),
        (["--init-from", "x"], "--init-from without .adl files needs --out RUN"),
    ],
)
def test_usage(argv, message):
    code, _, err = run_cli("train", *argv)
    assert code == 2 and message in err and "Traceback" not in err
