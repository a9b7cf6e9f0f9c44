"""Length limits are checked against the data: pairs over data.max_len or over a model's
learned positions are dropped from training and validation data, with a count, a share and
the limit; dropping more than 5 % of the training pairs is a warning that names the fix."""

import json
import random

import pytest
import torch
from conftest import run_cli
from runtime_helpers import ENC, QUICK, WORDS

import adl
from adl.runtime.data.corpus import TextPairs
from adl.runtime.data.parallel import Limits, encode_pairs
from adl.runtime.data.tokenizer import EOS
from adl.runtime.decode.search import SearchOptions, greedy, pad_batch
from adl.runtime.decode.translator import Translator

LEARN_POS_DEC = (
    "learn_pos(max_len=10) -> repeat(2, res_nd(mh_dot_self_att) -> res_nd(mh_dot_src_att) "
    "-> res_nd(ffl)) -> norm\n"
)


def _pairs(lengths_src, lengths_tgt, name="c.tsv"):
    src = [" ".join("a" * n) for n in lengths_src]
    tgt = [" ".join("b" * n) for n in lengths_tgt]
    return TextPairs(src, tgt, name, name, len(src) + 1, 1)


def _words(lines):
    return [line.split() for line in lines]


def _ids(lines):
    return [[5] * len(words) for words in _words(lines)]


def test_each_limit_is_counted_with_its_share_and_a_warning_names_the_fix():
    # 20 pairs: 16 short, 2 over max_len 6, 1 over the target positions, 1 over the ratio
    text = _pairs([2] * 16 + [7, 3, 2, 1], [3] * 16 + [2, 9, 5, 4])
    limits = Limits(max_len=6, max_ratio=3.0, src_positions=8, tgt_positions=4)
    data = encode_pairs(text, _ids, _ids, limits=limits, keep_text=True)
    s = data.stats
    assert (s.pairs, s.too_long, s.over_positions, s.bad_ratio, s.kept) == (20, 2, 1, 1, 16)
    assert data.references == text.tgt[:16] and data.sources == text.src[:16]
    assert s.describe("training data (c.tsv)") == (
        "training data (c.tsv): 21 lines, 1 with an empty side skipped, 2 of 20 pairs (10.0 %) "
        "over data.max_len=6 tokens dropped, 1 (5.0 %) longer than the model's learned "
        "positions (learn_pos: source 8 tokens, target 4 tokens) dropped, 1 (5.0 %) over "
        "data.max_ratio=3 dropped, 16 pairs kept (32 source / 48 target tokens)"
    )
    assert s.warning("training data (c.tsv)") == (
        "training data (c.tsv): 15.0 % of the pairs (3 of 20) are longer than data.max_len=6 "
        "tokens or the model's learned positions (learn_pos: source 8 tokens, target 4 tokens) "
        "and were dropped: raise data.max_len (--set data.max_len=7 keeps 95 %); give "
        "learn_pos a larger max_len in the model's .adl files"
    )
    few = encode_pairs(_pairs([2] * 40 + [7], [2] * 41), _ids, _ids, limits=Limits(6))
    assert few.stats.too_long == 1 and few.stats.warning("x") is None  # 2.4 %: no warning


def _corpus(tmp_path, n, long_every, long_len, valid_extra=()):
    rng = random.Random(0)
    for split, count, extra in (("train", n, ()), ("valid", 40, valid_extra)):
        with open(tmp_path / f"{split}.jsonl", "w") as f:
            for i in range(count):
                k = long_len if long_every and i % long_every == 0 else rng.randint(2, 6)
                words = [rng.choice(WORDS) for _ in range(k)]
                f.write(json.dumps({"src": " ".join(words), "tgt": " ".join(words[::-1])}) + "\n")
            for words in extra:
                f.write(json.dumps({"src": words, "tgt": words}) + "\n")
    return str(tmp_path / "train.jsonl"), str(tmp_path / "valid.jsonl")


