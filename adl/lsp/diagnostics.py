"""The checker's diagnostics as LSP diagnostics.

The message is what ``adl compile --check`` prints after ``error:`` (or ``warning:``), and
its ``hint:`` line below it; the range is the span the command underlines (a diagnostic
without a span sits at the start of the file); the notes (``in block 'b', used here``)
become related information at their spans.
"""

from __future__ import annotations

from collections.abc import Callable

from lsprotocol import types

from ..errors import Diagnostic
from ..source import Span
from .positions import LineIndex

SEVERITY = {"error": types.DiagnosticSeverity.Error, "warning": types.DiagnosticSeverity.Warning}


def message(d: Diagnostic) -> str:
    """The text of a diagnostic: its message, then ``hint: ...`` as the command prints it."""
    return d.message + (f"\nhint: {d.hint}" if d.hint else "")


def to_range(index: LineIndex, span: Span | None) -> types.Range:
    start, end = index.range(span) if span is not None else ((0, 0), (0, 0))
    return types.Range(
        start=types.Position(line=start[0], character=start[1]),
        end=types.Position(line=end[0], character=end[1]),
    )


def to_lsp(
    d: Diagnostic, index: LineIndex, uri: str, uri_of: Callable[[str], str]
) -> types.Diagnostic:
    """One diagnostic of the file ``uri`` (whose text ``index`` holds); ``uri_of`` turns
    another file's name (a note about the encoder) into its URI."""
    own = d.source is None or uri_of(d.source.name) == uri
    text = message(d) if own or d.source is None else f"{d.source.name}: {message(d)}"
    related = []
    for note in d.notes:
        where = index
        note_uri = uri
        if note.source is not None and uri_of(note.source.name) != uri:
            where, note_uri = LineIndex(note.source.text, index.encoding), uri_of(note.source.name)
        related.append(
            types.DiagnosticRelatedInformation(
                location=types.Location(uri=note_uri, range=to_range(where, note.span)),
                message=note.message,
            )
        )
    return types.Diagnostic(
        range=to_range(index, d.span if own else None),
        message=text,
        severity=SEVERITY[d.severity],
        source="adl",
        related_information=related or None,
    )
