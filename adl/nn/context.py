"""What every layer sees besides its input: masks, the source, positions and the decoding cache.

One calling convention for all layers: ``layer(x, ctx) -> y`` with ``x`` of shape (B, T, D).
In a full pass ``ctx.state`` is ``None``. In incremental decoding ``ctx.state`` holds each
layer's cache and ``x`` holds only the new positions (usually one), which start at
``ctx.offset``.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import torch
from torch import Tensor


@dataclass
class Memory:
    """The encoder's output for source attention.

    ``top`` is the encoder's final output U^{L_s}; ``blocks`` are U^0 .. U^n, the input of the
    encoder's top-level ``repeat`` and the output of each of its copies (empty without a
    repeat); ``pad`` marks padding (B, S), or is None when nothing is padded.

    ``allowed`` is (B, 1, 1, S), True where a source position may be attended, shaped for
    attention scores, or None when nothing is padded: made once per memory and shared by
    every source attention (in decoding, once per sentence rather than at every step). It is
    made with the memory, not on first use, so that a compiled decoding step reads it as
    an input (:mod:`adl.runtime.decode.compiled`).

    ``group``: the decoder rows each row of the memory serves, consecutive (a beam's
    hypotheses of one sentence: :meth:`shared_by`). 1, the default: one decoder row a
    memory row. With more, only layers that say so (``Layer.shares_source``) read it, from
    what they cached of the source before (:meth:`level` refuses)."""

    top: Tensor
    pad: Tensor | None
    blocks: list[Tensor] = field(default_factory=list)
    masks: dict[torch.dtype, Tensor] = field(default_factory=dict, repr=False, compare=False)
    group: int = field(default=1, compare=False)
    cached: bool = field(default=False, compare=False)
    allowed: Tensor | None = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        self.allowed = None if self.pad is None else ~self.pad[:, None, None, :]

    def additive(self, dtype: torch.dtype) -> Tensor | None:
        """:attr:`allowed` as the additive mask (0 where allowed, -inf elsewhere) that the
        fused attention makes of a boolean mask at every call (the same values: the outputs
        are equal bit for bit), made once per memory and dtype: two operators fewer per
        source attention and decoding step."""
        allowed = self.allowed
        if allowed is None:
            return None
        if dtype not in self.masks:
            zeros = torch.zeros(allowed.shape, dtype=dtype, device=allowed.device)
            self.masks[dtype] = zeros.masked_fill_(~allowed, float("-inf"))
        return self.masks[dtype]

    def level(self, index: int | None) -> Tensor:
        if self.group != 1:
            raise RuntimeError(
                f"a source shared by {self.group} decoder rows is read by a layer that does "
                "not share it (its class's shares_source is False)"
            )
        if self.cached:
            raise RuntimeError(
                "the source's states were left behind when rows left the batch: only layers "
                "that cached their keys and values (shares_source) may read this memory"
            )
        return self.top if index is None else self.blocks[index]

    def reorder(self, index: Tensor, cached: bool = False) -> Memory:
        """The rows ``index`` of the memory (the additive masks made so far follow them).

        ``cached``: every layer that reads the source holds its keys and values already (a
        decoding step has run, and each such layer's class says ``shares_source``): the
        padding and the masks follow, the source's states stay as they were, and
        :meth:`level` refuses from then on. A search that drops finished sentences then
        copies none of the encoder's outputs (as many tensors as the encoder has blocks)."""
        pick = lambda t: t.index_select(0, index)
        cached = cached or self.cached
        return Memory(
            self.top if cached else pick(self.top),
            None if self.pad is None else pick(self.pad),
            self.blocks if cached else [pick(b) for b in self.blocks],
            {dtype: pick(mask) for dtype, mask in self.masks.items()},
            self.group,
            cached,
        )

    def shared_by(self, group: int) -> Memory:
        """The same rows, each serving ``group`` consecutive decoder rows (nothing copied)."""
        return dataclasses.replace(self, group=group)


@dataclass
class JointLayout:
    """Where the source sits in a joint [source; target] stream: its padded width and its
    padding. It plays the part of the encoder's memory in a joint model's decoding."""

    source_length: int
    source_pad: Tensor  # (B, S)

    def reorder(self, index: Tensor, cached: bool = False) -> JointLayout:
        """Keep batch rows ``index``. ``cached`` is :meth:`Memory.reorder`'s: a joint model
        keeps no source apart from its stream, so its padding always follows the rows."""
        return JointLayout(self.source_length, self.source_pad.index_select(0, index))


class Prefix:
    """Keys and values of the target prefix, (B, H, t, d) each, in buffers that grow by
    doubling: a decoding step writes only its new positions. (Concatenating the cache with
    each step's keys copied the whole prefix every step; bench/decode.py --parts prefix
    measures the two.) ``append`` returns views of the positions so far, valid until the
    next ``append`` or ``reorder``; ``reorder`` keeps batch rows, as
    :meth:`DecodeState.reorder` asks. In place, a reorder that keeps every row (a beam's
    step) copies only the rows that change; otherwise it copies the positions so far into a
    second pair of buffers that the two then trade (a fresh allocation every step of a beam
    search cost more than the copy)."""

    def __init__(self) -> None:
        self.k: Tensor | None = None
        self.v: Tensor | None = None
        self.spare: tuple[Tensor, Tensor] | None = None
        self.length = 0

    def append(self, k: Tensor, v: Tensor) -> tuple[Tensor, Tensor]:
        end = self.length + k.size(2)
        if self.k is None or self.v is None or end > self.k.size(2):
            room = max(end, 2 * (0 if self.k is None else self.k.size(2)), 16)
            grown = []
            for old, new in ((self.k, k), (self.v, v)):
                b, h, _, d = new.shape
                buffer = new.new_empty(b, h, room, d)
                if old is not None:
                    buffer[:, :, : self.length] = old[:, :, : self.length]
                grown.append(buffer)
            self.k, self.v = grown
            self.spare = None
        self.k[:, :, self.length : end] = k
        self.v[:, :, self.length : end] = v
        self.length = end
        return self.k[:, :, :end], self.v[:, :, :end]

    def reorder(self, index: Tensor, in_place: bool = False, moves: RowMoves | None = None) -> None:
        """Keep rows ``index``; ``moves``: the rows that move, shared by every layer's cache
        (an in-place reorder)."""
        if self.k is None or self.v is None:
            return
        rows, used = index.numel(), self.length
        if in_place and rows == self.k.size(0):
            written = (self.k[:, :, :used], self.v[:, :, :used])
            move_rows(written, (moves or RowMoves(index)).found)
            return
        spare = self.spare
        if spare is None or spare[0].size(0) != rows:
            spare = (
                self.k.new_empty(rows, *self.k.shape[1:]),
                self.v.new_empty(rows, *self.v.shape[1:]),
            )
        for old, new in zip((self.k, self.v), spare):
            torch.index_select(old[:, :, :used], 0, index, out=new[:, :, :used])
        self.spare = (self.k, self.v) if self.k.size(0) == rows else None
        self.k, self.v = spare


def move_rows(buffers: tuple[Tensor, ...], moves: tuple[Tensor, Tensor] | None) -> None:
    """A reorder that keeps every row, in place: only the rows that take another row's
    contents are copied (a beam search keeps most hypotheses in their rows:
    :func:`adl.runtime.decode.search.in_place`). ``moves``: (moved rows, their sources), as
    :attr:`RowMoves.found` gives them, or None when no row moves."""
    if moves is None:
        return
    moved, source = moves
    for buffer in buffers:
        buffer.index_copy_(0, moved, buffer.index_select(0, source))


class StaticPrefix:
    """Keys and values of the target prefix in buffers of a fixed number of positions,
    (B, H, capacity, d) each, that a decoding step writes at the state's position (a
    tensor, :attr:`DecodeState.position`), for a compiled step (:meth:`DecodeState.make_static`).

    Two ways to read them. ``whole`` (CUDA graphs, which replay one shape): a step attends
    to the whole buffers, the positions not yet written masked (:meth:`DecodeState.key_mask`),
    so that its shapes and the Python values it reads stay the same from one step to the
    next; the buffers start zeroed (a masked key's weight is exactly 0, and 0 times an
    unwritten value must not be NaN). Otherwise a step attends to the positions written so
    far (views of the buffers, as long as the state's ``offset`` says: a dynamic size of
    the compiled graph), and a reorder copies only those: on a CPU, attending to a whole
    buffer about twice as long as the translation and copying it whole at every reorder
    cost more than the compiled step saved (:mod:`adl.runtime.decode.compiled`)."""

    def __init__(self, capacity: int, state: DecodeState) -> None:
        self.capacity = capacity
        self.state = state
        self.k: Tensor | None = None
        self.v: Tensor | None = None

    def append(self, k: Tensor, v: Tensor) -> tuple[Tensor, Tensor]:
        state = self.state
        assert state.position is not None  # a static state's
        if self.k is None or self.v is None:
            b, h, _, d = k.shape
            # whole buffers are read masked: zeroed, so that 0 x an unwritten value is 0
            self.k, self.v = (
                self._buffer((t.new_zeros if state.whole else t.new_empty)(b, h, self.capacity, d))
                for t in (k, v)
            )
        at = state.position + torch.arange(k.size(2), device=k.device)
        self.k.index_copy_(2, at, k)
        self.v.index_copy_(2, at, v)
        if state.whole:
            return self.k, self.v
        written = state.offset + k.size(2)
        return self.k[:, :, :written], self.v[:, :, :written]

    def reorder(self, index: Tensor, in_place: bool = False, moves: RowMoves | None = None) -> None:
        """Keep rows ``index``, as :meth:`Prefix.reorder`: the whole buffers where the step
        reads them whole, else the positions written so far."""
        if self.k is None or self.v is None:
            return
        used = self.capacity if self.state.whole else self.state.offset
        if in_place and index.numel() == self.k.size(0):
            move_rows((self.k[:, :, :used], self.v[:, :, :used]), (moves or RowMoves(index)).found)
            return
        if self.state.whole:
            self.k, self.v = (self._buffer(t.index_select(0, index)) for t in (self.k, self.v))
            return
        kept = []
        for old in (self.k, self.v):
            new = old.new_empty(index.numel(), *old.shape[1:])
            torch.index_select(old[:, :, :used], 0, index, out=new[:, :, :used])
            kept.append(self._buffer(new))
        self.k, self.v = kept

    @staticmethod
    def _buffer(t: Tensor) -> Tensor:
        """On a GPU, a buffer a CUDA graph may write in place: its address is marked static
        (else torch.compile's CUDA graphs skip a step that mutates an input; a new buffer,
        after sentences leave the batch, is recorded anew)."""
        if t.is_cuda:
            torch._dynamo.mark_static_address(t)
        return t


class RowMoves:
    """The rows of an in-place reorder by ``index`` that take another row's contents, and
    the rows they take them from: found on first use (it reads the index on the host, see
    :meth:`DecodeState.reorder`) and then shared by every layer's cache (where each layer
    found them again: five operators a layer and step, bench/decode_profile.py)."""

    def __init__(self, index: Tensor) -> None:
        self.index = index

    @cached_property
    def found(self) -> tuple[Tensor, Tensor] | None:
        """(moved rows, their sources), or None when no row moves."""
        index = self.index
        moved = index.ne(torch.arange(index.numel(), device=index.device)).nonzero()
        if not moved.numel():
            return None
        moved = moved.squeeze(1)
        return moved, index.index_select(0, moved)


class DecodeState:
    """The incremental-decoding cache: dicts of tensors per stateful layer, batch first.

    ``of(layer)`` holds what a layer keeps of the target prefix (keys and values of the
    positions so far); ``of_source(layer)`` what it computed from the source alone (the
    source's keys and values), which is the same for every hypothesis of a sentence."""

    def __init__(self) -> None:
        self.cache: dict[int, dict[str, Any]] = {}
        self.source: dict[int, dict[str, Any]] = {}
        self.offset = 0  # positions already decoded
        # a static cache (make_static): its number of positions, the offset as a tensor, and
        # whether a step reads the whole buffers
        self.capacity: int | None = None
        self.position: Tensor | None = None
        self.whole = False

    def make_static(self, capacity: int, device: torch.device | str, whole: bool = False) -> None:
        """Hold the target prefix in buffers of ``capacity`` positions
        (:class:`StaticPrefix`), before the first step; positional layers read
        :attr:`position`. ``whole``: self-attention layers attend to the whole buffers with
        :meth:`key_mask`, and every step has the same shapes (CUDA graphs); else to the
        positions written so far."""
        if self.cache or self.offset:
            raise RuntimeError("a decoding state becomes static before its first step")
        self.capacity = capacity
        self.position = torch.zeros((), dtype=torch.long, device=device)
        self.whole = whole

    @property
    def static(self) -> bool:
        return self.capacity is not None

    def prefix(self) -> Prefix | StaticPrefix:
        """A new cache of a self-attention layer's keys and values."""
        if self.capacity is None or self.position is None:
            return Prefix()
        return StaticPrefix(self.capacity, self)

    def key_mask(self, queries: int, keys: int, device: torch.device) -> Tensor:
        """(1, 1, queries, keys): True where query i (at position + i) may see a key of a
        static cache (the first ``keys`` positions): the keys written so far, its own
        included."""
        assert self.position is not None
        q = self.position + torch.arange(queries, device=device).unsqueeze(1)
        return (torch.arange(keys, device=device) <= q)[None, None]

    def position_ids(self, length: int, device: torch.device) -> Tensor:
        """(1, length): the positions of a step's inputs, from the tensor of a static state
        (the same values as ``offset``, without reading a Python number)."""
        assert self.position is not None
        return (self.position + torch.arange(length, device=device)).unsqueeze(0)

    def advance(self, positions: int) -> None:
        """Count a step's ``positions`` as decoded."""
        self.offset += positions
        if self.position is not None:
            self.position += positions

    def of(self, layer: torch.nn.Module) -> dict[str, Any]:
        return self.cache.setdefault(id(layer), {})

    def of_source(self, layer: torch.nn.Module) -> dict[str, Any]:
        return self.source.setdefault(id(layer), {})

    def reorder(self, index: Tensor, source: bool | Tensor = True, in_place: bool = False) -> None:
        """Keep batch rows ``index`` (beam search, finished sentences leaving): every cached
        tensor is re-indexed. ``source=False`` leaves what was computed from the source
        alone, for an ``index`` that keeps every row within its sentence (a beam's
        hypotheses changing places), where those rows are all alike; a tensor ``source``
        keeps those rows instead (a source of one row a sentence, shared by the sentence's
        rows: :meth:`Memory.shared_by`). ``in_place``: the prefixes' keys and values copy
        only the rows that change, which costs one read of ``index`` on the host (a
        synchronisation on an accelerator: for a search that reads the device every step
        anyway, as on a CPU)."""
        moves = RowMoves(index)  # the rows that move, found once for every layer's prefix
        for entry in self.cache.values():
            _reorder_entry(entry, index, in_place, moves)
        if source is False:
            return
        rows = source if isinstance(source, Tensor) else index
        for entry in self.source.values():
            _reorder_entry(entry, rows, False, None)


def _reorder_entry(
    entry: dict[str, Any], index: Tensor, in_place: bool, moves: RowMoves | None
) -> None:
    for key, value in entry.items():
        if isinstance(value, Tensor):
            entry[key] = value.index_select(0, index)
        elif isinstance(value, tuple):
            entry[key] = tuple(v.index_select(0, index) for v in value)
        elif isinstance(value, (Prefix, StaticPrefix)):
            value.reorder(index, in_place, moves)


@dataclass
class AttentionRecord:
    """The attention weights one layer applied: (B, H, queries, keys)."""

    layer: str  # where the layer is: "decoder 2[1].2.1 mh_dot_src_att"
    kind: str  # "self" or "source"
    weights: Tensor


@dataclass
class Context:
    role: str  # encoder | decoder | joint
    pad: Tensor | None = None  # (B, T) True at padding of the current stream
    memory: Memory | None = None  # the encoder's output (decoder only)
    state: DecodeState | None = None  # incremental decoding cache, or None
    positions: Tensor | None = None  # (B, T) explicit positions, else offset + t
    blocks: list[Tensor] | None = None  # filled by the top-level repeat (encoder)
    joint: JointLayout | None = None  # the source's place in a joint stream
    extra: dict[str, Any] = field(default_factory=dict)  # runtime-supplied inputs by name
    record: list[AttentionRecord] | None = None  # when set, attention layers add their weights

    def record_attention(self, layer: Any, kind: str, weights: Tensor) -> None:
        """Record a layer's attention weights (B, H, T, S) when recording is on."""
        if self.record is not None:
            if weights.dim() == 3:
                weights = weights.unsqueeze(0)
            self.record.append(
                AttentionRecord(
                    getattr(layer, "position", type(layer).__name__), kind, weights.detach()
                )
            )

    @property
    def source(self) -> Memory:
        """The encoder's output, which a source attention reads (a decoder always has it)."""
        if self.memory is None:
            raise RuntimeError(f"a source attention in the {self.role}, which has no source")
        return self.memory

    @property
    def offset(self) -> int:
        return self.state.offset if self.state is not None else 0

    @property
    def causal(self) -> bool:
        return self.role != "encoder"

    def position_ids(self, length: int, device: torch.device) -> Tensor:
        """(B or 1, T) positions of the current input."""
        if self.positions is not None:
            return self.positions
        if self.state is not None and self.state.static:
            return self.state.position_ids(length, device)
        return torch.arange(self.offset, self.offset + length, device=device).unsqueeze(0)

    def key_padding(self) -> Tensor | None:
        """(B, 1, 1, T) True where a key may be attended, or None when nothing is padded."""
        if self.pad is None or self.state is not None or not bool(self.pad.any()):
            return None
        return ~self.pad[:, None, None, :]

    def zero_padding(self, x: Tensor) -> Tensor:
        """Padding positions set to zero (before a layer that mixes neighbouring positions)."""
        if self.pad is None or self.state is not None:
            return x
        return x.masked_fill(self.pad.unsqueeze(-1), 0.0)
