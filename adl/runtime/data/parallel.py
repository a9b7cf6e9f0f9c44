"""Parallel data, tokenized: tokenizing, filtering by length, compact storage
(:class:`ParallelData`).

Reading (two plain-text files, TSV, JSONL, gzip; errors naming file and line) is
:mod:`adl.runtime.data.corpus`; its ``read_lines``, ``read_parallel`` and ``TextPairs`` are
importable from here too. Tokenized pairs can come from the token cache
(:mod:`adl.runtime.data.tokencache`); filtering always runs on them afresh, so a cache
serves any ``data.max_len``.
"""

from __future__ import annotations

import math
from array import array
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import torch
from torch import Tensor

from adl.runtime.data.corpus import TextPairs, read_lines, read_parallel
from adl.runtime.errors import DataError

__all__ = [
    "FilterStats",
    "Limits",
    "ParallelData",
    "TextPairs",
    "TokenArray",
    "encode_pairs",
    "files_of",
    "read_lines",
    "read_parallel",
    "tokenize",
]

LOUD_SHARE = 0.05  # dropping more than this share of the training pairs gets a warning


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
        """The sequences ``index`` (a (K,) index tensor), in that order (vectorised)."""
        index = torch.as_tensor(index, dtype=torch.long)
        lengths = self.lengths[index]
        offsets = torch.zeros(len(index) + 1, dtype=torch.int64)
        torch.cumsum(lengths, 0, out=offsets[1:])
        starts = self.offsets[:-1][index]
        within = torch.arange(int(offsets[-1])) - offsets[:-1].repeat_interleave(lengths)
        flat = self.flat[starts.repeat_interleave(lengths) + within]
        return TokenArray(flat, offsets)


@dataclass(frozen=True)
class Limits:
    """The longest pairs kept, in tokens a side without bos/eos (0: no limit)."""

    max_len: int = 0  # data.max_len, on both sides
    max_ratio: float = 0.0  # data.max_ratio: the longer side over the shorter, at most
    src_positions: int = 0  # the model's learned positions: sources of at most this many
    tgt_positions: int = 0  # ... and targets of at most this many


@dataclass
class FilterStats:
    lines: int = 0  # lines per file
    empty: int = 0  # pairs with an empty side, skipped
    unused: int = 0  # pairs after the first data.valid_max, not used
    too_long: int = 0  # pairs over data.max_len tokens on a side, dropped
    over_positions: int = 0  # other pairs longer than the model's learned positions, dropped
    bad_ratio: int = 0  # pairs whose token ratio exceeds max_ratio, dropped
    kept: int = 0  # pairs used
    src_tokens: int = 0  # source tokens of the kept pairs
    tgt_tokens: int = 0  # target tokens of the kept pairs
    limits: Limits = Limits()
    fit_len: int = 0  # the max_len that keeps 1 - LOUD_SHARE of the pairs (when some are dropped)

    @property
    def pairs(self) -> int:
        """Pairs with both sides non-empty (what the filters see)."""
        return self.lines - self.empty - self.unused

    def _share(self, n: int) -> str:
        return f"{100 * n / max(self.pairs, 1):.1f} %"

    def _positions(self) -> str:
        lim = self.limits
        sides = [
            f"{what} {n:,} tokens"
            for what, n in (("source", lim.src_positions), ("target", lim.tgt_positions))
            if n
        ]
        return f"the model's learned positions (learn_pos: {', '.join(sides)})"

    def describe(self, name: str) -> str:
        """One line: what was read, skipped, dropped (count, share, limit) and kept."""
        lim = self.limits
        parts = [f"{name}: {self.lines:,} lines"]
        if self.empty:
            parts.append(f"{self.empty:,} with an empty side skipped")
        if self.unused:
            parts.append(
                f"{self.unused:,} after the first {self.pairs:,} pairs not used (data.valid_max)"
            )
        if self.too_long:
            parts.append(
                f"{self.too_long:,} of {self.pairs:,} pairs ({self._share(self.too_long)}) "
                f"over data.max_len={lim.max_len} tokens dropped"
            )
        if self.over_positions:
            parts.append(
                f"{self.over_positions:,} ({self._share(self.over_positions)}) longer than "
                f"{self._positions()} dropped"
            )
        if self.bad_ratio:
            parts.append(
                f"{self.bad_ratio:,} ({self._share(self.bad_ratio)}) over "
                f"data.max_ratio={lim.max_ratio:g} dropped"
            )
        parts.append(
            f"{self.kept:,} pairs kept ({self.src_tokens:,} source / "
            f"{self.tgt_tokens:,} target tokens)"
        )
        return ", ".join(parts)

    def warning(self, name: str) -> str | None:
        """A loud line when the length limits drop more than LOUD_SHARE of the pairs."""
        lost = self.too_long + self.over_positions
        if lost <= LOUD_SHARE * self.pairs:
            return None
        causes, fixes = [], []
        if self.too_long:
            causes.append(f"data.max_len={self.limits.max_len} tokens")
            keeps = (
                f" (--set data.max_len={self.fit_len} keeps {100 * (1 - LOUD_SHARE):.0f} %)"
                if self.fit_len > self.limits.max_len
                else ""
            )
            fixes.append(f"raise data.max_len{keeps}")
        if self.over_positions:
            causes.append(self._positions())
            fixes.append("give learn_pos a larger max_len in the model's .adl files")
        return (
            f"{name}: {self._share(lost)} of the pairs ({lost:,} of {self.pairs:,}) are longer "
            f"than {' or '.join(causes)} and were dropped: {'; '.join(fixes)}"
        )


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


