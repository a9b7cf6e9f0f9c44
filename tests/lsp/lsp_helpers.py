"""Driving ``adl lsp`` from the tests: a real LSP client (pytest-lsp) over stdio, and
``adl compile --check``'s output read back as (line, column, width, message, hint)."""

from __future__ import annotations

import asyncio
import re
import sys
from dataclasses import dataclass
from pathlib import Path

from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities

SERVER = ClientServerConfig(server_command=[sys.executable, "-m", "adl", "lsp"])
WAIT = 120  # seconds before a test that gets no answer fails instead of hanging


async def initialize(client: LanguageClient) -> types.InitializeResult:
    return await client.initialize_session(
        types.InitializeParams(capabilities=client_capabilities("visual-studio-code"))
    )


class Editor:
    """Opens, edits and reads documents through the client, as an editor would."""

    def __init__(self, client: LanguageClient):
        self.client = client
        self.versions: dict[str, int] = {}

    def open(self, path: Path, text: str | None = None) -> str:
        uri = path.as_uri()
        self.client.diagnostics.pop(uri, None)
        self.versions[uri] = 1
        self.client.text_document_did_open(
            types.DidOpenTextDocumentParams(
                types.TextDocumentItem(uri, "adl", 1, path.read_text() if text is None else text)
            )
        )
        return uri

    def change(self, uri: str, text: str) -> None:
        self.client.diagnostics.pop(uri, None)
        self.versions[uri] += 1
        self.client.text_document_did_change(
            types.DidChangeTextDocumentParams(
                types.VersionedTextDocumentIdentifier(uri=uri, version=self.versions[uri]),
                [types.TextDocumentContentChangeWholeDocument(text=text)],
            )
        )

    def close(self, uri: str) -> None:
        self.client.text_document_did_close(
            types.DidCloseTextDocumentParams(text_document=types.TextDocumentIdentifier(uri=uri))
        )

    async def diagnostics(self, uri: str) -> list[types.Diagnostic]:
        """The diagnostics published for ``uri`` since it was last opened or changed."""

        async def wait() -> None:
            while uri not in self.client.diagnostics:
                await self.client.wait_for_notification(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)

        await asyncio.wait_for(wait(), WAIT)
        return list(self.client.diagnostics.pop(uri))

    async def check(
        self, path: Path, text: str | None = None
    ) -> tuple[str, list[types.Diagnostic]]:
        """Open a file and wait for its diagnostics: (its URI, them)."""
        uri = self.open(path, text)
        return uri, await self.diagnostics(uri)

    async def hover(self, uri: str, position: types.Position) -> types.Hover | None:
        return await self.client.text_document_hover_async(
            types.HoverParams(self.doc(uri), position)
        )

    def doc(self, uri: str) -> types.TextDocumentIdentifier:
        return types.TextDocumentIdentifier(uri=uri)


@dataclass(frozen=True)
class Printed:
    """One diagnostic as ``adl compile --check`` prints it."""

    severity: str
    line: int  # from 1
    column: int  # from 1
    width: int  # the carets under it
    message: str
    hint: str | None


_HEAD = re.compile(
    r"^(?P<file>.+?):(?P<line>\d+):(?P<col>\d+): (?P<sev>error|warning): (?P<msg>.*)$"
)


def printed(stderr: str) -> list[Printed]:
    """The located diagnostics of the command's output (notes and excerpts read along)."""
    lines = stderr.splitlines()
    found = []
    for i, line in enumerate(lines):
        m = _HEAD.match(line)
        if m is None:
            continue
        carets = lines[i + 2] if i + 2 < len(lines) else ""
        width = carets.count("^")
        hint = None
        for later in lines[i + 1 :]:
            if _HEAD.match(later):
                break
            if later.startswith("hint: "):
                hint = later[len("hint: ") :]
        found.append(Printed(m["sev"], int(m["line"]), int(m["col"]), width, m["msg"], hint))
    return found


def as_printed(severity: str, line: int, column: int, end_column: int, text: str) -> Printed:
    """A diagnostic an editor received (line and columns from 0, on one line) in the
    command's terms: its text is the message, then ``hint: ...``."""
    message, _, hint = text.partition("\nhint: ")
    width = max(1, end_column - column)  # the command underlines an empty span with one ^
    return Printed(severity, line + 1, column + 1, width, message, hint or None)


def lsp_printed(d: types.Diagnostic) -> Printed:
    """An LSP diagnostic in the command's terms."""
    severity = "error" if d.severity == types.DiagnosticSeverity.Error else "warning"
    start, end = d.range.start, d.range.end
    return as_printed(severity, start.line, start.character, end.character, d.message)
