"""Several ADL files checked as one ``adl compile`` checks them: the one implementation that
the command and the language server (:mod:`adl.lsp`) share.

Each file is checked on its own, except that a decoder given beside an encoder reads that
encoder's output size, and its ``encoder_block=`` arguments must name blocks that encoder
has. A file's problems never stop the others from being checked.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from .analysis.program import Program
from .api import TextOrPath, check
from .errors import ADLError
from .models import check_pair
from .registry import DECODER, ENCODER, Hyper
from .roles import role_from_name
from .source import Source


def check_files(
    files: Sequence[TextOrPath | Source],
    role: str | None = None,
    *,
    d_model: int = Hyper.d_model,
    heads: int = Hyper.heads,
    dropout: float = Hyper.dropout,
    vars: Mapping[str, Any] | None = None,
) -> list[Program | ADLError]:
    """Each file's checked :class:`Program`, or the :class:`ADLError` with all its errors,
    in the order given.

    Encoders are checked first: a decoder given beside a clean encoder is checked with
    ``source_d`` the encoder's output size and then paired with it (:func:`check_pair`). A
    file is a path, ADL text (see :func:`adl.read_source`) or a :class:`Source` whose name
    gives its role (``x.enc.adl``); ``role`` overrides every file's. A file that defines
    both networks is never paired with the other files."""
    options: dict[str, Any] = dict(d_model=d_model, heads=heads, dropout=dropout, vars=vars)
    role_of = lambda i: role or role_from_name(_name(files[i]))
    results: dict[int, Program | ADLError] = {}
    encoder: Program | None = None
    for i in sorted(range(len(files)), key=lambda i: role_of(i) != ENCODER):
        paired = encoder if role_of(i) == DECODER else None
        source_d = paired.networks[ENCODER].d_out if paired is not None else None
        try:
            program = check(files[i], role=role, source_d=source_d, **options)
            if paired is not None and DECODER in program.networks:
                check_pair(paired, program)
        except ADLError as exc:
            results[i] = exc
            continue
        results[i] = program
        if set(program.networks) == {ENCODER}:  # a file of both networks pairs its own
            encoder = program
    return [results[i] for i in range(len(files))]


def _name(file: TextOrPath | Source) -> str:
    return file.name if isinstance(file, Source) else str(file)
