"""Diagnostics and the one root error type, rendered in one place.

Every user-facing problem with an ADL text is a :class:`Diagnostic` with a source span.
:class:`ADLError` carries all diagnostics of a run; ``str(error)`` renders them like a
compiler does::

    dec.adl:1:24: error: unknown layer 'fft'
      | pos -> repeat(6, res_nd(fft))
      |                         ^^^
    hint: did you mean 'ffl'?
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Literal

from .source import Source, Span

Severity = Literal["error", "warning"]


@dataclass(frozen=True)
class Note:
    """A secondary location, e.g. the block call an error inside a block came through."""

    message: str
    source: Source | None = None
    span: Span | None = None


@dataclass(frozen=True)
class Diagnostic:
    severity: Severity
    message: str
    source: Source | None = None
    span: Span | None = None
    hint: str | None = None
    notes: tuple[Note, ...] = field(default=())

    @property
    def is_error(self) -> bool:
        return self.severity == "error"

    def key(self) -> tuple:
        """Identity used to drop repeats (the same error reached through several block uses)."""
        name = self.source.name if self.source else None
        return (self.severity, self.message, name, self.span)

    def render(self) -> str:
        return render(self)


class UserError(Exception):
    """A problem with the user's input that the user can fix (a bad file, setting or
    checkpoint): the ``adl`` command prints ``str(error)`` as one message, without a
    traceback, and exits 1. The runtime's errors derive from it."""


class InputError(UserError):
    """An input a built model cannot take: a sequence longer than a layer's positions
    (``learn_pos(max_seq_len=...)``), or word ids a layer needs and was not given.

    ``limit`` and ``length`` are set for a sequence that is too long (the runtime filters
    such lines before they reach the model)."""

    def __init__(self, message: str, limit: int | None = None, length: int | None = None):
        super().__init__(message)
        self.limit = limit
        self.length = length


class ADLError(UserError):
    """The root of every error about an ADL text, a model description or its arguments.

    It holds one or more diagnostics; only errors raise, warnings travel on results.
    """

    def __init__(self, diagnostics: Diagnostic | Iterable[Diagnostic]):
        if isinstance(diagnostics, Diagnostic):
            diagnostics = [diagnostics]
        self.diagnostics: list[Diagnostic] = list(diagnostics)
        super().__init__(self.render())

    def render(self) -> str:
        return "\n".join(render(d) for d in self.diagnostics)

    @property
    def errors(self) -> list[Diagnostic]:
        return [d for d in self.diagnostics if d.is_error]

    def __str__(self) -> str:  # the rendered text, never a repr
        return self.render()


def report(exc: Exception, command: str) -> str:
    """A user error as the ``adl`` command prints it (the one place, for the CLI and the
    processes ``adl train --nproc`` starts): an :class:`ADLError` as the compiler renders
    it, any other as one line ``adl COMMAND: error: MESSAGE``."""
    if isinstance(exc, ADLError):
        return exc.render()
    return f"adl {command}: error: {exc}"


def error(
    message: str,
    source: Source | None = None,
    span: Span | None = None,
    *,
    hint: str | None = None,
    notes: Iterable[Note] = (),
) -> ADLError:
    """Shorthand for an :class:`ADLError` with a single error diagnostic."""
    return ADLError(Diagnostic("error", message, source, span, hint, tuple(notes)))


def did_you_mean(name: str, candidates: Iterable[str], *, ignore_case: bool = False) -> str | None:
    """``did you mean 'x'?`` for the closest candidate, if one is close enough: the one
    did-you-mean of the project (ADL names, settings, presets, sweep specs).

    difflib finds the close names; among them the fewest edits win, then the same length
    (a typo more often changes a letter than drops one: ``fft`` -> ``ffl``, not ``ff``).
    ``ignore_case`` compares in lower case and suggests the candidate as spelt.

    >>> did_you_mean("fft", ["ff", "ffl", "norm"])
    "did you mean 'ffl'?"
    >>> did_you_mean("Baseline", ["baseline"], ignore_case=True)
    "did you mean 'baseline'?"
    >>> did_you_mean("xyz", ["ffl"]) is None
    True
    """
    if ignore_case:
        spelt = {str(c).lower(): str(c) for c in candidates}
        best = _closest(name.lower(), spelt)
        return None if best is None else f"did you mean '{spelt[best]}'?"
    best = _closest(name, candidates)
    return None if best is None else f"did you mean '{best}'?"


def _closest(name: str, candidates: Iterable[str]) -> str | None:
    """The candidate closest to ``name``, or None when none is close enough."""
    close = difflib.get_close_matches(name, sorted(set(candidates)), n=6, cutoff=0.6)
    if not close:
        return None
    best = min(
        close,
        key=lambda c: (
            _edits(name, c),
            abs(len(c) - len(name)),
            -difflib.SequenceMatcher(None, name, c).ratio(),
            c,
        ),
    )
    return best


def _edits(a: str, b: str) -> int:
    """Levenshtein distance with transpositions (optimal string alignment)."""
    prev2: list[int] = []
    prev = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        cur = [i] + [0] * len(b)
        for j, cb in enumerate(b, 1):
            cur[j] = min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (ca != cb))
            if i > 1 and j > 1 and ca == b[j - 2] and a[i - 2] == cb:
                cur[j] = min(cur[j], prev2[j - 2] + 1)
        prev2, prev = prev, cur
    return prev[-1]


def _location(source: Source | None, span: Span | None) -> str:
    if source is None:
        return "adl"
    if span is None:
        return source.name
    line, col = source.line_col(span.start)
    return f"{source.name}:{line}:{col}"


_WINDOW = 100  # longer source lines are cut around the span


def _excerpt(source: Source, span: Span) -> list[str]:
    line, col = source.line_col(span.start)
    text = source.line_text(line)
    end_line, end_col = source.line_col(span.end)
    width = (end_col - col) if end_line == line else (len(text) - col + 1)
    width = max(1, min(width, _WINDOW))
    if len(text) > _WINDOW:
        first = max(0, col - 1 - _WINDOW // 2)
        cut_end = first + _WINDOW < len(text)
        text = ("..." if first else "") + text[first : first + _WINDOW] + ("..." if cut_end else "")
        col = col - first + (3 if first else 0)
        width = min(width, len(text) - col + 1)  # the underline ends with the text shown
    # Tabs keep their width in the underline so the carets line up.
    pad = "".join("\t" if ch == "\t" else " " for ch in text[: col - 1])
    return [f"  | {text}", f"  | {pad}{'^' * width}"]


def render(d: Diagnostic) -> str:
    """The one place where diagnostics become text."""
    lines = [f"{_location(d.source, d.span)}: {d.severity}: {d.message}"]
    if d.source is not None and d.span is not None:
        lines += _excerpt(d.source, d.span)
    for note in d.notes:
        lines.append(f"{_location(note.source, note.span)}: note: {note.message}")
        if note.source is not None and note.span is not None:
            lines += _excerpt(note.source, note.span)
    if d.hint:
        lines.append(f"hint: {d.hint}")
    return "\n".join(lines)
