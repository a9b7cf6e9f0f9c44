"""``adl lsp``: the language server for ``.adl`` files (pygls, over stdio).

This module is the wiring: LSP requests in, the pure functions of the other modules of
:mod:`adl.lsp` called, LSP answers out. Checks run one at a time in a worker thread, so
the server keeps answering while a large text is checked; a check is bounded by the
checker's limits (:mod:`adl.limits`), and an edit waits :data:`DEBOUNCE` seconds for the
next before the file is checked again. Each check is kept for its document's version:
hover, go to definition, references and symbols read it rather than check again (all but
symbols work on a file with a syntax error too, from its tokens; completion reads the text).
"""

from __future__ import annotations

import asyncio
import logging
import sys
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from lsprotocol import types
from pygls.lsp.server import LanguageServer
from pygls.uris import from_fs_path, to_fs_path

from ..errors import ADLError
from ..registry import DECODER, ENCODER, REGISTRY
from ..roles import role_from_name, stem
from ..source import Source, Span
from .checking import Checked, check_text, encoder_of
from .completion import complete
from .diagnostics import to_lsp, to_range
from .formatting import format_text
from .hover import hover
from .occurrences import at, declaration, references
from .positions import UTF16, LineIndex
from .settings import Settings, SettingsFinder
from .symbols import outline

DEBOUNCE = 0.2  # seconds an edit waits for the next one before the file is checked
log = logging.getLogger(__name__)

COMPLETION_KINDS = {
    "layer": types.CompletionItemKind.Function,
    "block": types.CompletionItemKind.Module,
    "param": types.CompletionItemKind.Variable,
    "keyword": types.CompletionItemKind.Property,
    "var": types.CompletionItemKind.Variable,
}
SYMBOL_KINDS = {
    "variable": types.SymbolKind.Variable,
    "block": types.SymbolKind.Function,
    "network": types.SymbolKind.Module,
}


@dataclass
class _Check:
    version: int | None
    future: asyncio.Future[Checked]


