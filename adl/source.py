"""Source text and spans: where in which file a piece of ADL came from."""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field
from functools import cached_property


@dataclass(frozen=True)
class Span:
    """A half-open range of character offsets ``[start, end)`` into one source text."""

    start: int
    end: int

    def __post_init__(self) -> None:
        if self.end < self.start:
            object.__setattr__(self, "end", self.start)

    def to(self, other: Span) -> Span:
        """The span covering ``self`` through ``other``."""
        return Span(min(self.start, other.start), max(self.end, other.end))


@dataclass(frozen=True, eq=False)
class Source:
    """One ADL text and the name it is reported under (a path or ``<string>``)."""

    text: str
    name: str = "<string>"
    _starts: list[int] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        starts = [0]
        for i, ch in enumerate(self.text):
            if ch == "\n":
                starts.append(i + 1)
        object.__setattr__(self, "_starts", starts)

    def line_col(self, offset: int) -> tuple[int, int]:
        """1-based line and column of a character offset."""
        offset = max(0, min(offset, len(self.text)))
        line = bisect.bisect_right(self._starts, offset) - 1
        return line + 1, offset - self._starts[line] + 1

    def line_text(self, line: int) -> str:
        """The text of a 1-based line, without its newline."""
        start = self._starts[line - 1]
        end = self.text.find("\n", start)
        return self.text[start:] if end < 0 else self.text[start:end]

    def snippet(self, span: Span) -> str:
        return self.text[span.start : span.end]

    @cached_property
    def end(self) -> Span:
        """An empty span at the end of the text (for 'unexpected end of file')."""
        return Span(len(self.text), len(self.text))
