"""Whole models: a network module per role, what every model shares, and the
encoder-decoder ``Seq2Seq`` (the joint model is in :mod:`adl.nn.joint`)."""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor, nn

from .base import Chain
from .context import Context, DecodeState, Memory


class Network(nn.Module):
    """One built network (encoder or decoder) with its sizes."""

    def __init__(self, chain: Chain, role: str, d_in: int, d_out: int, blocks: int):
        super().__init__()
        self.chain = chain
        self.role = role
        self.d_in, self.d_out = d_in, d_out
        self.blocks = blocks  # copies of the top-level repeat (encoder blocks offered)

    def forward(self, x: Tensor, ctx: Context) -> Tensor:
        return self.chain(x, ctx)


class TranslationModel(nn.Module):
    """What every whole model has: its networks, the embeddings ``E_src`` and ``E_tgt`` (one
    table with ``share_embeddings``), the output layer ``W_o, b_o`` over the last network
    (tied to ``E_tgt`` with ``tie_embeddings``), their initialisation, attention recording
    and decoding one step at a time. A subclass gives ``forward``, ``start`` and ``decode``.

    ``networks`` are registered first, in their order, then the embeddings, those of
    :meth:`side_embeddings`, and the output layer: the order fixes how the parameters are
    initialised (and a checkpoint's parameter order), so a model's weights depend only on the
    seed. ``spec`` is everything needed to rebuild the model (see :func:`adl.build`)."""

    def __init__(
        self,
        networks: dict[str, Network],
        src_vocab: int,
        tgt_vocab: int,
        d_model: int,
        pad_id: int = 0,
        tie_embeddings: bool = False,
        share_embeddings: bool = False,
        spec: Any = None,
    ):
        super().__init__()
        for name, network in networks.items():
            self.add_module(name, network)
        self.pad_id = pad_id
        self.d_model = d_model
        self.src_embed = nn.Embedding(src_vocab, d_model, padding_idx=pad_id)  # E_src
        self.tgt_embed = (
            self.src_embed
            if share_embeddings
            else nn.Embedding(tgt_vocab, d_model, padding_idx=pad_id)
        )  # E_tgt
        self.side_embeddings()
        top = list(networks.values())[-1]
        self.output = nn.Linear(top.d_out, tgt_vocab)  # W_o, b_o
        self.spec = spec
        init_parameters(self, [self.src_embed, self.tgt_embed], d_model, pad_id)
        if tie_embeddings:
            self.output.weight = self.tgt_embed.weight

    def side_embeddings(self) -> None:
        """More embeddings of a subclass, made after E_src and E_tgt (none here)."""

    _recording: list | None = None

    @torch.no_grad()
    def attention(self, src: Tensor, tgt_in: Tensor, src_words: Tensor | None = None) -> list:
        """The attention weights of every attention layer on one forward pass, as
        :class:`~adl.nn.context.AttentionRecord` (layer position, kind, (B, H, T, S))."""
        return record_attention(self, src, tgt_in, src_words)

    @property
    def needs_src_words(self) -> bool:
        """Whether the model reads word ids of the source (word-level fixed attention)."""
        return any(getattr(m, "reads_src_words", False) for m in self.modules())

    def decode(self, tgt_in: Tensor, memory: Any, state: DecodeState) -> Tensor:
        raise NotImplementedError  # pragma: no cover - every model decodes

    def step(self, tokens: Tensor, memory: Any, state: DecodeState) -> Tensor:
        """Log-probabilities (B, V) of the next token after ``tokens`` (B,) or (B, t)."""
        if tokens.dim() == 1:
            tokens = tokens.unsqueeze(1)
        return self.decode(tokens, memory, state)[:, -1].log_softmax(-1)


