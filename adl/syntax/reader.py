"""ADL text from a str or a file: what :func:`adl.parse`, :func:`adl.check` and the roles of
a file (:func:`adl.roles.roles_in`) read. ``adl.api`` offers the same names."""

from __future__ import annotations

import os
import re
import stat
from pathlib import Path
from typing import Union

from ..errors import error
from ..limits import MAX_SOURCE_CHARS
from ..source import Source

TextOrPath = Union[str, "os.PathLike[str]"]

# A file name given as a str: one line ending in .adl without ADL's punctuation. Such a line
# is never valid ADL text (a '.' appears only inside numbers), so the rule takes nothing away.
_FILE_NAME = re.compile(r"[^\n\r()=,$#→]*\.adl")


def is_file_name(text: str) -> bool:
    """Whether :func:`read_source` reads this str as a file name rather than as ADL text:
    one line ending in ``.adl`` with none of ``( ) = , $ # -> →``."""
    return _FILE_NAME.fullmatch(text) is not None and "->" not in text


def read_source(source: TextOrPath | Source) -> Source:
    """A :class:`Source` from ADL text or a file.

    A :class:`pathlib.Path` (any ``os.PathLike``) is always a file. A ``str`` is a file name
    when it is one line ending in ``.adl`` with none of ``( ) = , $ # -> →``
    (``models/t.enc.adl``, ``my runs/t.enc.adl``); any other ``str`` is ADL text, so
    ``"pos -> ffl  # as in t.adl"`` is text. A name with those characters is read with
    ``Path(...)``. Files must be regular files of at most 256 KiB of UTF-8 text."""
    if isinstance(source, Source):
        return source
    if isinstance(source, os.PathLike) or (isinstance(source, str) and is_file_name(source)):
        return _read_file(Path(source))
    if not isinstance(source, str):
        raise TypeError(f"expected ADL text or a path, got {type(source).__name__}")
    return Source(source)


def _read_file(path: Path) -> Source:
    try:
        info = path.stat()
    except FileNotFoundError:
        raise error(f"{path}: no such file") from None
    except OSError as exc:
        raise error(f"{path}: cannot read: {exc.strerror or exc}") from None
    if stat.S_ISDIR(info.st_mode):
        raise error(f"{path}: a directory, not an ADL file")
    if not stat.S_ISREG(info.st_mode):
        raise error(
            f"{path}: not a regular file (a device, pipe or socket): ADL is read from files"
        )
    try:
        with path.open("rb") as f:
            data = f.read(MAX_SOURCE_CHARS + 1)
    except OSError as exc:
        raise error(f"{path}: cannot read: {exc.strerror or exc}") from None
    if len(data) > MAX_SOURCE_CHARS:
        raise error(
            f"{path}: larger than the limit of {MAX_SOURCE_CHARS:,} bytes for an ADL file",
            hint="an ADL file describes one architecture in a few lines",
        )
    try:
        return Source(data.decode("utf-8"), str(path))
    except UnicodeDecodeError as exc:
        raise error(f"{path}: not UTF-8 text (byte {exc.start})") from None