class AdlServer(LanguageServer):
    """The documents' checks, and the settings of their files."""

    def __init__(self) -> None:
        from importlib.metadata import version

        super().__init__(
            "adl", version("adl"), text_document_sync_kind=types.TextDocumentSyncKind.Full
        )
        self.finder = SettingsFinder()
        self.worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="adl-check")
        self.checks: dict[str, _Check] = {}
        self.publishing: dict[str, asyncio.Task[None]] = {}

    # --- names and positions -------------------------------------------------------------
    def name_of(self, uri: str) -> str:
        """The name a document's text is checked under: its path (which gives its role)."""
        return to_fs_path(uri) or uri

    def uri_of(self, name: str) -> str:
        for uri in self.workspace.text_documents:
            if self.name_of(uri) == name:
                return uri
        return (from_fs_path(name) or name) if Path(name).is_absolute() else name

    def index(self, text: str) -> LineIndex:
        encoding = self.workspace.position_encoding or UTF16
        return LineIndex(text, str(getattr(encoding, "value", encoding)))

    def offset(self, text: str, position: types.Position) -> int:
        return self.index(text).offset(position.line, position.character)

    # --- checking --------------------------------------------------------------------------
    def current(self, uri: str) -> asyncio.Future[Checked]:
        """The check of the document as it is now (started if none is)."""
        document = self.workspace.get_text_document(uri)
        known = self.checks.get(uri)
        if known is None or known.version != document.version or document.version is None:
            texts = {
                Path(self.name_of(u)): d.source
                for u, d in self.workspace.text_documents.items()
                if to_fs_path(u)
            }
            loop = asyncio.get_running_loop()
            future = loop.run_in_executor(
                self.worker, self.check, self.name_of(uri), document.source, texts
            )
            known = self.checks[uri] = _Check(document.version, future)
        return asyncio.shield(known.future)

    def check(self, name: str, text: str, texts: dict[Path, str]) -> Checked:
        """Runs in the worker: the settings of the file, its encoder, the check."""
        path = Path(name) if Path(name).is_absolute() else None
        settings = self.finder.settings(path) if path is not None else Settings()
        encoder: Source | Path | None = None
        if path is not None:
            found = encoder_of(path, settings, lambda p: p in texts or p.is_file())
            if found is not None:
                encoder = Source(texts[found], str(found)) if found in texts else found
        return check_text(Source(text, name), settings, encoder)

    def schedule(self, uri: str, delay: float) -> None:
        """Publish the document's diagnostics after ``delay`` seconds (an earlier pending
        publication is dropped)."""
        pending = self.publishing.pop(uri, None)
        if pending is not None:
            pending.cancel()
        self.publishing[uri] = asyncio.get_running_loop().create_task(self.publish(uri, delay))

    async def publish(self, uri: str, delay: float) -> None:
        await asyncio.sleep(delay)
        if uri not in self.workspace.text_documents:
            return
        version = self.workspace.get_text_document(uri).version
        try:
            checked = await self.current(uri)
        except Exception as exc:  # a bug of the checker must not end the server
            log.exception("checking %s failed", uri)
            self.window_log_message(
                types.LogMessageParams(
                    type=types.MessageType.Error, message=f"adl: checking {uri}: {exc!r}"
                )
            )
            return
        document = self.workspace.text_documents.get(uri)
        if document is None or document.version != version:
            return  # closed, or changed since: a newer publication follows
        index = self.index(document.source)
        diagnostics = [to_lsp(d, index, uri, self.uri_of) for d in checked.diagnostics]
        self.text_document_publish_diagnostics(
            types.PublishDiagnosticsParams(uri=uri, diagnostics=diagnostics, version=version)
        )

    def changed(self, uri: str, delay: float, itself: bool = True) -> None:
        """The document changed: check it (``itself``), and the open decoders that read it."""
        if itself:
            self.checks.pop(uri, None)
            self.schedule(uri, delay)
        name = self.name_of(uri)
        for other in list(self.workspace.text_documents):
            if other != uri and self._reads(other, name):
                self.checks.pop(other, None)
                self.schedule(other, delay)

    def last(self, uri: str) -> Checked | None:
        """The document's last finished check, if it has one (perhaps of an older text)."""
        known = self.checks.get(uri)
        if known is None or not known.future.done() or known.future.exception() is not None:
            return None
        return known.future.result()

    def _reads(self, uri: str, encoder: str) -> bool:
        """Whether the open document ``uri`` is a decoder checked with ``encoder``."""
        last = self.last(uri)
        if last is not None and last.encoder == encoder:
            return True
        name = self.name_of(uri)
        return (
            role_from_name(name) == DECODER
            and role_from_name(encoder) == ENCODER
            and Path(name).parent == Path(encoder).parent
            and stem(name) == stem(encoder)
        )