class Seq2Seq(TranslationModel):
    """``p(y_t | y_<t, x) = softmax(W_o z^L_t + b_o)`` over an ADL encoder and decoder.

    ``forward(src, tgt_in)`` gives logits (B, T, V) for teacher forcing; ``encode`` and
    ``decode`` with a :class:`DecodeState` run the decoder one step (or a few) at a time.
    ``spec`` is everything needed to rebuild the model (see :func:`adl.build`)."""

    encoder: Network
    decoder: Network

    def __init__(
        self,
        encoder: Network,
        decoder: Network,
        src_vocab: int,
        tgt_vocab: int,
        d_model: int,
        **options: Any,
    ):
        """``options``: ``pad_id``, ``tie_embeddings``, ``share_embeddings``, ``spec`` (see
        :class:`TranslationModel`)."""
        super().__init__(
            {"encoder": encoder, "decoder": decoder}, src_vocab, tgt_vocab, d_model, **options
        )

    # --- training ------------------------------------------------------------------------
    def forward(self, src: Tensor, tgt_in: Tensor, src_words: Tensor | None = None) -> Tensor:
        """Logits (B, T, V) of the next target token at every position of ``tgt_in``.

        ``src_words`` (B, S): the index of the word each source token belongs to (from the
        tokenizer's word-start markers), needed when :attr:`needs_src_words`."""
        return self.decode(tgt_in, self.encode(src, src_words))

    def encode(self, src: Tensor, src_words: Tensor | None = None) -> Memory:
        padding = src.eq(self.pad_id)  # (B, S)
        # one look per batch: no padding, no masks (fused attention)
        pad = padding if bool(padding.any()) else None
        ctx = Context("encoder", pad=pad, blocks=[], record=self._recording)
        if src_words is not None:
            ctx.extra["words"] = src_words
        top = self.encoder(self.src_embed(src), ctx)  # U^0 = E_src x
        return Memory(top, pad, ctx.blocks or [])

    def decode(self, tgt_in: Tensor, memory: Memory, state: DecodeState | None = None) -> Tensor:
        """Logits for ``tgt_in``; with a state, ``tgt_in`` holds only the new positions."""
        logits = self.logits(tgt_in, memory, state)
        if state is not None:
            state.advance(tgt_in.size(1))
        return logits

    def logits(self, tgt_in: Tensor, memory: Memory, state: DecodeState | None = None) -> Tensor:
        """:meth:`decode` without counting the positions in ``state`` (a compiled step
        counts them outside its graph: :mod:`adl.runtime.decode.compiled`)."""
        ctx = Context(
            "decoder",
            pad=tgt_in.eq(self.pad_id),
            memory=memory,
            state=state,
            record=self._recording,
        )
        z = self.decoder(self.tgt_embed(tgt_in), ctx)  # Z^0 = E_tgt y
        return self.output(z)  # W_o z^L + b_o

    # --- incremental decoding ------------------------------------------------------------
    def can_share_source(self) -> bool:
        """Whether every layer of the decoder that reads the source can take it as one row a
        sentence shared by the sentence's rows (``Layer.shares_source``): then a beam search
        keeps one copy of a sentence's source, not one a hypothesis
        (:meth:`Memory.shared_by <adl.nn.context.Memory.shared_by>`)."""
        return all(
            getattr(m, "shares_source", False)
            for m in self.decoder.modules()
            if getattr(m, "attends_source", False)
        )

    def start(self, src: Tensor, src_words: Tensor | None = None) -> tuple[Memory, DecodeState]:
        """Encode a batch once and open an empty decoding cache.

        Beam search keeps rows with ``memory = memory.reorder(index)`` and
        ``state.reorder(index)``."""
        return self.encode(src, src_words), DecodeState()


def record_attention(
    model: TranslationModel, src: Tensor, tgt_in: Tensor, src_words: Tensor | None = None
) -> list:
    records: list = []
    model._recording = records
    try:
        model(src, tgt_in, src_words)
    finally:
        model._recording = None
    return records


def init_parameters(
    model: nn.Module, embeddings: list[nn.Embedding], d_model: int, pad_id: int
) -> None:
    """Xavier-uniform projections with zero biases; embeddings N(0, d^-1/2), padding row 0."""
    for module in model.modules():
        if isinstance(module, (nn.Linear, nn.Conv1d)):
            nn.init.xavier_uniform_(module.weight)
            if module.bias is not None:
                nn.init.zeros_(module.bias)
    for emb in {id(e): e for e in embeddings}.values():
        nn.init.normal_(emb.weight, 0.0, d_model**-0.5)
        with torch.no_grad():
            emb.weight[pad_id].zero_()


def count_parameters(module: nn.Module) -> int:
    """Distinct parameters (a tied weight counts once)."""
    return sum(p.numel() for p in module.parameters())
