"""The pair of spaces a search walks: the decisions Optuna makes (one parameter per choice a
program reaches, named by the space and the choice's place: ``enc 3:18``), the program they
make (an encoder and a decoder text), its key, its configuration and its check.

A range ``{2..6}`` is an integer parameter (TPE reads its order); any other choice is a
categorical one over its options' texts. Parameters are asked only for the choices a program
reaches (Optuna's define-by-run spaces), so a nested choice is a decision only where its
option is taken.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from adl.analysis import space
from adl.api import parse
from adl.batch import check_files
from adl.errors import ADLError
from adl.registry import DECODER, ENCODER
from adl.runtime.config import Config
from adl.runtime.search.spec import SearchError, Spec
from adl.source import Source
from adl.syntax import ast
from adl.syntax.printer import to_text

SIDES = (("enc", ENCODER), ("dec", DECODER))


@dataclass(frozen=True)
class Program:
    """One program of the pair of spaces: its two texts and its picks (parameters)."""

    encoder: str
    decoder: str
    params: dict[str, Any]

    @property
    def key(self) -> str:
        """Equal texts, equal keys: the name of the program's run folder."""
        text = self.encoder + "\0" + self.decoder
        return hashlib.sha256(text.encode("utf-8")).hexdigest()[:12]

    def write(self, folder: Path) -> tuple[Path, Path]:
        """The program's files in its run folder: ``enc.adl`` and ``dec.adl``."""
        folder.mkdir(parents=True, exist_ok=True)
        enc, dec = folder / "enc.adl", folder / "dec.adl"
        for path, text in ((enc, self.encoder), (dec, self.decoder)):
            if not path.is_file() or path.read_text(encoding="utf-8") != text:
                path.write_text(text, encoding="utf-8")
        return enc, dec


class Spaces:
    """The encoder and decoder spaces of a spec, parsed."""

    def __init__(self, spec: Spec, given: dict[str, Any] | None = None):
        self.sources = {
            "enc": Source(spec.encoder, spec.encoder_name),
            "dec": Source(spec.decoder, spec.decoder_name),
        }
        self.given = given or {}
        try:
            self.trees = {side: parse(src) for side, src in self.sources.items()}
        except ADLError as exc:
            raise SearchError(f"a space does not parse:\n{exc.render()}") from None

    @property
    def size(self) -> int:
        """Programs in the pair: the product of the spaces' sizes."""
        return space.count(self.trees["enc"], self.given) * space.count(
            self.trees["dec"], self.given
        )

    def suggest(self, trial: Any) -> Program:
        """The program an Optuna trial picks (a fixed or retried trial replays its
        parameters)."""
        texts = {}
        for side, _ in SIDES:
            source = self.sources[side]
            pick = lambda c, s=side, src=source: _suggest(trial, f"{s} {space.where(src, c)}", c)
            member, _ = space.resolve(self.trees[side], pick, self.given)
            texts[side] = to_text(member)
        return Program(texts["enc"], texts["dec"], dict(trial.params))

    def first(self) -> Program:
        """The program that takes the first option of every choice."""
        texts = {
            side: to_text(space.resolve(self.trees[side], lambda c: 0, self.given)[0])
            for side, _ in SIDES
        }
        return Program(texts["enc"], texts["dec"], {})


def _suggest(trial: Any, name: str, choice: ast.Choice) -> int:
    if choice.range is not None:
        low, high = choice.range
        return int(trial.suggest_int(name, low, high)) - low
    labels = [to_text(o) for o in choice.options]
    return labels.index(trial.suggest_categorical(name, labels))


def _options(config: Config) -> dict[str, Any]:
    m = config.model
    return dict(d_model=m.d_model, heads=m.heads, dropout=m.dropout, vars=dict(m.vars or {}))


def check_program(program: Program, config: Config) -> str | None:
    """Why a program cannot train at the search's sizes (None: it can): the compiler's
    first error, the encoder and the decoder checked together as ``adl compile`` checks
    them."""
    results = check_files(
        [Source(program.encoder, "program.enc.adl"), Source(program.decoder, "program.dec.adl")],
        **_options(config),
    )
    for result in results:
        if isinstance(result, ADLError):
            first = result.errors[0] if result.errors else result.diagnostics[0]
            return first.render().splitlines()[0]
    return None


def structure(encoder: str, decoder: str, config: Config) -> str | None:
    """A key of what a pair of texts builds at the search's sizes (the layers, their
    arguments with defaults filled, sizes and repeats), equal for texts that build the same
    model however they are written (blocks, variables); None when they do not check."""
    results = check_files(
        [Source(encoder, "e.enc.adl"), Source(decoder, "d.dec.adl")], **_options(config)
    )
    parts = []
    for result in results:
        if isinstance(result, ADLError):
            return None
        for role, net in sorted(result.networks.items()):
            parts.append(role)
            for position, _, node in net.chain.walk():
                args = sorted((k, repr(v)) for k, v in node.plain_args().items())
                parts.append(
                    f"{position} {node.name} {args} x{node.repeat} {node.d_in}>{node.d_out}"
                )
    return hashlib.sha256("\n".join(parts).encode("utf-8")).hexdigest()[:16]
