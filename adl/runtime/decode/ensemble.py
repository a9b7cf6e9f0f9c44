"""Decoding with several models at once: :class:`Ensemble` stands behind the same
``start`` / ``step`` / ``forward`` interface as one model, so greedy and beam search, scoring
and the :class:`~adl.runtime.decode.translator.Translator` use it unchanged.

At each step every model reads the same target prefix with its own incremental cache, and
the next-token distributions are combined (``mode``):

- ``linear`` (the default, as fairseq's ``--path a.pt:b.pt`` and Sockeye's ``-m a b``
  default): the average of the probabilities, log(1/N Σ p_i);
- ``log_linear``: the average of the log-probabilities, 1/N Σ log p_i, renormalised
  (a product of experts; Sockeye's ``--ensemble-mode log_linear``).

An ensemble of one is the model itself (the same scores, bit for bit). Models are combined
only when their vocabularies are the same pieces in the same order on both sides
(:func:`check_vocabularies`); the first model's tokenizers segment the input.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch
from torch import Tensor, nn

from adl.runtime.errors import ConfigError

MODES = ("linear", "log_linear")


def _pieces(sp) -> list[str]:
    return [sp.id_to_piece(i) for i in range(sp.get_piece_size())]


def check_vocabularies(tokenizers: Sequence, origins: Sequence[str]) -> None:
    """Refuse (:class:`ConfigError`) models whose source or target vocabularies differ from
    the first model's: their token ids would mean other pieces."""
    first = tokenizers[0]
    for tok, origin in zip(tokenizers[1:], origins[1:]):
        for side in ("src", "tgt"):
            mine, theirs = _pieces(getattr(first, side)), _pieces(getattr(tok, side))
            if mine == theirs:
                continue
            which = "source" if side == "src" else "target"
            if len(mine) != len(theirs):
                detail = f"{len(theirs):,} pieces against {len(mine):,}"
            else:
                at = next(i for i, (a, b) in enumerate(zip(mine, theirs)) if a != b)
                detail = f"piece {at} is {theirs[at]!r} against {mine[at]!r}"
            raise ConfigError(
                f"cannot ensemble {origin} with {origins[0]}: their {which} vocabularies "
                f"differ ({detail}); an ensemble needs models trained with the same "
                "sentencepiece models (the same data and vocabulary settings)"
            )


class _Memories:
    """Each model's encoder output, reordered together."""

    def __init__(self, parts: list):
        self.parts = parts

    def reorder(self, index: Tensor, cached: bool = False) -> _Memories:
        return _Memories([m.reorder(index, cached=cached) for m in self.parts])

    def shared_by(self, group: int) -> _Memories:
        return _Memories([m.shared_by(group) for m in self.parts])


class _States:
    """Each model's decoding cache, reordered together."""

    def __init__(self, parts: list):
        self.parts = parts

    def reorder(self, index: Tensor, source: bool | Tensor = True, in_place: bool = False) -> None:
        for s in self.parts:
            s.reorder(index, source=source, in_place=in_place)


class Ensemble(nn.Module):
    """Several models decoded as one (see the module's docstring)."""

    def __init__(self, models: Sequence[nn.Module], mode: str = "linear"):
        super().__init__()
        if not models:
            raise ConfigError("an ensemble needs at least one model")
        if mode not in MODES:
            raise ConfigError(f"unknown ensemble mode {mode!r}: {' or '.join(MODES)}")
        self.members = nn.ModuleList(models)
        self.mode = mode

    @property
    def needs_src_words(self) -> bool:
        return any(getattr(m, "needs_src_words", False) for m in self.members)

    def can_share_source(self) -> bool:
        """Whether every member can take a source shared by a beam's hypotheses."""
        return all(getattr(m, "can_share_source", lambda: False)() for m in self.members)

    def _combine(self, logps: list[Tensor]) -> Tensor:
        if len(logps) == 1:
            return logps[0]
        stacked = torch.stack([x.float() for x in logps])
        if self.mode == "linear":
            return torch.logsumexp(stacked, 0) - math.log(len(logps))
        return stacked.mean(0).log_softmax(-1)

    def _words(self, model: nn.Module, src_words: Tensor | None) -> Tensor | None:
        return src_words if getattr(model, "needs_src_words", False) else None

    def forward(self, src: Tensor, tgt_in: Tensor, src_words: Tensor | None = None) -> Tensor:
        """The combined log-probabilities (B, T, V) of teacher-forced targets (scoring); one
        model's own output (its logits) when there is one."""
        if len(self.members) == 1:
            return self.members[0](src, tgt_in, src_words)
        logps = [
            m(src, tgt_in, self._words(m, src_words)).float().log_softmax(-1) for m in self.members
        ]
        return self._combine(logps)

    def start(self, src: Tensor, src_words: Tensor | None = None) -> tuple[_Memories, _States]:
        started = [m.start(src, self._words(m, src_words)) for m in self.members]  # type: ignore[operator]
        return _Memories([m for m, _ in started]), _States([s for _, s in started])

    def step(self, tokens: Tensor, memory: _Memories, state: _States) -> Tensor:
        return self._combine(
            [
                m.step(tokens, mem, st)  # type: ignore[operator]
                for m, mem, st in zip(self.members, memory.parts, state.parts)
            ]
        )
