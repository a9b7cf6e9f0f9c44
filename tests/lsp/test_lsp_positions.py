"""Offsets <-> LSP positions: lines as LSP ends them, characters in the agreed encoding."""

import pytest

from adl.lsp.positions import UTF8, UTF16, UTF32, LineIndex
from adl.source import Source, Span


def test_positions_are_the_compilers_line_and_column_less_one():
    text = "t = res_nd(ffl)\n\npos -> repeat(6, t)\n  -> norm"
    source, index = Source(text), LineIndex(text)
    for offset in range(len(text) + 1):
        line, col = source.line_col(offset)
        assert index.position(offset) == (line - 1, col - 1)
        assert index.offset(line - 1, col - 1) == offset


@pytest.mark.parametrize(
    "encoding, column", [(UTF16, 1 + 1 + 2 + 1), (UTF8, 1 + 2 + 4 + 1), (UTF32, 4)]
)
def test_characters_count_in_the_encodings_code_units(encoding, column):
    text = 'x\npos -> f(s="é😀", a=1)'
    offset = text.index(", a")  # after "é😀": 😀 is two UTF-16 units, four UTF-8 bytes
    index = LineIndex(text, encoding)
    start = index.position(text.index('"'))
    assert index.position(offset) == (1, start[1] + column)
    assert index.offset(*index.position(offset)) == offset


def test_lines_end_at_crlf_cr_and_lf_only():
    text = "a\r\nb\rc\nd\fe\u2028f"  # a form feed or U+2028 ends no LSP line
    index = LineIndex(text)
    assert [index.position(text.index(ch)) for ch in "abcdef"] == [
        (0, 0),
        (1, 0),
        (2, 0),
        (3, 0),
        (3, 2),
        (3, 4),
    ]
    assert index.range(Span(text.index("d"), len(text))) == ((3, 0), (3, 5))


def test_positions_past_a_line_or_the_text_clamp():
    index = LineIndex("ab\ncd")
    assert index.offset(0, 99) == 2  # the end of line 0, before its newline
    assert index.offset(7, 0) == 5
    assert index.offset(-1, 3) == 0
    assert index.position(99) == (1, 2)