def _train(tmp_path, files, train, valid, *sets):
    out = tmp_path / "run"
    argv = ["train", *files, "--train", train, "--valid", valid, *QUICK, "--out", str(out)]
    for item in ("max_steps=4", "valid_every=2", *sets):
        argv += ["--set", item]
    code, _, err = run_cli(*argv)
    return code, err, out


def test_a_learn_pos_model_filters_long_lines_and_validates_without_crashing(tmp_path):
    enc, dec = tmp_path / "m.enc.adl", tmp_path / "m.dec.adl"
    enc.write_text(ENC)
    dec.write_text(LEARN_POS_DEC)
    huge = " ".join(random.Random(1).choice(WORDS) for _ in range(20_000))
    train, valid = _corpus(tmp_path, 300, long_every=10, long_len=14, valid_extra=[huge])
    code, err, out = _train(tmp_path, [str(enc), str(dec)], train, valid)
    assert code == 0, err
    log = (out / "train.log").read_text()
    positions = "longer than the model's learned positions (learn_pos: target 9 tokens) dropped"
    assert f"training data ({train}): 300 lines, 30 (10.0 %) {positions}" in log
    assert f"validation data ({valid}): 41 lines, 1 of 41 pairs (2.4 %) over data.max_len=64" in log
    assert f"4 (9.8 %) {positions}" in log
    assert (
        f"WARNING validation data ({valid}): 12.2 % of the pairs (5 of 41) are longer than "
        "data.max_len=64 tokens or the model's learned positions (learn_pos: target 9 tokens) "
        "and were dropped: raise data.max_len"
    ) in log
    records = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in records if r["split"] == "valid"] == [2, 4]


def test_greedy_decoding_is_capped_at_the_decoders_positions():
    torch.manual_seed(0)
    model = adl.build(ENC, LEARN_POS_DEC, src_vocab=12, tgt_vocab=12, d_model=32, heads=4)
    model.eval()
    src = [[5, 6, 7, 8, 9, 10, 11, 5]]  # 8 tokens: up to 1.5 x 8 + 10 = 22 outputs
    with torch.no_grad():
        model.output.bias[EOS] = -1e4  # never eos: the search runs to its length limit
    options = SearchOptions(max_tokens=100, len_a=1.5, len_b=10)
    found = Translator(model, None).search_tokens(src, options)  # as validation decodes
    assert [len(h[0].tokens) for h in found] == [9]
    with pytest.raises(adl.InputError, match="at most 10 positions"):
        greedy(model, pad_batch(src), None, 22)  # the search itself, uncapped


def test_a_run_that_drops_many_long_pairs_says_so_loudly(tmp_path):
    enc, dec = tmp_path / "m.enc.adl", tmp_path / "m.dec.adl"
    enc.write_text(ENC)
    dec.write_text(ENC.replace("res_nd(ffl)", "res_nd(mh_dot_src_att) -> res_nd(ffl)"))
    train, valid = _corpus(tmp_path, 200, long_every=5, long_len=30)
    code, err, out = _train(
        tmp_path, [str(enc), str(dec)], train, valid, "data.max_len=20", "max_steps=2"
    )
    assert code == 0, err
    log = (out / "train.log").read_text()
    loud = [line for line in log.splitlines() if "WARNING" in line]
    assert len(loud) == 2, loud  # training and validation data
    assert f"training data ({train}): 20.0 % of the pairs (40 of 200) are longer than " in loud[0]
    assert (
        "data.max_len=20 tokens and were dropped: raise data.max_len (--set data.max_len="
        in loud[0]
    )


def test_pairs_left_out_by_valid_max_are_counted_apart():
    text = TextPairs(["a b"] * 9 + ["a b c"], ["c"] * 10, "v.en", "v.de", 12, 2)
    text.first(6)
    assert len(text.src) == 6 and text.unused == 4
    stats = encode_pairs(text, _ids, _ids).stats
    assert stats.pairs == 6 and stats.kept == 6
    assert stats.describe("validation data (v.en + v.de)") == (
        "validation data (v.en + v.de): 12 lines, 2 with an empty side skipped, 4 after the "
        "first 6 pairs not used (data.valid_max), 6 pairs kept (12 source / 6 target tokens)"
    )
