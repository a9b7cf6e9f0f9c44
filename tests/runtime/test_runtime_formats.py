"""Data formats: two text files, TSV and JSONL (field names settable), gzip of any of them,
CR-only line ends; a bad line stops with one message naming the file and the line."""

import gzip
import json

import pytest
from conftest import run_cli
from runtime_helpers import QUICK, model_files

from adl.runtime.config import Config, DataConfig
from adl.runtime.data.corpus import read_lines, read_pairs, read_split
from adl.runtime.data.parallel import files_of
from adl.runtime.data.tokenizer import make_tokenizers
from adl.runtime.errors import ConfigError, DataError
from adl.runtime.run.configure import configure, data_files

PAIRS = [("a b", "x y"), ("c", "z"), ("d e f", "u v w")]


def write(path, data: bytes):
    path.write_bytes(data)
    return str(path)


def tsv(pairs) -> bytes:
    return "".join(f"{s}\t{t}\n" for s, t in pairs).encode()


def jsonl(pairs, src="src", tgt="tgt") -> bytes:
    return "".join(json.dumps({src: s, tgt: t}) + "\n" for s, t in pairs).encode()


def as_pairs(text):
    return list(zip(text.src, text.tgt))


def test_tsv_and_jsonl_read_the_same_pairs_plain_and_gzipped(tmp_path):
    for name, data in (("c.tsv", tsv(PAIRS)), ("c.jsonl", jsonl(PAIRS))):
        plain = write(tmp_path / name, data)
        packed = write(tmp_path / f"{name}.gz", gzip.compress(data))
        for path in (plain, packed):
            text = read_pairs(path)
            assert as_pairs(text) == PAIRS and (text.lines, text.empty) == (3, 0)
            assert text.src_path == text.tgt_path == path and text.name == path


def test_two_gzipped_text_files_and_a_prefix_that_exists_only_gzipped(tmp_path):
    write(tmp_path / "t.en.gz", gzip.compress(b"a b\nc\n"))
    write(tmp_path / "t.de", b"x y\nz\n")
    src, tgt = files_of(str(tmp_path / "t"), ["en", "de"])
    assert (src, tgt) == (str(tmp_path / "t.en.gz"), str(tmp_path / "t.de"))
    assert as_pairs(read_pairs(src, tgt)) == [("a b", "x y"), ("c", "z")]


def test_jsonl_field_names_are_settable(tmp_path):
    path = write(tmp_path / "c.jsonl", jsonl(PAIRS, "de", "en"))
    cfg = DataConfig(train=path, src_field="de", tgt_field="en")
    assert as_pairs(read_split(cfg, "train")) == PAIRS
    with pytest.raises(DataError) as err:
        read_split(DataConfig(train=path), "train")
    assert str(err.value) == (
        f"{path}:1: no field 'src' (the line has 'de', 'en'; set data.src_field to the "
        "field's name)"
    )


def test_empty_lines_and_empty_sides_are_skipped_and_counted(tmp_path):
    t = read_pairs(write(tmp_path / "c.tsv", b"a\tx\n\n \t \nb\t\n\tq\nc\tz\n"))
    assert as_pairs(t) == [("a", "x"), ("c", "z")] and (t.lines, t.empty) == (6, 4)
    j = read_pairs(
        write(tmp_path / "c.jsonl", b'{"src": "a", "tgt": "x"}\n\n{"src": "", "tgt": "y"}\n')
    )
    assert as_pairs(j) == [("a", "x")] and (j.lines, j.empty) == (3, 2)