def make_server() -> AdlServer:
    server = AdlServer()

    @server.feature(types.TEXT_DOCUMENT_DID_OPEN)
    def did_open(ls: AdlServer, params: types.DidOpenTextDocumentParams) -> None:
        ls.changed(params.text_document.uri, 0)

    @server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
    def did_change(ls: AdlServer, params: types.DidChangeTextDocumentParams) -> None:
        ls.changed(params.text_document.uri, DEBOUNCE)

    @server.feature(types.TEXT_DOCUMENT_DID_SAVE)
    def did_save(ls: AdlServer, params: types.DidSaveTextDocumentParams) -> None:
        ls.changed(params.text_document.uri, 0)  # a sweep spec or the encoder on disk may differ

    @server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(ls: AdlServer, params: types.DidCloseTextDocumentParams) -> None:
        uri = params.text_document.uri
        ls.checks.pop(uri, None)
        pending = ls.publishing.pop(uri, None)
        if pending is not None:
            pending.cancel()
        ls.text_document_publish_diagnostics(
            types.PublishDiagnosticsParams(uri=uri, diagnostics=[])
        )
        ls.changed(uri, 0, itself=False)  # its decoders read it from disk now

    @server.feature(types.TEXT_DOCUMENT_HOVER)
    async def on_hover(ls: AdlServer, params: types.HoverParams) -> types.Hover | None:
        checked = await ls.current(params.text_document.uri)
        text = checked.source.text
        found = hover(
            checked.declared,
            checked.names,
            ls.offset(text, params.position),
            checked.program,
            checked.settings,
            checked.space,
        )
        if found is None:
            return None
        markdown, span = found
        return types.Hover(
            types.MarkupContent(kind=types.MarkupKind.Markdown, value=markdown),
            to_range(ls.index(text), span),
        )

    @server.feature(
        types.TEXT_DOCUMENT_COMPLETION,
        types.CompletionOptions(trigger_characters=["(", ",", "$", ">", "="]),
    )
    def on_completion(ls: AdlServer, params: types.CompletionParams) -> types.CompletionList:
        uri = params.text_document.uri
        text = ls.workspace.get_text_document(uri).source
        offset = ls.offset(text, params.position)
        last = ls.last(uri)  # completion never waits for a check
        settings = last.settings if last is not None else Settings()
        start, items = complete(text, offset, [name for name, _ in settings.vars])
        edit_range = to_range(ls.index(text), Span(start, offset))
        return types.CompletionList(
            is_incomplete=False,
            items=[
                types.CompletionItem(
                    label=item.label,
                    kind=COMPLETION_KINDS[item.kind],
                    detail=item.detail or None,
                    documentation=item.documentation or None,
                    text_edit=types.TextEdit(range=edit_range, new_text=item.insert or item.label),
                )
                for item in items
            ],
        )

    @server.feature(types.TEXT_DOCUMENT_DEFINITION)
    async def on_definition(ls: AdlServer, params: types.DefinitionParams) -> types.Location | None:
        checked = await ls.current(params.text_document.uri)
        name = at(checked.names, ls.offset(checked.source.text, params.position))
        target = declaration(checked.names, name) if name is not None else None
        if target is None:
            return None
        index = ls.index(checked.source.text)
        return types.Location(uri=params.text_document.uri, range=to_range(index, target.span))

    @server.feature(types.TEXT_DOCUMENT_REFERENCES)
    async def on_references(
        ls: AdlServer, params: types.ReferenceParams
    ) -> list[types.Location] | None:
        checked = await ls.current(params.text_document.uri)
        name = at(checked.names, ls.offset(checked.source.text, params.position))
        if name is None:
            return None
        index = ls.index(checked.source.text)
        found = references(checked.names, name, params.context.include_declaration)
        return [
            types.Location(uri=params.text_document.uri, range=to_range(index, o.span))
            for o in found
        ]

    @server.feature(types.TEXT_DOCUMENT_DOCUMENT_SYMBOL)
    async def on_symbols(
        ls: AdlServer, params: types.DocumentSymbolParams
    ) -> list[types.DocumentSymbol] | None:
        checked = await ls.current(params.text_document.uri)
        if checked.tree is None:
            return None
        index = ls.index(checked.source.text)
        return [
            types.DocumentSymbol(
                name=s.name,
                kind=SYMBOL_KINDS[s.kind],
                range=to_range(index, s.span),
                selection_range=to_range(index, s.name_span),
                detail=s.detail or None,
            )
            for s in outline(checked.tree, checked.source.name)
        ]

    @server.feature(types.TEXT_DOCUMENT_FORMATTING)
    async def on_format(
        ls: AdlServer, params: types.DocumentFormattingParams
    ) -> list[types.TextEdit] | None:
        uri = params.text_document.uri
        text = ls.workspace.get_text_document(uri).source
        loop = asyncio.get_running_loop()
        try:
            formatted = await loop.run_in_executor(ls.worker, format_text, text, ls.name_of(uri))
        except ADLError:  # the text does not parse: its diagnostics say why
            return None
        if formatted == text:
            return []
        index = ls.index(text)
        return [types.TextEdit(range=to_range(index, Span(0, len(text))), new_text=formatted)]

    return server


def serve(log_file: str | None = None) -> None:
    """Serve over stdin and stdout until the client says exit. Anything else written to
    ``sys.stdout`` meanwhile goes to stderr, so that it cannot break the protocol."""
    if log_file:
        logging.basicConfig(filename=log_file, level=logging.DEBUG)
    try:
        REGISTRY.names()  # load the layers (and plugins) once, before any thread needs them
    except Exception:  # a broken plugin: every check will say so
        log.exception("the layer registry did not load")
    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    saved, sys.stdout = sys.stdout, sys.stderr
    try:
        make_server().start_io(stdin, stdout)
    finally:
        sys.stdout = saved
