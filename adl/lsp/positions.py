"""Character offsets into ADL text <-> LSP positions (line, character).

ADL spans (:class:`adl.source.Span`) are offsets in code points, Python's string indices.
LSP positions count lines as the protocol does (a line ends at ``\\n``, ``\\r\\n`` or ``\\r``)
and characters in the encoding the client and the server agreed on: UTF-16 code units
unless the client offers ``utf-8`` or ``utf-32``. For text with only ``\\n`` line ends, a
position's line and character are ``adl compile``'s ``LINE:COL`` less one each.
"""

from __future__ import annotations

import bisect
import re

from ..source import Span

_LINE_END = re.compile(r"\r\n|\r|\n")
UTF8, UTF16, UTF32 = "utf-8", "utf-16", "utf-32"


def units(text: str, encoding: str = UTF16) -> int:
    """The length of ``text`` in the code units of ``encoding``."""
    if encoding == UTF32:
        return len(text)
    if encoding == UTF8:
        return len(text.encode("utf-8", "surrogatepass"))
    return len(text) + sum(1 for ch in text if ord(ch) > 0xFFFF)


class LineIndex:
    """Where each line of one text starts, for converting offsets and positions."""

    def __init__(self, text: str, encoding: str = UTF16):
        self.text = text
        self.encoding = encoding
        self.starts = [0] + [m.end() for m in _LINE_END.finditer(text)]

    def position(self, offset: int) -> tuple[int, int]:
        """The (line, character) of an offset, both from 0."""
        offset = max(0, min(offset, len(self.text)))
        line = bisect.bisect_right(self.starts, offset) - 1
        return line, units(self.text[self.starts[line] : offset], self.encoding)

    def range(self, span: Span) -> tuple[tuple[int, int], tuple[int, int]]:
        return self.position(span.start), self.position(span.end)

    def offset(self, line: int, character: int) -> int:
        """The offset of a position; one past a line's end is its end, one past the last
        line the text's end."""
        if line < 0:
            return 0
        if line >= len(self.starts):
            return len(self.text)
        start = self.starts[line]
        end = self.starts[line + 1] if line + 1 < len(self.starts) else len(self.text)
        text = _LINE_END.sub("", self.text[start:end])
        count = 0
        for i, ch in enumerate(text):
            if count >= character:
                return start + i
            count += units(ch, self.encoding)
        return start + len(text)
