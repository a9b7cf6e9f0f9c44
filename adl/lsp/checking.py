"""Checking an editor's file as ``adl compile --check`` checks it.

A space of programs (a text with choices) is checked as ``adl compile --check`` checks one,
alone. A decoder file (``x.dec.adl``) is checked with its encoder, when there is one: the open
``x.enc.adl`` (its unsaved text), else that file on disk, else the encoder a sweep spec
pairs it with. Both go through :func:`adl.batch.check_files`, the function
``adl compile --check ENC DEC`` calls, with the model settings of
:mod:`adl.lsp.settings`; so the editor's diagnostics are the command's, message, span and
hint. An encoder is checked alone (a decoder never changes its diagnostics).

Its names (hover, go to definition, references) come from the syntax tree, or, while the
text does not parse, from its tokens (:mod:`adl.lsp.tokens`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ..analysis.program import Program
from ..analysis.space import is_space
from ..analysis.spacecheck import CheckedSpace
from ..api import check_space
from ..batch import check_files
from ..errors import ADLError, Diagnostic
from ..registry import DECODER, ENCODER
from ..roles import role_from_name, stem
from ..source import Source
from ..syntax import ast
from ..syntax.parser import parse_source
from . import tokens
from .hover import Declared
from .occurrences import Occurrence, occurrences
from .settings import Settings

ROLE_SUFFIXES = {ENCODER: (".enc.adl", ".encoder.adl"), DECODER: (".dec.adl", ".decoder.adl")}


@dataclass
class Checked:
    """One check of one text: the checker's result and what the editor features read."""

    source: Source
    settings: Settings
    result: Program | CheckedSpace | ADLError
    encoder: str | None = None  # the name of the encoder file it was checked with
    tree: ast.File | None = None  # None: the text does not parse
    names: list[Occurrence] = field(default_factory=list)  # of the tree, else of the tokens
    declared: Declared = field(default_factory=Declared)  # likewise

    @property
    def program(self) -> Program | None:
        return self.result if isinstance(self.result, Program) else None

    @property
    def space(self) -> CheckedSpace | None:
        """A space of programs (a text with choices), checked."""
        return self.result if isinstance(self.result, CheckedSpace) else None

    @property
    def diagnostics(self) -> list[Diagnostic]:
        """What ``adl compile --check`` prints for the file: its errors, or its warnings."""
        if isinstance(self.result, ADLError):
            return self.result.diagnostics
        if isinstance(self.result, CheckedSpace):
            return self.result.diagnostics()
        return self.result.warnings


def check_text(source: Source, settings: Settings, encoder: Source | Path | None = None) -> Checked:
    """Check ``source`` (with ``encoder`` before it, for a decoder) and index its names."""
    files: Sequence[Source | Path] = [source] if encoder is None else [encoder, source]
    result: Program | CheckedSpace | ADLError
    if _space(source):  # checked alone, as adl compile --check checks a space
        try:
            result = check_space(source, **settings.options())
        except ADLError as exc:
            result = exc
        encoder = None
    else:
        result = check_files(files, **settings.options())[-1]
    checked = Checked(source, settings, result, _name(encoder) if encoder else None)
    if not isinstance(result, ADLError):
        checked.tree = result.tree
    else:
        try:
            checked.tree = parse_source(source)
        except ADLError:
            pass
    if checked.tree is not None:
        checked.names, checked.declared = occurrences(checked.tree), Declared.of(checked.tree)
    else:  # a syntax error: the names as the tokens give them (hover, definitions go on)
        checked.names, checked.declared = (
            tokens.occurrences(source.text),
            tokens.declared(source.text),
        )
    return checked


def _space(source: Source) -> bool:
    try:
        return is_space(parse_source(source))
    except ADLError:
        return False


def encoder_of(path: Path, settings: Settings, exists: Callable[[Path], bool]) -> Path | None:
    """A decoder file's encoder: ``x.enc.adl`` (or ``x.encoder.adl``) beside ``x.dec.adl``
    when ``exists`` says it is there (open or on disk), else the sweep's partner."""
    if role_from_name(path) != DECODER:
        return None
    for suffix in ROLE_SUFFIXES[ENCODER]:
        candidate = path.with_name(stem(path) + suffix)
        if exists(candidate):
            return candidate
    partner = settings.partner
    if partner is not None and role_from_name(partner) == ENCODER and exists(partner):
        return partner
    return None


def _name(file: Source | Path) -> str:
    return file.name if isinstance(file, Source) else str(file)
