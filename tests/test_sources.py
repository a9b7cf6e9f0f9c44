"""What adl reads: when a str is a file name, and which files it refuses (one message each)."""

import os
from pathlib import Path

import pytest
from conftest import run_cli

import adl
from adl.api import is_file_name, read_source


def test_a_str_is_a_file_name_only_when_it_cannot_be_adl_text():
    for name in ["t.enc.adl", "models/t.enc.adl", "my runs/t.enc.adl", "../a-b/t.adl"]:
        assert is_file_name(name)
    for text in [
        "pos -> ffl  # as in t.adl",  # a comment that names a file
        "pos → ffl # t.adl",
        "$x = 1.adl",
        "run(1)/t.adl",
        "pos\n# t.adl",
        "t.adl.bak",
        "pos",
    ]:
        assert not is_file_name(text)
    # a one-line text that ends in .adl is text, and it checks
    assert adl.check("pos -> ffl  # as in t.enc.adl", role="encoder").network.layers == 2


def test_files_by_path_and_by_name(tmp_path, monkeypatch):
    f = tmp_path / "my runs" / "t.enc.adl"
    f.parent.mkdir()
    f.write_text("pos -> ffl\n")
    assert adl.check(f).network.role == "encoder"  # a Path
    assert adl.check(str(f)).network.role == "encoder"  # a str with a space in it
    monkeypatch.chdir(tmp_path)
    assert read_source("my runs/t.enc.adl").name == "my runs/t.enc.adl"


def rendered(source) -> str:
    with pytest.raises(adl.ADLError) as info:
        adl.check(source, role="encoder")
    return str(info.value)


def test_file_errors_are_one_message(tmp_path):
    assert rendered(str(tmp_path / "missing.enc.adl")) == (
        f"adl: error: {tmp_path / 'missing.enc.adl'}: no such file"
    )
    assert rendered(tmp_path) == f"adl: error: {tmp_path}: a directory, not an ADL file"
    big = tmp_path / "big.adl"
    big.write_text("pos" + " " * (1 << 18) + "\n")
    assert rendered(big) == (
        f"adl: error: {big}: larger than the limit of 262,144 bytes for an ADL file\n"
        "hint: an ADL file describes one architecture in a few lines"
    )
    bad = tmp_path / "bad.enc.adl"
    bad.write_bytes(b"pos -> \xff")
    assert rendered(bad) == f"adl: error: {bad}: not UTF-8 text (byte 7)"


@pytest.mark.skipif(not os.path.exists("/dev/zero"), reason="no /dev/zero")
def test_special_files_are_refused_without_reading_them(tmp_path):
    assert rendered(Path("/dev/zero")) == (
        "adl: error: /dev/zero: not a regular file (a device, pipe or socket): "
        "ADL is read from files"
    )
    fifo = tmp_path / "pipe.adl"
    os.mkfifo(fifo)  # opening it would block until a writer came
    assert "not a regular file" in rendered(fifo)
    code, out, err = run_cli("compile", "--check", "/dev/zero")
    assert code == 1 and "Traceback" not in err
    assert err.splitlines()[0] == (
        "adl: error: /dev/zero: not a regular file (a device, pipe or socket): "
        "ADL is read from files"
    )


def test_long_texts_are_refused_before_parsing():
    text = "pos -> " * 50_000 + "norm"
    with pytest.raises(adl.ADLError) as info:
        adl.parse(text)
    assert info.value.errors[0].message == (
        f"the text is {len(text):,} characters long, more than the limit of 262,144"
    )


def test_text_that_looks_like_a_file_name_says_how_it_was_read():
    with pytest.raises(adl.ADLError) as info:
        adl.check("run(1)/t.enc.adl", role="encoder")
    assert info.value.errors[0].hint == (
        "this str was read as ADL text, as it has ADL's punctuation; to read a file of that "
        "name pass pathlib.Path(...)"
    )
