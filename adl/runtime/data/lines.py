"""Reading text one sentence a line: whole files (:func:`read_lines`) and streams as their
lines arrive (:class:`LineStream`, what ``adl translate`` reads standard input with).

Both read UTF-8 with the same rules: a line ends at ``\\n`` (a ``\\r`` before it is dropped;
U+2028 and friends are not line ends), a byte-order mark at the start is dropped, and a line
that is not UTF-8 is one :class:`DataError` naming the file and the line.
"""

from __future__ import annotations

import gzip
import io
import os
import select
import sys
import zlib
from collections import deque
from pathlib import Path
from typing import BinaryIO

from adl.runtime.errors import DataError

GZIP_MAGIC = b"\x1f\x8b"  # never the start of UTF-8 text (0x8b is a continuation byte)


def _decode(raw: bytes, name: str, number: int) -> str:
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise DataError(
            f"{name}:{number}: not valid UTF-8 (byte {exc.start + 1} of the line: "
            f"{raw[exc.start : exc.start + 1]!r})"
        ) from None
    if number == 1 and text.startswith("\ufeff"):
        text = text[1:]
    return text[:-1] if text.endswith("\r") else text


def read_bytes(path: str | Path) -> bytes:
    """The bytes of a file, gunzipped when it is gzip-compressed (recognised by its content);
    raises :class:`DataError`."""
    try:
        data = Path(path).read_bytes()
    except FileNotFoundError:
        raise DataError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise DataError(f"{path}: is a directory, not a text file") from None
    except OSError as exc:
        raise DataError(f"{path}: cannot read: {exc.strerror}") from None
    if data.startswith(GZIP_MAGIC):
        try:
            data = gzip.decompress(data)
        except (OSError, EOFError, zlib.error) as exc:
            raise DataError(f"{path}: a damaged gzip file ({exc})") from None
    return data


def read_lines(
    path: str | Path | None, stream: BinaryIO | None = None, *, allow_empty: bool = False
) -> list[str]:
    """The lines of a UTF-8 text file, gzip-compressed or not, without their line ends
    (``path`` None: of ``stream``, by default standard input). A text without any ``\\n``
    whose lines end in ``\\r`` (classic Mac OS) is split at ``\\r``. An empty file is an
    error unless ``allow_empty``; raises :class:`DataError`."""
    name = str(path) if path is not None else "<stdin>"
    if path is not None:
        data = read_bytes(path)
    else:
        data = (stream or sys.stdin.buffer).read()
    if not allow_empty and not data.strip():
        raise DataError(f"{name}: empty file")
    end = b"\n" if b"\n" in data or b"\r" not in data else b"\r"
    raw = data.split(end)
    if raw and raw[-1] == b"":
        raw.pop()
    return [_decode(line, name, number) for number, line in enumerate(raw, 1)]


class LineStream:
    """The lines of a binary stream as they arrive.

    :meth:`take` waits for one line and then takes, without waiting, the further lines that
    are already readable (up to a count): what an interactive filter batches. Streams with a
    file descriptor (a pipe, a terminal, a file) are read with ``select`` and ``os.read``;
    others (an in-memory stream) are read to their end. Each line comes with its number."""

    CHUNK = 1 << 16

    def __init__(self, stream: BinaryIO, name: str = "<stdin>"):
        self.stream, self.name = stream, name
        try:
            self.fd: int | None = stream.fileno()
        except (AttributeError, OSError, io.UnsupportedOperation):
            self.fd = None
        self.pending = b""  # bytes after the last complete line
        self.ready: deque[tuple[int, str]] = deque()
        self.number = 0
        self.eof = False

    def _read(self, wait: bool) -> bool:
        """Read one chunk (waiting for it when ``wait``); False when nothing was readable."""
        if self.eof:
            return False
        if self.fd is not None:
            if not wait and not select.select([self.fd], [], [], 0)[0]:
                return False
            chunk = os.read(self.fd, self.CHUNK)
        else:
            chunk = self.stream.read()
            if chunk:
                chunk += b"" if chunk.endswith(b"\n") else b"\n"  # read to the end: one go
                self._split(chunk)
            self.eof = True
            self._finish()
            return bool(chunk)
        if not chunk:
            self.eof = True
            self._finish()
            return True
        self._split(chunk)
        return True

    def _split(self, chunk: bytes) -> None:
        *lines, self.pending = (self.pending + chunk).split(b"\n")
        for raw in lines:
            self.number += 1
            self.ready.append((self.number, _decode(raw, self.name, self.number)))

    def _finish(self) -> None:
        if self.pending:  # a last line without its newline
            self.number += 1
            self.ready.append((self.number, _decode(self.pending, self.name, self.number)))
            self.pending = b""

    def take(self, most: int) -> list[tuple[int, str]]:
        """The next lines ``(number, text)``: at least one (waiting for it), at most ``most``,
        as many as are readable now. An empty list: the stream has ended."""
        while not self.ready and not self.eof:
            self._read(wait=True)
        while len(self.ready) < most and self._read(wait=False):
            pass
        return [self.ready.popleft() for _ in range(min(most, len(self.ready)))]
