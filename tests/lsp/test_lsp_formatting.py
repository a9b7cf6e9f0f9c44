"""Formatting (``adl fmt`` and the editor's): the printer's layout, comments kept, the
syntax tree never changed."""

import io
import re

import pytest
from conftest import ROOT, run_cli
from hypothesis import given, settings
from hypothesis import strategies as st
from strategies import files

import adl
from adl.lsp.formatting import WIDTH, format_text

ARCHITECTURES = sorted((ROOT / "architectures").rglob("*.adl"))
COMMENT = re.compile(r"#[^\n]*")


def comments(text: str) -> list[str]:
    return [c.rstrip() for c in COMMENT.findall(text)]


@pytest.mark.parametrize("path", ARCHITECTURES, ids=lambda p: str(p.relative_to(ROOT)))
def test_the_architectures_keep_their_tree_and_comments(path):
    text = path.read_text()
    out = format_text(text, str(path))
    assert adl.parse(out) == adl.parse(text)
    assert comments(out) == comments(text)
    assert format_text(out, str(path)) == out


@settings(max_examples=100, deadline=None)
@given(files, st.data())
def test_messy_text_formats_to_the_same_tree_once_and_for_all(tree, data):
    lines = adl.to_text(tree).split("\n")[:-1]  # (a string may hold \x85 or \u2028)
    messy = []
    for i, line in enumerate(lines):
        if data.draw(st.booleans()):
            messy.append(f"# note {i}")
        spaced = line.replace(" -> ", data.draw(st.sampled_from(["->", "  ->   ", " → "])))
        messy.append(spaced + data.draw(st.sampled_from(["", "   ", f"  # after {i}"])))
    text = "\n".join(messy) + "\n"
    out = format_text(text)
    assert adl.parse(out) == adl.parse(text)
    marks = re.compile(r"# (?:note|after) \d+")  # the comments put in (strings may hold '#')
    assert marks.findall(out) == marks.findall(text)
    assert format_text(out) == out


def test_layout_of_statements():
    text = (
        "\n\n$n   =  2   # blocks\n"
        "t(x)=res_nd( x )->norm  t2 = t(ffl)\n\n\n\n"
        "pos  ->  repeat( $n , t(mh_dot_self_att) )->t2  \n"
    )
    assert format_text(text) == (
        "$n = 2   # blocks\n"
        "t(x) = res_nd(x) -> norm\n"
        "t2 = t(ffl)\n"
        "\n"
        "pos -> repeat($n, t(mh_dot_self_att)) -> t2\n"
    )


def test_long_chains_break_before_arrows_and_written_breaks_stay():
    layers = " -> ".join(f"res_nd(ffl({i}00))" for i in range(1, 9))
    out = format_text(f"block = {layers}\n")
    assert all(len(line) <= WIDTH for line in out.splitlines())
    assert out.splitlines()[1].startswith("     -> res_nd(")  # indented by the name 'block'
    written = "t = res_nd(ffl)\n  -> norm\npos -> t\n"
    assert format_text(written) == written


def test_a_statement_with_a_comment_inside_is_kept_as_written():
    text = "t = res_nd(ffl)   # first\n  ->   norm\npos->t\n"
    assert format_text(text) == "t = res_nd(ffl)   # first\n  ->   norm\npos -> t\n"


def test_text_that_does_not_parse_is_an_error():
    with pytest.raises(adl.ADLError, match="unclosed"):
        format_text("pos -> res_nd(")


def test_adl_fmt_rewrites_checks_and_reads_stdin(tmp_path, monkeypatch):
    messy, tidy = tmp_path / "a.enc.adl", tmp_path / "b.enc.adl"
    messy.write_text("pos->ffl  # x\n")
    tidy.write_text("pos -> ffl\n")
    assert run_cli("fmt", "--check", str(messy), str(tidy)) == (
        1,
        f"{messy}: would be reformatted\n",
        "",
    )
    assert messy.read_text() == "pos->ffl  # x\n"
    assert run_cli("fmt", str(messy), str(tidy)) == (0, f"{messy}: reformatted\n", "")
    assert messy.read_text() == "pos -> ffl  # x\n"
    assert run_cli("fmt", "--check", str(messy))[0] == 0
    monkeypatch.setattr("sys.stdin", io.StringIO("pos->norm"))
    assert run_cli("fmt", "-") == (0, "pos -> norm\n", "")


def test_adl_fmt_reports_a_file_that_does_not_parse(tmp_path):
    bad = tmp_path / "bad.enc.adl"
    bad.write_text("pos -> ffl(\n")
    code, out, err = run_cli("fmt", str(bad))
    assert code == 1 and out == ""
    assert f"{bad}:1:11: error: unclosed '('" in err and "Traceback" not in err
    assert bad.read_text() == "pos -> ffl(\n"
