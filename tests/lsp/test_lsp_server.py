"""``adl lsp`` end to end: a real LSP client (pytest-lsp) talks to the server over stdio.

Diagnostics are compared with what ``adl compile --check`` prints for the same files;
hover, completion, definitions, references, symbols and formatting are read back as an
editor reads them; bad input gets diagnostics and leaves the server answering."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
import pytest_lsp
from conftest import ROOT, run_cli
from lsp_helpers import SERVER, Editor, initialize, lsp_printed, printed
from lsprotocol import types
from pytest_lsp import LanguageClient

from adl.limits import MAX_SOURCE_CHARS
from adl.lsp.formatting import format_text

pytestmark = pytest.mark.asyncio(loop_scope="module")


ANSWERS: list[types.InitializeResult] = []  # the server's answer to initialize


@pytest_lsp.fixture(scope="module", config=SERVER)
async def client(lsp_client: LanguageClient):
    ANSWERS.append(await initialize(lsp_client))
    yield
    await lsp_client.shutdown_session()


@pytest.fixture
def editor(client: LanguageClient) -> Editor:
    return Editor(client)


def write(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
    return path


def at_offset(text: str, offset: int) -> types.Position:
    line = text.count("\n", 0, offset)
    return types.Position(line, offset - (text.rfind("\n", 0, offset) + 1))


def position(text: str, needle: str, after: int = 0) -> types.Position:
    """The position of the first ``needle`` in ``text`` (plus ``after`` characters)."""
    return at_offset(text, text.index(needle) + after)


async def test_initialize_answers_with_the_features(client: LanguageClient):
    [answer] = ANSWERS
    assert answer.server_info is not None and answer.server_info.name == "adl"
    caps = answer.capabilities
    assert caps.hover_provider and caps.definition_provider and caps.references_provider
    assert caps.document_symbol_provider and caps.document_formatting_provider
    assert caps.completion_provider is not None
    assert "(" in (caps.completion_provider.trigger_characters or [])


async def test_diagnostics_are_those_of_adl_compile_check(editor: Editor, tmp_path: Path):
    path = write(
        tmp_path,
        "bad.enc.adl",
        """
        # two errors, one of them inside a block used twice, and a warning-free rest
        sub(f) = res_nd(f) -> res_nd(fft)
        pos -> repeat(6, sub(mh_dot_self_att(heads=7)) -> sub(cnn)) -> norm
        """,
    )
    code, _, err = run_cli("compile", "--check", str(path))
    assert code == 1
    expected = printed(err)
    assert len(expected) >= 2 and any(p.hint for p in expected)
    uri = editor.open(path)
    got = await editor.diagnostics(uri)
    assert [lsp_printed(d) for d in got] == expected
    blocks = [d for d in got if d.related_information]
    assert blocks and "in block 'sub', used here" in blocks[0].related_information[0].message


async def test_unsaved_text_is_checked_and_a_fix_clears_the_diagnostics(
    editor: Editor, tmp_path: Path
):
    path = write(tmp_path, "t.enc.adl", "pos -> repeat(6, res_nd(mh_dot_self_att)) -> norm\n")
    uri = editor.open(path, "pos -> repeat(6, res_nd(mh_dot_sef_att)) -> norm\n")
    [d] = await editor.diagnostics(uri)
    assert d.message == "unknown layer 'mh_dot_sef_att'\nhint: did you mean 'mh_dot_self_att'?"
    assert (d.range.start.line, d.range.start.character, d.range.end.character) == (0, 24, 38)
    editor.change(uri, path.read_text())
    assert await editor.diagnostics(uri) == []


async def test_warnings_are_published_as_warnings(editor: Editor, tmp_path: Path):
    path = write(tmp_path, "w.enc.adl", "unused = ffl\npos -> ffl\n")
    code, _, err = run_cli("compile", "--check", str(path))
    assert code == 0
    uri = editor.open(path)
    got = await editor.diagnostics(uri)
    assert [lsp_printed(d) for d in got] == printed(err)
    assert got[0].severity == types.DiagnosticSeverity.Warning


async def test_a_decoder_is_checked_with_its_encoder_on_disk_or_open(
    editor: Editor, tmp_path: Path
):
    enc = write(tmp_path, "m.enc.adl", "pos -> repeat(6, res_nd(mh_dot_self_att)) -> norm\n")
    dec = write(
        tmp_path,
        "m.dec.adl",
        "pos -> repeat(2, res_nd(mh_dot_src_att(encoder_block=4)) -> res_nd(ffl)) -> norm\n",
    )
    alone = run_cli("compile", "--check", str(dec))
    assert alone[0] == 0  # alone, any encoder_block may exist
    dec_uri = editor.open(dec)
    assert await editor.diagnostics(dec_uri) == []  # the encoder on disk has 6 blocks

    enc_uri = editor.open(enc, "pos -> repeat(3, res_nd(mh_dot_self_att)) -> norm\n")
    assert await editor.diagnostics(enc_uri) == []
    [d] = await editor.diagnostics(dec_uri)  # checked again with the unsaved encoder
    enc.write_text("pos -> repeat(3, res_nd(mh_dot_self_att)) -> norm\n")
    code, _, err = run_cli("compile", "--check", str(enc), str(dec))
    assert code == 1
    assert [lsp_printed(d)] == printed(err)
    assert "the encoder has 3 blocks" in d.message
    assert d.related_information is not None
    assert d.related_information[0].location.uri == enc_uri

    editor.change(enc_uri, "pos -> repeat(4, res_nd(mh_dot_self_att)) -> norm\n")
    await editor.diagnostics(enc_uri)
    assert await editor.diagnostics(dec_uri) == []  # block 4 exists now
    editor.close(enc_uri)
    [d] = await editor.diagnostics(dec_uri)  # the encoder on disk again: 3 blocks
    assert "the encoder has 3 blocks" in d.message
    editor.close(dec_uri)


async def test_variables_come_from_a_sweep_spec_that_names_the_file(editor: Editor, tmp_path: Path):
    enc = write(tmp_path, "v.enc.adl", "pos -> repeat($layers, res_nd(ffl($ff))) -> norm\n")
    dec = write(
        tmp_path,
        "v.dec.adl",
        "pos -> repeat($layers, res_nd(mh_dot_src_att) -> res_nd(ffl($ff))) -> norm\n",
    )
    uri = editor.open(enc)
    got = await editor.diagnostics(uri)  # no spec yet: $layers is not set
    assert any(d.message.startswith("unknown variable '$layers'") for d in got)
    editor.close(uri)
    write(
        tmp_path,
        "exp.yaml",
        f"""
        preset: tiny
        vars: {{layers: 3, ff: 96}}
        baseline: A
        systems:
          - name: A
            files: [{enc}, {dec}]
        """,
    )
    uri, found = await editor.check(enc)
    assert found == []
    hover = await editor.hover(uri, position(enc.read_text(), "$ff", 1))
    assert hover is not None
    assert "`$ff` = 96" in hover.contents.value and "exp.yaml" in hover.contents.value
    bad = "pos -> repeat($layers, res_nd(ffl($ff)) -> res_nd(mh_dot_self_att(heads=5))) -> norm\n"
    enc.write_text(bad)
    code, _, err = run_cli(
        "compile", "--check", "--preset", "tiny", "--var", "layers=3", "--var", "ff=96", str(enc)
    )
    assert code == 1 and "5 heads do not divide the attention size 64" in err
    editor.change(uri, bad)
    assert [lsp_printed(d) for d in await editor.diagnostics(uri)] == printed(err)
    editor.close(uri)


async def test_hover_on_a_layer_shows_its_reference_and_sizes(editor: Editor, tmp_path: Path):
    text = "pos -> repeat(6, res_nd(mh_dot_self_att) -> res_nd(ffl(2048))) -> norm\n"
    path = write(tmp_path, "h.enc.adl", text)
    uri, _ = await editor.check(path)
    hover = await editor.hover(uri, position(text, "mh_dot_self_att", 3))
    assert hover is not None and isinstance(hover.contents, types.MarkupContent)
    shown = hover.contents.value
    language = (ROOT / "docs" / "language.md").read_text()
    section = shown.split("\n\nHere, at")[0]
    assert section.startswith("#### `mh_dot_self_att`") and section in language
    assert "encoder: 512 → 512, 1,050,624 parameters" in shown
    assert hover.range == types.Range(position(text, "mh_dot"), position(text, "mh_dot", 15))

    hover = await editor.hover(uri, position(text, "ffl"))
    assert hover is not None and "encoder: 512 → 512, 2,099,712 parameters" in hover.contents.value
    editor.close(uri)


async def test_hover_and_definitions_work_while_a_parenthesis_is_left_open(
    editor: Editor, tmp_path: Path
):
    text = "t_enc = res_nd(mh_dot_self_att) -> res_nd(ffl)\npos -> repeat(6, t_enc -> norm\n"
    path = write(tmp_path, "u.enc.adl", text)
    uri, found = await editor.check(path)
    assert found and found[0].severity == types.DiagnosticSeverity.Error  # the syntax error
    hover = await editor.hover(uri, position(text, "mh_dot_self_att", 3))
    assert hover is not None and isinstance(hover.contents, types.MarkupContent)
    section = hover.contents.value.split("\n\nSizes here")[0]
    assert section.startswith("#### `mh_dot_self_att`")
    assert section in (ROOT / "docs" / "language.md").read_text()
    assert "not known while the file has errors" in hover.contents.value
    assert hover.range == types.Range(position(text, "mh_dot"), position(text, "mh_dot", 15))
    target = await editor.client.text_document_definition_async(
        types.DefinitionParams(editor.doc(uri), position(text, "t_enc ->"))
    )
    assert isinstance(target, types.Location)
    assert target.range == types.Range(position(text, "t_enc ="), position(text, "t_enc =", 5))
    editor.close(uri)


async def test_completion_after_res_nd_offers_layers(editor: Editor, tmp_path: Path):
    text = "my_block = res_nd(ffl)\npos -> res_nd("
    path = write(tmp_path, "c.enc.adl", "")
    uri = editor.open(path, text)
    await editor.diagnostics(uri)  # a half-typed file: an error, and a live server
    end = types.Position(1, len("pos -> res_nd("))
    result = await editor.client.text_document_completion_async(
        types.CompletionParams(editor.doc(uri), end)
    )
    assert result is not None
    items = {
        i.label: i for i in (result.items if isinstance(result, types.CompletionList) else result)
    }
    assert {"mh_dot_self_att", "ffl", "cnn", "rnn", "my_block"} <= set(items)
    assert items["ffl"].kind == types.CompletionItemKind.Function
    assert items["ffl"].documentation  # the registry's one-line summary
    assert items["my_block"].kind == types.CompletionItemKind.Module

    editor.change(uri, "pos -> mh_dot_self_att(heads=4, ")
    await editor.diagnostics(uri)
    result = await editor.client.text_document_completion_async(
        types.CompletionParams(
            editor.doc(uri), types.Position(0, len("pos -> mh_dot_self_att(heads=4, "))
        )
    )
    labels = {
        i.label for i in (result.items if isinstance(result, types.CompletionList) else result)
    }
    assert "dropout=" in labels and "heads=" not in labels
    editor.close(uri)


async def test_definition_references_and_symbols_of_blocks(editor: Editor, tmp_path: Path):
    text = (
        "$n = 2\n"
        "sub(f) = res_nd(f)\n"
        "t_enc = sub(mh_dot_self_att) -> sub(ffl)\n"
        "pos -> repeat($n, t_enc) -> norm\n"
    )
    path = write(tmp_path, "d.enc.adl", text)
    uri, found = await editor.check(path)
    assert found == []
    found = await editor.client.text_document_definition_async(
        types.DefinitionParams(editor.doc(uri), position(text, "t_enc)"))
    )
    assert isinstance(found, types.Location)
    assert found.range == types.Range(position(text, "t_enc ="), position(text, "t_enc =", 5))

    refs = await editor.client.text_document_references_async(
        types.ReferenceParams(
            context=types.ReferenceContext(include_declaration=True),
            text_document=editor.doc(uri),
            position=position(text, "sub("),
        )
    )
    assert refs is not None
    uses = [i for i in range(len(text)) if text.startswith("sub(", i)]
    assert [r.range.start for r in refs] == [at_offset(text, i) for i in uses]

    symbols = await editor.client.text_document_document_symbol_async(
        types.DocumentSymbolParams(editor.doc(uri))
    )
    assert symbols is not None
    assert [(s.name, s.kind) for s in symbols] == [  # type: ignore[union-attr]
        ("$n", types.SymbolKind.Variable),
        ("sub", types.SymbolKind.Function),
        ("t_enc", types.SymbolKind.Function),
        ("encoder", types.SymbolKind.Module),
    ]
    editor.close(uri)


async def test_formatting_is_the_printers(editor: Editor, tmp_path: Path):
    text = "# keep me\nt   =   res_nd( ffl )->norm   # and me\npos->repeat(2,t)\n"
    path = write(tmp_path, "f.enc.adl", text)
    uri, _ = await editor.check(path)
    edits = await editor.client.text_document_formatting_async(
        types.DocumentFormattingParams(editor.doc(uri), types.FormattingOptions(4, True))
    )
    assert edits is not None and len(edits) == 1
    assert edits[0].new_text == format_text(text)
    assert (
        edits[0].new_text == "# keep me\nt = res_nd(ffl) -> norm   # and me\npos -> repeat(2, t)\n"
    )
    assert run_cli("fmt", "--check", str(path))[0] == 1
    editor.close(uri)


@pytest.mark.parametrize(
    "text, message",
    [
        ("pos -> repeat(6, res_nd(", "unclosed '('"),
        ("pos -> repeat(10^12, ffl)", "unexpected character '^'"),
        ("pos -> repeat(1000000000000, res_nd(ffl))", "argument 'count' of 'repeat'"),
        ("pos -> ffl # " + "x" * (1 << 20), f"more than the limit of {MAX_SOURCE_CHARS:,}"),
        (
            "\n".join(
                [f"b{i} = b{i + 1} -> b{i + 1}" for i in range(40)] + ["b40 = ffl", "pos -> b0"]
            ),
            "more than 10,000 layers",
        ),
    ],
    ids=["half-typed", "caret", "huge-repeat", "1MB", "doubling-blocks"],
)
async def test_bad_input_gets_diagnostics_and_the_server_lives(
    editor: Editor, tmp_path: Path, text: str, message: str
):
    path = tmp_path / "bad.enc.adl"
    uri = editor.open(path, text)
    got = await editor.diagnostics(uri)
    assert any(message in d.message for d in got), [d.message for d in got]
    symbols = await editor.client.text_document_document_symbol_async(
        types.DocumentSymbolParams(editor.doc(uri))
    )
    assert symbols is None or isinstance(symbols, list)  # an answer: the server is alive
    editor.close(uri)