Encoder = Callable[[Sequence[str]], list[list[int]]]


def tokenize(
    pairs: TextPairs, encode_src: Encoder, encode_tgt: Encoder, chunk: int = 100_000
) -> tuple[TokenArray, TokenArray]:
    """Every pair's token ids, ``chunk`` pairs at a time, so that only the compact arrays
    grow with the data."""
    arrays = []
    for lines, encode in ((pairs.src, encode_src), (pairs.tgt, encode_tgt)):
        flat, offsets = array("i"), array("q", [0])
        for start in range(0, len(lines), chunk):
            for seq in encode(lines[start : start + chunk]):
                flat.extend(seq)
                offsets.append(len(flat))
        arrays.append(TokenArray(_tensor(flat, torch.int32), _tensor(offsets, torch.int64)))
    return arrays[0], arrays[1]


def length_filter(src: TokenArray, tgt: TokenArray, limits: Limits, stats: FilterStats) -> Tensor:
    """The indices of the pairs within ``limits``; counts what each limit drops into
    ``stats`` (a pair is counted once: max_len first, then positions, then the ratio)."""
    ls, lt = src.lengths, tgt.lengths
    none = torch.zeros(len(ls), dtype=torch.bool)
    longest = torch.maximum(ls, lt)
    too_long = longest > limits.max_len if limits.max_len else none
    over_pos = none.clone()
    if limits.src_positions:
        over_pos |= ls > limits.src_positions
    if limits.tgt_positions:
        over_pos |= lt > limits.tgt_positions
    over_pos &= ~too_long
    bad_ratio = none
    if limits.max_ratio:
        shortest = torch.minimum(ls, lt).clamp_min(1).double()
        bad_ratio = (longest.double() > limits.max_ratio * shortest) & ~(too_long | over_pos)
    keep = ~(too_long | over_pos | bad_ratio)
    stats.limits = limits
    stats.too_long = int(too_long.sum())
    stats.over_positions = int(over_pos.sum())
    stats.bad_ratio = int(bad_ratio.sum())
    if stats.too_long and len(longest):
        ranked = longest.sort().values
        kept = math.ceil((1 - LOUD_SHARE) * len(ranked))  # no warning at this max_len
        stats.fit_len = int(ranked[max(kept - 1, 0)])
    return keep.nonzero().squeeze(1)


def encode_pairs(
    pairs: TextPairs,
    encode_src: Encoder,
    encode_tgt: Encoder,
    max_len: int = 0,
    max_ratio: float = 0.0,
    keep_text: bool = False,
    chunk: int = 100_000,
    *,
    limits: Limits | None = None,
    tokens: tuple[TokenArray, TokenArray] | None = None,
    name: str = "data",
) -> ParallelData:
    """Tokenize and filter: drop pairs over ``max_len`` tokens on a side or with one side
    longer than ``max_ratio`` times the other (0 turns a filter off). ``limits`` replaces
    ``max_len`` and ``max_ratio`` (and adds the model's position limits); ``tokens`` are the
    pairs' ids when known already (the token cache). ``name`` is what messages call the
    data."""
    limits = limits or Limits(max_len, max_ratio)
    src, tgt = tokens or tokenize(pairs, encode_src, encode_tgt, chunk)
    if len(src) != len(pairs.src) or len(tgt) != len(pairs.tgt):
        raise ValueError("the token arrays do not match the text pairs")
    stats = FilterStats(lines=pairs.lines, empty=pairs.empty, unused=pairs.unused)
    keep = length_filter(src, tgt, limits, stats)
    src, tgt = src.select(keep), tgt.select(keep)
    stats.kept = len(keep)
    stats.src_tokens, stats.tgt_tokens = len(src.flat), len(tgt.flat)
    if not len(keep):
        raise DataError(
            f"{pairs.src_path}: no sentence pair is left after filtering "
            f"({stats.describe(name)}); raise data.max_len or data.max_ratio"
        )
    index = keep.tolist() if keep_text else []
    return ParallelData(
        src,
        tgt,
        stats,
        [pairs.tgt[i] for i in index] if keep_text else None,
        [pairs.src[i] for i in index] if keep_text else None,
    )


def files_of(prefix: str, langs: Sequence[str]) -> tuple[str, str]:
    """``data/train`` + (``en``, ``de``) -> (``data/train.en``, ``data/train.de``); a side
    that exists only gzip-compressed (``data/train.en.gz``) is taken as such."""
    if len(langs) != 2:
        raise DataError("give two languages: source and target")
    files = []
    for lang in langs:
        path = f"{prefix}.{lang}"
        if not Path(path).exists() and Path(path + ".gz").exists():
            path += ".gz"
        files.append(path)
    return files[0], files[1]
