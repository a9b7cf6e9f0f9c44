"""Training through ``adl train``: the tiny reverse task is learnt; encoder-decoder files, one
model file and a joint file all train; early stopping; bad .adl files stop before any write."""

import json

import pytest
import yaml
from conftest import run_cli
from runtime_helpers import (
    JOINT,
    MODEL,
    QUICK,
    data_args,
    model_files,
    reverse_config,
    reverse_task,
    train_cli,
)

from adl import runtime
from adl.runtime.training.train import Update


@pytest.mark.slow
@pytest.mark.training
def test_the_tiny_reverse_task_reaches_95_percent_token_accuracy(tmp_path):
    paths = reverse_task(tmp_path / "data", train=4000, valid=200)
    out = tmp_path / "run"
    tiny = ["--preset", "tiny"]
    stdout = train_cli(tmp_path, paths, "max_steps=1200", "valid_every=400", options=tiny)
    assert stdout.startswith(f"{out}: 1,200 steps (max steps), best ppl ")
    # greedy translations of the validation set, scored token by token
    model, tok = runtime.load_for_inference(out, "best")
    sources = (tmp_path / "data" / "valid.src").read_text().splitlines()
    references = (tmp_path / "data" / "valid.tgt").read_text().splitlines()
    hyps = runtime.translate(model, tok, sources, beam=1)
    right = total = 0
    for hyp, ref in zip(hyps, references):
        h, r = hyp.split(), ref.split()
        right += sum(a == b for a, b in zip(h, r))
        total += max(len(h), len(r))
    accuracy = right / total
    print(f"token accuracy of greedy translations: {accuracy:.4f}")
    assert accuracy >= 0.95
    valid = [
        json.loads(l) for l in (out / "metrics.jsonl").read_text().splitlines() if '"valid"' in l
    ]
    assert valid[-1]["bleu"] > 80 and valid[-1]["acc"] >= 0.95


def test_an_encoder_decoder_pair_trains_and_writes_the_effective_config(tmp_path):
    paths = reverse_task(tmp_path / "data", train=200, valid=10)
    out = tmp_path / "run"
    stdout = train_cli(tmp_path, paths, "max_steps=6", "valid_every=3")
    assert stdout.strip() == f"{out}: 6 steps (max steps), best ppl " + stdout.split()[-1]
    written = yaml.safe_load((out / "config.yaml").read_text())
    assert written["model"]["d_model"] == 32 and written["train"]["max_steps"] == 6
    assert written["model"]["encoder"].endswith("tiny.enc.adl")
    assert written["data"]["train_src"] == paths["train"] + ".src"
    # the same command again refuses to overwrite the run
    code, _, err = run_cli(
        "train", *model_files(tmp_path), *data_args(paths), *QUICK, "--out", str(out)
    )
    assert code == 1 and "already holds a run: continue it with --resume" in err


def test_one_file_defining_encoder_and_decoder_trains(tmp_path):
    paths = reverse_task(tmp_path / "data", train=200, valid=10)
    model = tmp_path / "cnn_rnn.adl"
    model.write_text(MODEL)
    train_cli(tmp_path, paths, "max_steps=4", "valid_every=4", files=[str(model)], valid=False)
    m, _ = runtime.load_for_inference(tmp_path / "run")  # no validation set: best is the last
    assert "cnn" in m.spec.encoder and "rnn" in m.spec.decoder


def test_a_joint_model_trains(tmp_path):
    paths = reverse_task(tmp_path / "data", train=200, valid=10)
    joint = tmp_path / "local.adl"
    joint.write_text(JOINT)
    out = tmp_path / "run"
    train_cli(tmp_path, paths, "max_steps=4", "valid_every=2", files=[str(joint)])
    assert yaml.safe_load((out / "config.yaml").read_text())["model"]["joint"] == str(joint)
    model, tok = runtime.load_for_inference(out, "last")
    assert len(runtime.translate(model, tok, ["a b c"])) == 1


def train_small(tmp_path, *sets: str) -> runtime.Summary:
    """The tiny model for up to 100 updates on 200 reversed sentences, with ``sets``."""
    config = reverse_config(tmp_path, "max_steps=100", *sets, train=200, valid=10)
    return runtime.train(config, tmp_path / "run")


def test_early_stopping_on_patience(tmp_path):
    summary = train_small(
        tmp_path, "valid_every=1", "optim.lr=1e-12", "best_metric=bleu", "train.patience=2"
    )
    assert summary.reason == "early_stop" and summary.step == 3


def test_a_time_budget_stops_the_run_with_a_checkpoint(tmp_path):
    summary = train_small(tmp_path, "valid_every=50", "train.max_minutes=1e-9")
    assert summary.reason == "max_minutes" and summary.step == 1  # one update, then time is up
    assert summary.last is not None and summary.last.is_file()


def test_a_bad_adl_file_stops_before_anything_is_written(tmp_path):
    paths = reverse_task(tmp_path / "data", train=20, valid=5)
    enc, dec = model_files(tmp_path)
    (tmp_path / "tiny.dec.adl").write_text("pos -> repeat(2, res_nd(fft))\n")
    code, _, err = run_cli(
        "train", enc, dec, *data_args(paths), *QUICK, "--out", str(tmp_path / "run")
    )
    assert code == 1 and "error: unknown layer 'fft'" in err and "Traceback" not in err
    assert not (tmp_path / "run").exists()


def test_gradient_accumulation_equals_one_big_batch(tmp_path):
    """Two accumulated batches give the gradient of one batch holding both (the loss is
    normalised by the update's target tokens, padding is masked)."""
    import torch

    from adl.runtime.data.batching import collate

    paths = reverse_task(tmp_path / "data", train=100, valid=5)
    config = runtime.configure(
        model_files(tmp_path),
        preset="tiny",
        train=(paths["train"] + ".src", paths["train"] + ".tgt"),
        sets=["d_model=32", "max_tokens=128", "max_steps=10", "optimizer=adamw", "clip_norm=0"],
    )
    trainer = runtime.Trainer(config, tmp_path / "run")
    try:
        assert isinstance(trainer.state.optimizer, torch.optim.AdamW)
        grads = []
        trainer.state.optimizer.step = lambda: grads.append(  # look at the gradient, don't step
            [p.grad.clone() for p in trainer.state.model.parameters()]
        )
        a, b = next(trainer.state.stream), next(trainer.state.stream)
        first = trainer._update([a, b])
        assert isinstance(first, Update) and first.ok and not first.stop
        assert first.tokens == a.tgt_tokens + b.tgt_tokens and trainer.step == 1
        assert first.lr == trainer.state.optimizer.param_groups[0]["lr"]  # the schedule's
        with pytest.warns(DeprecationWarning, match="read update.tokens"):
            assert first["tokens"] == first.tokens  # the previous release's dict, one release
        trainer._update([collate(trainer.state.train_data, torch.cat([a.ids, b.ids]))])
    finally:
        trainer.close()
    assert len(grads) == 2
    for g1, g2 in zip(*grads):
        torch.testing.assert_close(g1, g2, rtol=1e-4, atol=1e-6)
