"""Parallel text: reading with clear errors, tokenizing, filtering, compact storage.

Files hold one sentence a line, line-aligned (``train.en`` / ``train.de``). A pair with an
empty side is skipped and counted. Bad data stops with one message that names the file and
the line: files of different lengths, an empty file, bytes that are not UTF-8.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import torch
from torch import Tensor

from .errors import DataError
from .lines import read_lines


@dataclass
class TextPairs:
    """Aligned sentence pairs read from two files, empty pairs already skipped."""

    src: list[str]
    tgt: list[str]
    src_path: str
    tgt_path: str
    lines: int  # lines in each file
    empty: int  # pairs skipped because a side was empty


def read_parallel(src_path: str | Path, tgt_path: str | Path) -> TextPairs:
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
    keep = [i for i, (s, t) in enumerate(zip(src, tgt)) if s.strip() and t.strip()]
    return TextPairs(
        [src[i].strip() for i in keep],
        [tgt[i].strip() for i in keep],
        str(src_path),
        str(tgt_path),
        len(src),
        len(src) - len(keep),
    )


def _tensor(values: array, dtype: torch.dtype) -> Tensor:
    """A tensor copy of an ``array`` (through its buffer, not element by element)."""
    if not len(values):
        return torch.zeros(0, dtype=dtype)
    return torch.frombuffer(values, dtype=dtype).clone()


class TokenArray:
    """Many token sequences in one flat int32 tensor (small and fast to slice)."""

    def __init__(self, flat: Tensor, offsets: Tensor):
        self.flat = flat  # (total,) int32
        self.offsets = offsets  # (N + 1,) int64: sequence i is flat[offsets[i]:offsets[i+1]]
        self.lengths = offsets[1:] - offsets[:-1]

    @classmethod
    def from_lists(cls, seqs: Iterable[Sequence[int]]) -> TokenArray:
        flat, offsets = array("i"), array("q", [0])
        for seq in seqs:
            flat.extend(seq)
            offsets.append(len(flat))
        return cls(_tensor(flat, torch.int32), _tensor(offsets, torch.int64))

    def __len__(self) -> int:
        return len(self.offsets) - 1

    def __getitem__(self, i: int) -> Tensor:
        return self.flat[int(self.offsets[i]) : int(self.offsets[i + 1])]

    def select(self, index: Tensor) -> TokenArray:
        return TokenArray.from_lists(self[int(i)].tolist() for i in index)


@dataclass
class FilterStats:
    lines: int = 0  # lines per file
    empty: int = 0  # pairs with an empty side, skipped
    too_long: int = 0  # pairs over max_len tokens on a side, dropped
    bad_ratio: int = 0  # pairs whose token ratio exceeds max_ratio, dropped
    kept: int = 0  # pairs used
    src_tokens: int = 0  # source tokens of the kept pairs
    tgt_tokens: int = 0  # target tokens of the kept pairs

    def describe(self, name: str) -> str:
        parts = [f"{name}: {self.lines:,} lines"]
        if self.empty:
            parts.append(f"{self.empty:,} with an empty side skipped")
        if self.too_long:
            parts.append(f"{self.too_long:,} too long dropped")
        if self.bad_ratio:
            parts.append(f"{self.bad_ratio:,} over the length ratio dropped")
        parts.append(
            f"{self.kept:,} pairs kept ({self.src_tokens:,} source / "
            f"{self.tgt_tokens:,} target tokens)"
        )
        return ", ".join(parts)


@dataclass
class ParallelData:
    """Tokenized sentence pairs (no bos/eos yet) and what filtering did."""

    src: TokenArray
    tgt: TokenArray
    stats: FilterStats
    references: list[str] | None = None  # raw target text (validation: BLEU references)
    sources: list[str] | None = None  # raw source text

    def __len__(self) -> int:
        return len(self.src)

    @property
    def length_ratio(self) -> float:
        """Mean source length / mean target length, in tokens (hard-coded cross attention)."""
        return self.stats.src_tokens / max(self.stats.tgt_tokens, 1)


def encode_pairs(
    pairs: TextPairs,
    encode_src,
    encode_tgt,
    max_len: int = 0,
    max_ratio: float = 0.0,
    keep_text: bool = False,
    chunk: int = 100_000,
) -> ParallelData:
    """Tokenize and filter: drop pairs over ``max_len`` tokens on a side or with one side
    longer than ``max_ratio`` times the other (0 turns a filter off). Works through the
    text ``chunk`` pairs at a time, so that only the compact arrays grow with the data."""
    stats = FilterStats(lines=pairs.lines, empty=pairs.empty)
    src_flat, tgt_flat = array("i"), array("i")
    src_off, tgt_off = array("q", [0]), array("q", [0])
    keep = []
    for start in range(0, len(pairs.src), chunk):
        src_ids = encode_src(pairs.src[start : start + chunk])
        tgt_ids = encode_tgt(pairs.tgt[start : start + chunk])
        for i, (s, t) in enumerate(zip(src_ids, tgt_ids), start):
            ls, lt = len(s), len(t)
            if max_len and (ls > max_len or lt > max_len):
                stats.too_long += 1
            elif max_ratio and max(ls, lt) > max_ratio * max(min(ls, lt), 1):
                stats.bad_ratio += 1
            else:
                keep.append(i)
                src_flat.extend(s)
                tgt_flat.extend(t)
                src_off.append(len(src_flat))
                tgt_off.append(len(tgt_flat))
    stats.kept = len(keep)
    stats.src_tokens, stats.tgt_tokens = len(src_flat), len(tgt_flat)
    if not keep:
        raise DataError(
            f"{pairs.src_path}: no sentence pair is left after filtering "
            f"({stats.describe('data')}); raise data.max_len or data.max_ratio"
        )
    as_array = lambda flat, off: TokenArray(
        _tensor(flat, torch.int32),
        _tensor(off, torch.int64),
    )
    return ParallelData(
        as_array(src_flat, src_off),
        as_array(tgt_flat, tgt_off),
        stats,
        [pairs.tgt[i] for i in keep] if keep_text else None,
        [pairs.src[i] for i in keep] if keep_text else None,
    )


def files_of(prefix: str, langs: Sequence[str]) -> tuple[str, str]:
    """``data/train`` + (``en``, ``de``) -> (``data/train.en``, ``data/train.de``)."""
    if len(langs) != 2:
        raise DataError("give two languages: source and target")
    return f"{prefix}.{langs[0]}", f"{prefix}.{langs[1]}"
