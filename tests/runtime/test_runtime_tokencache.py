"""The token cache: a second load of the same pairs with the same tokenizer does not tokenize
(nor train sentencepiece again); a changed file, tokenizer or entry is never read stale."""

import pytest
import torch
from runtime_helpers import model_files, reverse_task

from adl import runtime
from adl.runtime.config import DataConfig
from adl.runtime.data.corpus import read_parallel
from adl.runtime.data.parallel import tokenize
from adl.runtime.data.tokencache import DEFAULT_NAME, TokenCache
from adl.runtime.data.tokenizer import Tokenizers, make_tokenizers

SETS = ["d_model=32", "max_tokens=256", "max_steps=1"]


def _no_encoding(monkeypatch):
    def refuse(self, lines):
        raise AssertionError("the tokenizer was called")

    monkeypatch.setattr(Tokenizers, "encode_src", refuse)
    monkeypatch.setattr(Tokenizers, "encode_tgt", refuse)


def _load(cache, pairs, tok):
    return cache.tokens(pairs, tok, lambda: tokenize(pairs, tok.encode_src, tok.encode_tgt))


def _same(a, b):
    return all(
        torch.equal(x.flat, y.flat) and torch.equal(x.offsets, y.offsets) for x, y in zip(a, b)
    )


@pytest.fixture
def corpus(tmp_path):
    paths = reverse_task(tmp_path / "data", train=200, valid=20)
    src, tgt = paths["train"] + ".src", paths["train"] + ".tgt"
    tok = make_tokenizers(DataConfig(train_src=src, train_tgt=tgt, vocab_size=30), tmp_path / "tok")
    return src, tgt, tok


def test_a_second_load_hits_the_cache_without_tokenizing(tmp_path, corpus, monkeypatch):
    src, tgt, tok = corpus
    cache = TokenCache(tmp_path / "cache")
    first = _load(cache, read_parallel(src, tgt), tok)
    assert (cache.hits["tokens"], cache.misses["tokens"]) == (0, 1)
    _no_encoding(monkeypatch)
    second = _load(TokenCache(tmp_path / "cache"), read_parallel(src, tgt), tok)
    assert _same(first, second) and len(first[0]) == 200


def test_a_changed_file_or_tokenizer_misses(tmp_path, corpus):
    src, tgt, tok = corpus
    cache = TokenCache(tmp_path / "cache")
    before = _load(cache, read_parallel(src, tgt), tok)
    lines = open(tgt).read().splitlines()
    lines[7] = "a b c d e f g h"
    open(tgt, "w").write("\n".join(lines) + "\n")
    after = _load(cache, read_parallel(src, tgt), tok)
    assert cache.misses["tokens"] == 2 and cache.hits["tokens"] == 0
    assert after[1][7].tolist() == tok.encode_tgt(["a b c d e f g h"])[0]
    assert not torch.equal(before[1][7], after[1][7]) and torch.equal(before[0].flat, after[0].flat)
    other = make_tokenizers(
        DataConfig(train_src=src, train_tgt=tgt, vocab_size=25, spm_type="char"), tmp_path / "t2"
    )
    _load(cache, read_parallel(src, tgt), other)
    assert cache.misses["tokens"] == 3 and cache.hits["tokens"] == 0
    _load(cache, read_parallel(src, tgt), tok)
    assert cache.hits["tokens"] == 1


def test_a_damaged_entry_is_rebuilt_and_an_unwritable_cache_is_skipped(tmp_path, corpus):
    src, tgt, tok = corpus
    warnings = []
    cache = TokenCache(tmp_path / "cache", warn=warnings.append)
    good = _load(cache, read_parallel(src, tgt), tok)
    (entry,) = (tmp_path / "cache").glob("tokens-*.pt")
    entry.write_bytes(entry.read_bytes()[:100])
    again = _load(cache, read_parallel(src, tgt), tok)
    assert _same(good, again) and cache.hits["tokens"] == 0
    assert len(warnings) == 1 and "does not load" in warnings[0]
    assert _same(good, _load(cache, read_parallel(src, tgt), tok)) and cache.hits["tokens"] == 1
    blocked = tmp_path / "file"
    blocked.write_text("not a directory")
    quiet = TokenCache(blocked / "cache", warn=warnings.append)
    assert _same(good, _load(quiet, read_parallel(src, tgt), tok))
    assert "cannot write" in warnings[-1]


def test_a_second_run_over_the_same_corpus_neither_trains_sentencepiece_nor_tokenizes(
    tmp_path, monkeypatch
):
    import sentencepiece as spm

    paths = reverse_task(tmp_path / "data", train=300, valid=30)
    files = model_files(tmp_path)
    data = dict(
        train=(paths["train"] + ".src", paths["train"] + ".tgt"),
        valid=(paths["valid"] + ".src", paths["valid"] + ".tgt"),
    )
    runs = tmp_path / "runs"
    config = runtime.configure(files, preset="tiny", sets=SETS, **data)
    first = runtime.Trainer(config, runs / "one")
    first.close()
    assert sorted(p.name.split("-")[0] for p in (runs / DEFAULT_NAME).iterdir()) == [
        "spm",
        "tokens",
        "tokens",
    ]

    _no_encoding(monkeypatch)

    def no_training(**options):
        raise AssertionError("sentencepiece was trained")

    monkeypatch.setattr(spm.SentencePieceTrainer, "train", no_training)
    second = runtime.Trainer(config, runs / "two")
    try:
        assert _same(
            (first.state.train_data.src, first.state.train_data.tgt),
            (second.state.train_data.src, second.state.train_data.tgt),
        )
        assert second.state.valid_data.references == first.state.valid_data.references
        assert second.state.cache.hits == {"tokens": 2, "sentencepiece": 1}
    finally:
        second.close()
    log = (runs / "two" / "train.log").read_text()
    assert "sentencepiece (from the cache" in log and log.count("tokens from the cache") == 2
    assert (runs / "one" / "tokenizer" / "joint.model").read_bytes() == (
        runs / "two" / "tokenizer" / "joint.model"
    ).read_bytes()
    # the cache can be moved or turned off
    off = runtime.configure(files, preset="tiny", sets=[*SETS, "data.cache=false"], **data)
    with pytest.raises(AssertionError, match="sentencepiece was trained"):
        runtime.Trainer(off, runs / "three")
