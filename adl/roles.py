"""A network's role from its file: the one place that reads ``*.enc.adl``, ``*.dec.adl`` and
``*.joint.adl`` (the checker, ``adl.build``, the runtime and the CLI all ask here)."""

from __future__ import annotations

import re
from pathlib import PurePath
from typing import TYPE_CHECKING

from .registry import DECODER, ENCODER, JOINT
from .syntax.parser import parse_source
from .syntax.reader import TextOrPath, read_source

if TYPE_CHECKING:
    from .source import Source

# x.enc.adl; a space of programs (adl search) also x.enc.space.adl, or enc.space.adl
_SUFFIX = re.compile(
    r"(?:\.(enc|dec|joint|encoder|decoder)(?:\.space)?|(?:^|[/\\])(enc|dec|joint|encoder|decoder)"
    r"\.space)\.adl$"
)
_SUFFIX_ROLE = {
    "enc": ENCODER,
    "encoder": ENCODER,
    "dec": DECODER,
    "decoder": DECODER,
    "joint": JOINT,
}


def role_from_name(name: str | PurePath) -> str | None:
    """``x.enc.adl`` -> encoder, ``x.dec.adl`` -> decoder, ``x.joint.adl`` -> joint, else None.

    >>> role_from_name("models/t.enc.adl"), role_from_name("t.joint.adl"), role_from_name("t.adl")
    ('encoder', 'joint', None)
    """
    m = _SUFFIX.search(str(name))
    return _SUFFIX_ROLE[m.group(1) or m.group(2)] if m else None


def stem(name: str | PurePath) -> str:
    """A file's name without its directory, role suffix and ``.adl``.

    >>> stem("architectures/transformer.enc.adl"), stem("lm.joint.adl"), stem("model.adl")
    ('transformer', 'lm', 'model')
    """
    base = PurePath(name).name
    m = _SUFFIX.search(base)
    if m:
        return base[: m.start() + (1 if base[m.start()] in "/\\" else 0)]
    return base[: -len(".adl")] if base.endswith(".adl") else base


def roles_in(source: TextOrPath | Source) -> set[str]:
    """The roles a file (path or ADL text) holds: its ``encoder =`` / ``decoder =`` /
    ``joint =`` definitions, or its name's role for a bare chain."""
    src = read_source(source)
    tree = parse_source(src)
    roles = {d.name for d in tree.definitions if d.name in (ENCODER, DECODER, JOINT)}
    named = role_from_name(src.name)
    if tree.network is not None and named:
        roles.add(named)
    return roles
