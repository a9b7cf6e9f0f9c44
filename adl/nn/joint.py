"""The decoder-only joint model of Fonollosa et al. (2019) over a [source; target] stream."""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor, nn

from .context import Context, DecodeState, JointLayout
from .model import Network, init_parameters, record_attention

SOURCE, TARGET = 0, 1


class JointModel(nn.Module):
    """One network over ``[x; y]``: per-side positions from 0, a learned language embedding
    per side, source positions attending to the source, target positions causal and seeing
    the whole source. ``forward(src, tgt_in)`` gives logits (B, T, V) at the target positions
    only (the loss is on target tokens only); decoding encodes the source once as a prefix
    and then steps through the target with the same ``start``/``step`` interface as
    :class:`~adl.nn.model.Seq2Seq`."""

    def __init__(
        self,
        network: Network,
        src_vocab: int,
        tgt_vocab: int,
        d_model: int,
        pad_id: int = 0,
        tie_embeddings: bool = False,
        share_embeddings: bool = False,
        spec: Any = None,
    ):
        super().__init__()
        self.network = network
        self.pad_id, self.d_model = pad_id, d_model
        self.src_embed = nn.Embedding(src_vocab, d_model, padding_idx=pad_id)
        self.tgt_embed = (
            self.src_embed
            if share_embeddings
            else nn.Embedding(tgt_vocab, d_model, padding_idx=pad_id)
        )
        self.language = nn.Embedding(2, d_model)  # one vector per side
        self.output = nn.Linear(network.d_out, tgt_vocab)
        self.spec = spec
        init_parameters(self, [self.src_embed, self.tgt_embed], d_model, pad_id)
        nn.init.normal_(self.language.weight, 0.0, d_model**-0.5)
        if tie_embeddings:
            self.output.weight = self.tgt_embed.weight

    _recording: list | None = None

    @torch.no_grad()
    def attention(self, src: Tensor, tgt_in: Tensor, src_words: Tensor | None = None) -> list:
        """Attention weights of every layer over the joint stream (see Seq2Seq.attention)."""
        return record_attention(self, src, tgt_in, src_words)

    @property
    def needs_src_words(self) -> bool:
        return any(getattr(m, "reads_src_words", False) for m in self.modules())

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

    def step(self, tokens: Tensor, memory: JointLayout, state: DecodeState) -> Tensor:
        if tokens.dim() == 1:
            tokens = tokens.unsqueeze(1)
        return self.decode(tokens, memory, state)[:, -1].log_softmax(-1)
