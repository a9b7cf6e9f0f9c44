"""The decoder-only joint model of Fonollosa et al. (2019) over a [source; target] stream."""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor, nn

from .context import Context, DecodeState, JointLayout
from .model import Network, TranslationModel

SOURCE, TARGET = 0, 1


class JointModel(TranslationModel):
    """One network over ``[x; y]``: per-side positions from 0, a learned language embedding
    per side, source positions attending to the source, target positions causal and seeing
    the whole source. ``forward(src, tgt_in)`` gives logits (B, T, V) at the target positions
    only (the loss is on target tokens only); decoding encodes the source once as a prefix
    and then steps through the target with the same ``start``/``step`` interface as
    :class:`~adl.nn.model.Seq2Seq`."""

    network: Network

    def __init__(
        self, network: Network, src_vocab: int, tgt_vocab: int, d_model: int, **options: Any
    ):
        """``options``: ``pad_id``, ``tie_embeddings``, ``share_embeddings``, ``spec`` (see
        :class:`TranslationModel`)."""
        super().__init__({"network": network}, src_vocab, tgt_vocab, d_model, **options)
        nn.init.normal_(self.language.weight, 0.0, d_model**-0.5)

    def side_embeddings(self) -> None:
        self.language = nn.Embedding(2, self.d_model)  # one vector per side

    def _source(self, src: Tensor) -> Tensor:
        return self.src_embed(src) + self.language.weight[SOURCE]

    def _target(self, tgt: Tensor) -> Tensor:
        return self.tgt_embed(tgt) + self.language.weight[TARGET]

    def forward(self, src: Tensor, tgt_in: Tensor, src_words: Tensor | None = None) -> Tensor:
        S, T = src.size(1), tgt_in.size(1)
        layout = JointLayout(S, src.eq(self.pad_id))
        x = torch.cat([self._source(src), self._target(tgt_in)], dim=1)  # (B, S + T, D)
        positions = torch.cat([torch.arange(S), torch.arange(T)]).to(src.device).unsqueeze(0)
        ctx = Context(
            "joint",
            pad=torch.cat([layout.source_pad, tgt_in.eq(self.pad_id)], 1),
            positions=positions,
            joint=layout,
            record=self._recording,
        )
        if src_words is not None:
            ctx.extra["words"] = src_words
        z = self.network(x, ctx)
        return self.output(z[:, S:])  # target positions

    # --- incremental decoding ------------------------------------------------------------
    def start(
        self, src: Tensor, src_words: Tensor | None = None
    ) -> tuple[JointLayout, DecodeState]:
        """Run the source through the network once, filling the cache."""
        S = src.size(1)
        layout = JointLayout(S, src.eq(self.pad_id))
        state = DecodeState()
        positions = torch.arange(S, device=src.device).unsqueeze(0)
        ctx = Context(
            "joint", pad=layout.source_pad, positions=positions, joint=layout, state=state
        )
        self.network(self._source(src), ctx)
        state.offset = S
        return layout, state

    def decode(self, tgt_in: Tensor, memory: JointLayout, state: DecodeState) -> Tensor:
        """Logits for the next target positions ``tgt_in`` after those already decoded."""
        T = tgt_in.size(1)
        first = state.offset - memory.source_length
        positions = torch.arange(first, first + T, device=tgt_in.device).unsqueeze(0)
        ctx = Context("joint", positions=positions, joint=memory, state=state)
        z = self.network(self._target(tgt_in), ctx)
        state.offset += T
        return self.output(z)
