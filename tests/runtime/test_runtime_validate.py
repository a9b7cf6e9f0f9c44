"""Validation cost: BLEU and chrF on a fixed sample (train.valid_bleu_sentences), the loss on
the whole set, and the wall time of each validation in metrics.jsonl and the log."""

import json
import re

import torch
from conftest import run_cli
from runtime_helpers import DEC, ENC, QUICK, data_args, model_files, reverse_task

import adl
from adl.runtime.config import load_config
from adl.runtime.data.corpus import TextPairs
from adl.runtime.data.parallel import encode_pairs
from adl.runtime.decode.translator import Translator
from adl.runtime.training import validate as validation
from adl.runtime.training.validate import bleu_sample


def test_the_bleu_sample_is_fixed_sorted_and_bounded():
    sample = bleu_sample(1000, 300)
    assert len(sample) == 300 == len(set(sample)) and sample == sorted(sample)
    assert 0 <= sample[0] and sample[-1] < 1000 and sample[-1] - sample[0] > 900  # spread
    assert bleu_sample(1000, 300) == sample  # the same in every run
    assert bleu_sample(50, 300) == bleu_sample(50, 0) == list(range(50))


class Letters:
    """A tokenizer stand-in: a letter is a piece (ids 4...)."""

    word_ids = None

    def encode(self, lines):
        return [[4 + ord(c) - ord("a") for c in line.replace(" ", "")] for line in lines]

    def decode_tgt(self, ids):
        return [" ".join(chr(ord("a") + i - 4) for i in seq if i >= 4) for seq in ids]


def test_bleu_decodes_only_the_sample_and_the_loss_covers_every_pair(monkeypatch):
    lines = [" ".join("abcdefgh"[(i + j) % 8] for j in range(3 + i % 4)) for i in range(40)]
    tok = Letters()
    data = encode_pairs(
        TextPairs(lines, lines, "v", "v", 40, 0), tok.encode, tok.encode, keep_text=True
    )
    torch.manual_seed(0)
    model = adl.build(ENC, DEC, src_vocab=12, tgt_vocab=12, d_model=32, heads=4)
    decoded = []
    real = Translator.search_tokens

    def spy(self, src_ids, options, *args):
        decoded.append(list(src_ids))
        assert (options.beam, options.len_a, options.len_b) == (1, 1.5, 10)  # greedy
        return real(self, src_ids, options, *args)

    monkeypatch.setattr(Translator, "search_tokens", spy)
    options = dict(max_tokens=200, smoothing=0.0)
    every = validation.validate(model, data, tok, torch.device("cpu"), **options)
    sample = validation.validate(model, data, tok, torch.device("cpu"), bleu_sentences=7, **options)
    assert [len(d) for d in decoded] == [40, 7]
    assert decoded[1] == [data.src[i].tolist() for i in bleu_sample(40, 7)]
    assert sample["loss"] == every["loss"] and sample["acc"] == every["acc"]
    assert set(sample) == {"loss", "ppl", "acc", "bleu", "chrf"}


def test_each_validation_logs_its_wall_time(tmp_path):
    paths = reverse_task(tmp_path / "data", train=200, valid=30)
    out = tmp_path / "run"
    code, _, err = run_cli(
        "train", *model_files(tmp_path), *data_args(paths), *QUICK,
        "--set", "max_steps=4", "--set", "valid_every=2", "--set", "valid_bleu_sentences=10",
        "--out", str(out),
    )  # fmt: skip
    assert code == 0, err
    records = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    valid = [r for r in records if r["split"] == "valid"]
    assert [r["step"] for r in valid] == [2, 4]
    assert all(isinstance(r["seconds"], float) and r["seconds"] > 0 for r in valid)
    log = (out / "train.log").read_text()
    times = re.findall(
        r"validation at step \d: .* \| ([\d.]+)s, validation (\d+) % of the run", log
    )
    assert len(times) == 2
    assert all(abs(float(t) - r["seconds"]) <= 0.051 for (t, _), r in zip(times, valid))
    assert "greedy translations of a fixed sample of 10 of the 30 sentences" in log
    assert re.search(r"done \(max steps\) at step 4 in .* \(validation \d+ % of it\)", log)


def test_the_shipped_presets_bound_the_bleu_sample():
    from adl.runtime.config import presets

    for name in presets():
        cfg = load_config(name)
        assert 0 < cfg.train.valid_bleu_sentences <= 500, name