@pytest.mark.parametrize(
    "name, data, message",
    [
        ("c.tsv", b"a\tx\nb x\nc\tz\n", ":2: expected source<TAB>target (one tab), found 0 tabs"),
        ("c.tsv", b"a\tx\nc\tz\tq\n", ":2: expected source<TAB>target (one tab), found 2 tabs"),
        ("c.tsv", b"a\tx\nc\t\xff\n", ":2: not valid UTF-8 (byte 3 of the line: b'\\xff')"),
        ("c.jsonl", b'{"src": "a", "tgt": "x"}\n{"src": "b", "tgt": }\n', ":2: not valid JSON"),
        ("c.jsonl", b'["a", "x"]\n', ':1: expected a JSON object such as {"src": ..., "tgt": ...}, found a list'),
        ("c.jsonl", b'{"src": "a"}\n', ":1: no field 'tgt' (the line has 'src'; set data.tgt_field"),
        ("c.jsonl", b'{"src": "a", "tgt": 3}\n', ":1: field 'tgt' holds a number, not a string"),
        ("c.jsonl", b'{"src": "a", "tgt": null}\n', ":1: field 'tgt' holds null, not a string"),
        ("c.jsonl", b'{"src": "\\ud800", "tgt": "x"}\n', ":1: field 'src' holds a lone surrogate"),
    ],
)  # fmt: skip
def test_a_bad_line_names_the_file_and_the_line(tmp_path, name, data, message):
    for path in (write(tmp_path / name, data), write(tmp_path / f"{name}.gz", gzip.compress(data))):
        with pytest.raises(DataError) as err:
            read_pairs(path)
        assert str(err.value).startswith(path + message), str(err.value)


def test_a_damaged_gzip_file_and_an_unknown_single_file_format(tmp_path):
    broken = write(tmp_path / "c.tsv.gz", gzip.compress(tsv(PAIRS))[:-12])
    with pytest.raises(DataError, match=f"^{broken}: a damaged gzip file"):
        read_pairs(broken)
    other = write(tmp_path / "c.txt", tsv(PAIRS))
    with pytest.raises(DataError, match=r"must be \.tsv .* or \.jsonl"):
        read_pairs(other)


def test_cr_only_line_ends_are_line_ends(tmp_path):
    old_mac = write(tmp_path / "t.en", b"a b\rc\rd e\r")
    assert read_lines(old_mac) == ["a b", "c", "d e"]
    write(tmp_path / "t.de", b"x y\nz\nu v\n")
    pairs = read_pairs(old_mac, str(tmp_path / "t.de"))
    assert as_pairs(pairs) == [("a b", "x y"), ("c", "z"), ("d e", "u v")]
    # a \r inside a line of a \n file stays inside the line: line numbers match wc -l
    assert read_lines(write(tmp_path / "m.en", b"a\rb\nc\n")) == ["a\rb", "c"]
    # and sentencepiece, which trains on what was read, never sees one giant line
    tok = make_tokenizers(
        DataConfig(train_src=old_mac, train_tgt=str(tmp_path / "t.de"), vocab_size=30),
        tmp_path / "tok",
    )
    assert tok.decode_tgt(tok.encode_tgt(["z"])) == ["z"]


def test_the_cli_forms_of_the_data(tmp_path):
    corpus = write(tmp_path / "c.tsv.gz", gzip.compress(tsv(PAIRS)))
    assert data_files(corpus, None, None, None, "train") == corpus
    assert data_files(str(tmp_path / "c.jsonl"), ["en", "de"], None, None, "valid") == str(
        tmp_path / "c.jsonl"
    )
    with pytest.raises(ConfigError, match="or give one file of pairs"):
        data_files(str(tmp_path / "c"), None, None, None, "train")
    config = configure(train=corpus, valid=("v.en", "v.de"), sets=["max_steps=1"])
    assert config.data.train == corpus and config.data.train_src is None
    assert config.data.valid_src.endswith("v.en") and config.data.valid is None
    both = Config()
    both.data.train, both.data.train_src = "c.tsv", "c.en"
    with pytest.raises(ConfigError, match="give data.train .* not both"):
        both.validate()


@pytest.mark.parametrize("case", ["tabs", "json"])
def test_a_bad_line_through_the_cli_is_one_message(tmp_path, case):
    name, data, expected = {
        "tabs": ("c.tsv", b"a\tx\nb x\n", ":2: expected source<TAB>target"),
        "json": ("c.jsonl.gz", gzip.compress(b'{"src": "a", "tgt": "x"}\n{"src"\n'), ":2: not valid JSON"),
    }[case]  # fmt: skip
    path = write(tmp_path / name, data)
    out = tmp_path / "run"
    code, _, err = run_cli(
        "train", *model_files(tmp_path), "--train", path, *QUICK, "--out", str(out)
    )
    assert code == 1 and "Traceback" not in err
    assert err.strip().startswith(f"adl train: error: {path}{expected}") and "\n" not in err.strip()
    assert not out.exists()
