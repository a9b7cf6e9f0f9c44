"""Reading parallel text, with one clear message for bad data (file and line).

Three layouts, each plain or gzip-compressed (``.gz``, recognised by its content):

- two line-aligned files, one sentence a line (``train.en`` / ``train.de``);
- one TSV file (``*.tsv``): ``source<TAB>target`` on each line;
- one JSONL file (``*.jsonl``): a JSON object a line, the sides in the fields
  ``data.src_field`` and ``data.tgt_field`` (``{"src": ..., "tgt": ...}`` by default).

Only ``\\n`` ends a line (``\\r\\n`` is read too), so line numbers match ``wc -l``; a file
without any ``\\n`` whose lines end in ``\\r`` (classic Mac OS) is read with ``\\r`` as the
line end. A pair with an empty side is skipped and counted. Bad data stops with one message
naming the file and the line: files of different lengths, an empty file, bytes that are not
UTF-8, a TSV line without exactly one tab, a JSONL line that is not a JSON object or lacks a
field.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from adl.runtime.config import DataConfig
from adl.runtime.data.lines import read_lines
from adl.runtime.errors import DataError

PAIR_FORMATS = {".tsv": "tsv", ".jsonl": "jsonl"}  # one file holding both sides


def pair_format(path: str | Path) -> str | None:
    """``tsv`` or ``jsonl`` for a file holding both sides (``x.tsv``, ``x.jsonl.gz``), else
    None (a file of one side)."""
    name = Path(path).name.lower()
    if name.endswith(".gz"):
        name = name[:-3]
    return next((kind for suffix, kind in PAIR_FORMATS.items() if name.endswith(suffix)), None)


@dataclass
class TextPairs:
    """Aligned sentence pairs, empty pairs already skipped."""

    src: list[str]
    tgt: list[str]
    src_path: str
    tgt_path: str  # the same file as src_path for TSV and JSONL
    lines: int  # lines read (in each file)
    empty: int  # pairs skipped because a side was empty
    unused: int = 0  # non-empty pairs left out at the end (data.valid_max)

    def first(self, n: int) -> None:
        """Keep the first ``n`` pairs (0: all); the rest are counted as unused."""
        if n and len(self.src) > n:
            self.unused += len(self.src) - n
            self.src, self.tgt = self.src[:n], self.tgt[:n]

    @property
    def name(self) -> str:
        """The file(s), for messages."""
        if self.src_path == self.tgt_path:
            return self.src_path
        return f"{self.src_path} + {self.tgt_path}"


def _pairs(src: list[str], tgt: list[str], src_path, tgt_path) -> TextPairs:
    keep = [i for i, (s, t) in enumerate(zip(src, tgt)) if s.strip() and t.strip()]
    return TextPairs(
        [src[i].strip() for i in keep],
        [tgt[i].strip() for i in keep],
        str(src_path),
        str(tgt_path),
        len(src),
        len(src) - len(keep),
    )


def read_parallel(src_path: str | Path, tgt_path: str | Path) -> TextPairs:
    """Two line-aligned files."""
    src, tgt = read_lines(src_path), read_lines(tgt_path)
    if len(src) != len(tgt):
        short, long_, n = (
            (src_path, tgt_path, len(src))
            if len(src) < len(tgt)
            else (tgt_path, src_path, len(tgt))
        )
        raise DataError(
            f"{long_}:{n + 1}: this line has no partner: {long_} has "
            f"{max(len(src), len(tgt)):,} lines but {short} has {n:,}"
        )
    return _pairs(src, tgt, src_path, tgt_path)


def read_tsv(path: str | Path) -> TextPairs:
    """``source<TAB>target`` lines; an empty line is an empty pair."""
    src, tgt = [], []
    for n, line in enumerate(read_lines(path), 1):
        fields = line.split("\t")
        if len(fields) != 2:
            if not line.strip():
                fields = ["", ""]
            else:
                raise DataError(
                    f"{path}:{n}: expected source<TAB>target (one tab), found "
                    f"{len(fields) - 1} tabs"
                )
        src.append(fields[0])
        tgt.append(fields[1])
    return _pairs(src, tgt, path, path)


def read_jsonl(path: str | Path, src_field: str = "src", tgt_field: str = "tgt") -> TextPairs:
    """One JSON object a line with the two sides as strings; an empty line is an empty
    pair."""
    src, tgt = [], []
    for n, line in enumerate(read_lines(path), 1):
        if not line.strip():
            src.append("")
            tgt.append("")
            continue
        try:
            item = json.loads(line)
        except json.JSONDecodeError as exc:
            raise DataError(
                f"{path}:{n}: not valid JSON ({exc.msg} at column {exc.colno})"
            ) from None
        if not isinstance(item, dict):
            raise DataError(
                f"{path}:{n}: expected a JSON object such as "
                f'{{"{src_field}": ..., "{tgt_field}": ...}}, found {_json_kind(item)}'
            )
        sides = []
        for field, key in ((src_field, "data.src_field"), (tgt_field, "data.tgt_field")):
            if field not in item:
                has = ", ".join(map(repr, list(item)[:5])) or "none"
                raise DataError(
                    f"{path}:{n}: no field {field!r} (the line has {has}; "
                    f"set {key} to the field's name)"
                )
            value = item[field]
            if not isinstance(value, str):
                raise DataError(
                    f"{path}:{n}: field {field!r} holds {_json_kind(value)}, not a string"
                )
            if not value.isascii():
                try:
                    value.encode("utf-8")
                except UnicodeEncodeError:
                    raise DataError(
                        f"{path}:{n}: field {field!r} holds a lone surrogate escape "
                        "(\\ud800-\\udfff), which is not text"
                    ) from None
            sides.append(value)
        src.append(sides[0])
        tgt.append(sides[1])
    return _pairs(src, tgt, path, path)


def _json_kind(value) -> str:
    for kind, name in (
        (bool, "true/false"),
        (int, "a number"),
        (float, "a number"),
        (str, "a string"),
        (list, "a list"),
        (dict, "an object"),
    ):
        if isinstance(value, kind):
            return name
    return "null"


def read_pairs(
    src: str | Path, tgt: str | Path | None = None, src_field="src", tgt_field="tgt"
) -> TextPairs:
    """Two line-aligned files (``src``, ``tgt``), or one TSV or JSONL file (``src`` alone)."""
    if tgt is not None:
        return read_parallel(src, tgt)
    kind = pair_format(src)
    if kind == "tsv":
        return read_tsv(src)
    if kind == "jsonl":
        return read_jsonl(src, src_field, tgt_field)
    raise DataError(
        f"{src}: one file of sentence pairs must be .tsv (source<TAB>target) or .jsonl "
        "(optionally .gz); give two line-aligned files otherwise"
    )


def read_split(cfg: DataConfig, split: str) -> TextPairs | None:
    """The ``train`` or ``valid`` data a configuration names (None: it names none)."""
    one = getattr(cfg, split)
    src, tgt = getattr(cfg, f"{split}_src"), getattr(cfg, f"{split}_tgt")
    if one:
        return read_pairs(one, None, cfg.src_field, cfg.tgt_field)
    if src and tgt:
        return read_parallel(src, tgt)
    return None
