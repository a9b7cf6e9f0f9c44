"""``rnn`` (causal; its state is the decoding cache) and ``birnn`` (packed, so padding never
reaches a real position of the backward direction)."""

from __future__ import annotations

from torch import Tensor, nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from .base import Layer, implements
from .context import Context

_CELLS = {"lstm": nn.LSTM, "gru": nn.GRU}


@implements("rnn")
class RNN(Layer):
    def __init__(self, d_in: int, num_hidden: int, cell_type: str):
        super().__init__()
        self.rnn = _CELLS[cell_type](d_in, num_hidden, batch_first=True)

    def forward(self, x: Tensor, ctx: Context) -> Tensor:
        if ctx.state is None:
            # Right padding comes after every real position: it cannot change them.
            return self.rnn(x)[0]  # s_t = f(h_t, s_{t-1})
        cache = ctx.state.of(self)
        # The cache is batch-first like every cache, torch's RNN state is (layers, B, H).
        past = cache.get("state")
        if past is not None:
            past = tuple(s.transpose(0, 1).contiguous() for s in past)
            past = past if isinstance(self.rnn, nn.LSTM) else past[0]
        y, state = self.rnn(x, past)
        state = state if isinstance(state, tuple) else (state,)
        cache["state"] = tuple(s.transpose(0, 1) for s in state)
        return y


@implements("birnn")
class BiRNN(Layer):
    def __init__(self, d_in: int, num_hidden: int, cell_type: str):
        super().__init__()
        self.rnn = _CELLS[cell_type](d_in, num_hidden // 2, batch_first=True, bidirectional=True)

    def forward(self, x: Tensor, ctx: Context) -> Tensor:
        if ctx.pad is None or not bool(ctx.pad.any()):
            return self.rnn(x)[0]  # [forward; backward]
        lengths = (~ctx.pad).sum(1).cpu()
        packed = pack_padded_sequence(x, lengths, batch_first=True, enforce_sorted=False)
        y, _ = pad_packed_sequence(self.rnn(packed)[0], batch_first=True, total_length=x.size(1))
        return y
