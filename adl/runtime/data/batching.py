"""Token-count batches bucketed by length, shuffled by seed, resumable, split between ranks.

Each epoch: a random permutation (seeded by ``seed`` and the epoch) breaks ties, a stable sort
by length groups similar lengths, batches are cut greedily so that
``sentences x longest side (with bos/eos)`` stays within ``max_tokens``, and the batches are
shuffled. With several processes, rank r takes batches r, r + W, r + 2W, ... (the list is
cut to a multiple of W, so that every rank makes the same number of updates). The position
``(epoch, index)`` is saved in checkpoints, so a resumed run sees exactly the same batches.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor

from adl.runtime.data.parallel import ParallelData, TokenArray
from adl.runtime.data.tokenizer import BOS, EOS, PAD
from adl.runtime.errors import DataError


@dataclass
class Batch:
    ids: Tensor  # (B,) example indices in the dataset
    src: Tensor  # (B, S) source tokens + eos, padded
    tgt_in: Tensor  # (B, T) bos + target tokens, padded
    tgt_out: Tensor  # (B, T) target tokens + eos, padded
    src_words: Tensor | None = None  # (B, S) word index of each source token

    @property
    def tgt_tokens(self) -> int:
        return int(self.tgt_out.ne(PAD).sum())

    @property
    def src_tokens(self) -> int:
        return int(self.src.ne(PAD).sum())

    def to(self, device: torch.device) -> Batch:
        move = lambda t: t.to(device, non_blocking=True)
        words = None if self.src_words is None else move(self.src_words)
        return Batch(self.ids, move(self.src), move(self.tgt_in), move(self.tgt_out), words)


def _gather(tokens: TokenArray, ids: Tensor) -> tuple[Tensor, Tensor]:
    """(B, L) the sequences ``ids`` padded with PAD, and their lengths (B,)."""
    lengths = tokens.lengths[ids]  # (B,)
    width = int(lengths.max())
    steps = torch.arange(width)
    where = tokens.offsets[ids].unsqueeze(1) + steps  # (B, L)
    inside = steps < lengths.unsqueeze(1)
    where = where.clamp_max(max(len(tokens.flat) - 1, 0))
    out = tokens.flat.index_select(0, where.flatten()).view(where.shape).long()  # (fast)
    return out.masked_fill_(~inside, PAD), lengths


def collate(data: ParallelData, ids: Tensor, word_ids=None) -> Batch:
    """Pad a batch: ``src = x + [eos]``, ``tgt_in = [bos] + y``, ``tgt_out = y + [eos]``."""
    rows = torch.arange(len(ids))
    src, src_len = _gather(data.src, ids)
    tgt, tgt_len = _gather(data.tgt, ids)
    pad = lambda t: torch.nn.functional.pad(t, (0, 1), value=PAD)
    src = pad(src)
    src[rows, src_len] = EOS
    tgt_out = pad(tgt)
    tgt_out[rows, tgt_len] = EOS
    tgt_in = torch.nn.functional.pad(tgt, (1, 0), value=BOS)
    words = word_ids(src) if word_ids is not None else None
    return Batch(ids, src, tgt_in, tgt_out, words)


def make_batches(
    src_lengths: Tensor,
    tgt_lengths: Tensor,
    max_tokens: int,
    max_sentences: int = 0,
    seed: int = 1,
    epoch: int = 1,
    shuffle: bool = True,
    strict: bool = True,
) -> list[Tensor]:
    """Index batches for one epoch (deterministic in ``seed`` and ``epoch``).

    ``strict``: a pair longer than ``max_tokens`` is an error (training); otherwise it
    gets a batch of its own (validation)."""
    n = len(src_lengths)
    cost = torch.maximum(src_lengths, tgt_lengths) + 1  # the longer side, with bos/eos
    if shuffle:
        g = torch.Generator().manual_seed(seed * 1_000_003 + epoch)
        order = torch.randperm(n, generator=g)
    else:
        order = torch.arange(n)
    order = order[torch.sort(cost[order], stable=True).indices]  # bucket by length
    too_long = int(cost.max())
    if strict and too_long > max_tokens:
        raise DataError(
            f"a sentence pair needs {too_long} tokens but a batch holds "
            f"train.max_tokens={max_tokens}: raise it or lower data.max_len"
        )
    batches, start, longest = [], 0, 0
    costs = cost[order].tolist()
    for i, c in enumerate(costs):
        size = i - start + 1
        wide = max(longest, c)
        if size > 1 and (wide * size > max_tokens or (max_sentences and size > max_sentences)):
            batches.append(order[start:i])
            start, wide = i, c
        longest = wide
    batches.append(order[start:])
    if shuffle:
        perm = torch.randperm(len(batches), generator=g).tolist()
        batches = [batches[i] for i in perm]
    return batches


class BatchStream:
    """An endless stream of training batches for one rank, with a resumable position."""

    def __init__(
        self,
        data: ParallelData,
        max_tokens: int,
        max_sentences: int = 0,
        seed: int = 1,
        rank: int = 0,
        world: int = 1,
        word_ids=None,
    ):
        self.data = data
        self.max_tokens, self.max_sentences, self.seed = max_tokens, max_sentences, seed
        self.rank, self.world = rank, world
        self.word_ids = word_ids
        self.epoch, self.index = 1, 0  # the next batch is batch `index` of epoch `epoch`
        self._epoch_batches: list[Tensor] | None = None

    def batches(self, epoch: int) -> list[Tensor]:
        """This rank's index batches of an epoch."""
        every = make_batches(
            self.data.src.lengths,
            self.data.tgt.lengths,
            self.max_tokens,
            self.max_sentences,
            self.seed,
            epoch,
        )
        if len(every) < self.world:
            raise DataError(
                f"the training data makes {len(every)} batches, fewer than the "
                f"{self.world} processes: lower train.max_tokens"
            )
        every = every[: len(every) - len(every) % self.world]
        return every[self.rank :: self.world]

    def _current(self) -> list[Tensor]:
        if self._epoch_batches is None:
            self._epoch_batches = self.batches(self.epoch)
        return self._epoch_batches

    def __iter__(self) -> BatchStream:
        return self

    def __next__(self) -> Batch:
        batches = self._current()
        if self.index >= len(batches):
            self.epoch, self.index, self._epoch_batches = self.epoch + 1, 0, None
            batches = self._current()
        ids = batches[self.index]
        self.index += 1
        return collate(self.data, ids, self.word_ids)

    @property
    def epoch_progress(self) -> float:
        """Epochs done, fractional (e.g. 2.5 = halfway through the third)."""
        return self.epoch - 1 + self.index / max(len(self._current()), 1)

    def state_dict(self) -> dict:
        return {"epoch": self.epoch, "index": self.index, "seed": self.seed, "world": self.world}

    def load_state_dict(self, state: dict) -> None:
        self.epoch, self.index = int(state["epoch"]), int(state["index"])
        self._epoch_batches = None
        if int(state.get("world", self.world)) != self.world:
            # another split of the same epoch: start that epoch again on the new split
            self.index = 0
