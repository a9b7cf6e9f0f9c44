"""Dot-product attention (self and source, multi-head) and MLP attention.

Scores ``Q K^T / √s`` go through torch's fused ``scaled_dot_product_attention``, except
in a decoding step on a CPU (one query a head: :func:`one_query`, plain products). Self-attention
is masked by role: padding keys in an encoder (a (B, 1, 1, S) mask, none when nothing is
padded), later positions in a decoder (``is_causal``, no mask). In incremental decoding
self-attention appends each step's keys and values to its cache, and source attention projects
the encoder states once per sentence.

Local windows (``mh_dot_self_att(window=k)`` in an encoder or a decoder): a decoder's cache
keeps only the last k - 1 keys and values, so a decoding step attends to its whole cache with
no mask (a fused kernel, O(k) per step). A training pass passes the band as a mask to the
fused kernel, which never builds the (T, S) scores (the mask costs T·S bytes a sentence);
from ``BAND_FROM`` (8192) positions on, where that mask grows large, it takes the banded form
:func:`band_attention`, which scores only the k keys of each query ((B, H, T, k): no (T, S)
matrix at all). bench/banded.py measures both forms.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from .. import patterns
from . import retrieval
from .base import Layer, implements
from .context import Context
from .dropout import Dropout


def split_heads(x: Tensor, heads: int) -> Tensor:
    """(B, T, H·d) -> (B, H, T, d)."""
    b, t, _ = x.shape
    return x.view(b, t, heads, -1).transpose(1, 2)


def merge_heads(x: Tensor) -> Tensor:
    """(B, H, T, d) -> (B, T, H·d)."""
    b, h, t, d = x.shape
    return x.transpose(1, 2).reshape(b, t, h * d)


# Windowed training passes of this many positions or more take the banded form. Below it the
# fused kernel with the band as a mask was faster and kept less for the backward pass at every
# length bench/banded.py measured on a CPU (32-512); the (B, T, T) mask only grows as large as
# a layer's activations around T = 40 d.
BAND_FROM = 8192


def band_attention(
    q: Tensor,
    k: Tensor,
    v: Tensor,
    lo: int,
    hi: int,
    scale: float,
    key_ok: Tensor | None = None,
    dropout: float = 0.0,
) -> Tensor:
    """softmax(Q K^T · scale) V where query t (at key position p = S - T + t) sees the keys
    p + lo .. p + hi (lo <= 0 <= hi) that exist and that ``key_ok`` (B, S) allows; a query
    that sees none gets 0 (as the fused kernel gives). q (B, H, T, d), k and v (B, H, S, d).

    The scores are (B, H, T, W), W = hi - lo + 1: one pass over the keys per band position
    (each a shifted view of K and V), never a (T, S) matrix."""
    T, S = q.size(2), k.size(2)
    width = hi - lo + 1
    offset = S - T  # key position of query 0
    left = max(0, -(offset + lo))
    right = max(0, offset + T - 1 + hi - (S - 1))
    kp = F.pad(k, (0, 0, left, right))  # (B, H, left + S + right, d)
    vp = F.pad(v, (0, 0, left, right))
    start = offset + lo + left  # padded index of band position 0 of query 0
    taps = range(width)
    scores = torch.stack([(q * kp[:, :, start + w : start + w + T]).sum(-1) for w in taps], -1)
    scores = scores * scale  # (B, H, T, W)
    j = torch.arange(T, device=q.device).unsqueeze(1) + torch.arange(width, device=q.device)
    j = j + offset + lo  # (T, W): the key position of each band position
    valid = ((j >= 0) & (j < S)).unsqueeze(0)  # (1, T, W)
    if key_ok is not None:
        okp = F.pad(key_ok, (left, right), value=False)
        valid = valid & torch.stack([okp[:, start + w : start + w + T] for w in taps], -1)
    valid = valid.unsqueeze(1)  # (B | 1, 1, T, W)
    seen = valid.any(-1, keepdim=True)
    scores = scores.masked_fill(~valid, float("-inf")).masked_fill(~seen, 0.0)
    p = scores.softmax(-1).masked_fill(~valid, 0.0)  # a query that sees nothing: all 0
    if dropout:
        p = F.dropout(p, dropout)
    out = p[..., 0:1] * vp[:, :, start : start + T]
    for w in taps[1:]:
        out = out + p[..., w : w + 1] * vp[:, :, start + w : start + w + T]
    return out  # (B, H, T, d)


def causal_mask(queries: int, keys: int, offset: int, device: torch.device) -> Tensor:
    """(T, S) True where query ``offset + i`` may see key ``j``: j <= offset + i."""
    q = torch.arange(offset, offset + queries, device=device).unsqueeze(1)
    k = torch.arange(keys, device=device).unsqueeze(0)
    return k <= q


def one_query(q: Tensor, k: Tensor, v: Tensor, mask: Tensor | None, scale: float) -> Tensor:
    """softmax(q K^T · scale + mask) V for a decoding step on a CPU (one query a head and
    row, or a few: a beam's hypotheses of one sentence over its one source), as two batched
    products around a softmax: there the fused kernel's blocking and buffers cost more than
    the work (bench/attention_step.py; a GPU keeps the fused kernel). ``mask``: None,
    boolean (True attends) or additive, broadcast to (B, H, T, S). The keys and values may
    be views of the cache's buffers: the products read them in place (a 4-d matmul would
    copy the prefix every step)."""
    b, h, t, d = q.shape
    s = k.size(2)
    keys, values = k.reshape(b * h, s, d), v.reshape(b * h, s, d)  # views of the buffers
    scores = torch.bmm(q.reshape(b * h, t, d), keys.transpose(1, 2)).view(b, h, t, s)
    scores = scores.mul_(scale)
    if mask is not None:
        if mask.dtype == torch.bool:
            scores = scores.masked_fill_(~mask, float("-inf"))
        else:
            scores = scores.add_(mask)
    p = scores.softmax(-1).view(b * h, t, s)
    return torch.bmm(p, values).view(b, h, t, d)


class DotAttention(Layer):
    """Shared core: projections, heads, scale and dropout of multi-head dot attention.

    ``hard`` (a class setting) says how the layer attends as written: softmax-weighted values,
    or hard retrieval (Xu et al. 2020: one value per head and query, sampled in training, the
    argmax of the scores in inference). ``decode_hard`` overrides that in inference only (eval
    mode): ``True`` retrieves, ``False`` attends softly, ``None`` keeps the layer's own way;
    :func:`adl.nn.hard.set_decode_attention` sets it (Xu et al.'s Table 4)."""

    hard = False

    def __init__(
        self,
        d_q: int,
        d_kv: int,
        heads: int,
        s: float | None,
        num_hidden: int,
        att_num_hidden: int | None,
        dropout: float,
    ):
        super().__init__()
        att = att_num_hidden if att_num_hidden is not None else num_hidden
        self.heads = heads
        self.att = att
        self.scale = 1.0 / math.sqrt(s if s is not None else att // heads)
        self.dropout = dropout
        self.out = nn.Linear(att, num_hidden)
        self.decode_hard: bool | None = None

    @property
    def retrieves(self) -> bool:
        """Whether this forward pass takes one value per head (hard retrieval)."""
        if self.training or self.decode_hard is None:
            return self.hard
        return self.decode_hard

    def probabilities(
        self, q: Tensor, k: Tensor, mask: Tensor | None = None, causal: bool = False
    ) -> Tensor:
        """softmax(Q K^T / √s) (B, H, T, S), computed explicitly (for recording)."""
        scores = (q @ k.transpose(-1, -2)) * self.scale
        if causal:
            mask = causal_mask(q.size(2), k.size(2), k.size(2) - q.size(2), q.device)
        if mask is not None:
            scores = scores.masked_fill(~mask, float("-inf"))
        p = scores.softmax(-1)
        if self.retrieves and not self.training:  # the one position each head takes
            return F.one_hot(scores.argmax(-1), p.size(-1)).to(p.dtype)
        return p

    def attend(
        self,
        q: Tensor,
        k: Tensor,
        v: Tensor,
        mask: Tensor | None = None,
        causal: bool = False,
        group: int = 1,
    ) -> Tensor:
        """softmax(Q K^T / √s) V per head (or hard retrieval), then the output projection.
        ``group``: each row of the keys and values serves that many consecutive rows of the
        queries (one position each: a beam step over a shared source, :meth:`Memory.shared_by
        <adl.nn.context.Memory.shared_by>`); they are attended as that many queries of
        one row, and the output is one row a query again."""
        if group > 1:
            return self._grouped(q, k, v, mask, group)
        if self.retrieves:
            if causal:
                mask = causal_mask(q.size(2), k.size(2), k.size(2) - q.size(2), q.device)
            scores = q @ k.transpose(-1, -2)  # (B, H, T, S): Q K^T
            if self.training:  # sampled from softmax(Q K^T / √s); inference: the argmax,
                scores = scores * self.scale  # which a positive scale does not move
            return self.out(merge_heads(retrieval.retrieve(scores, v, mask, self.training)))
        if q.size(2) == 1 and q.device.type == "cpu" and not self.training and not causal:
            return self.out(merge_heads(one_query(q, k, v, mask, self.scale)))
        p = self.dropout if self.training else 0.0
        o = F.scaled_dot_product_attention(
            q, k, v, attn_mask=mask, dropout_p=p, is_causal=causal, scale=self.scale
        )
        return self.out(merge_heads(o))

    def _grouped(self, q: Tensor, k: Tensor, v: Tensor, mask: Tensor | None, group: int):
        """:meth:`attend` of (n·group, H, 1, d) queries over (n, H, S, d) keys and values."""
        rows, heads, _, d = q.shape
        if q.size(2) != 1 or self.training:
            raise RuntimeError("a shared source serves decoding steps of one position")
        n = rows // group
        if self.retrieves:  # one position a query: each query row gets its own source row
            k, v = (t.repeat_interleave(group, 0) for t in (k, v))
            mask = None if mask is None else mask.repeat_interleave(group, 0)
            return self.attend(q, k, v, mask)
        q = q.reshape(n, group, heads, d).transpose(1, 2)  # (n, H, group, d)
        if q.device.type == "cpu":
            o = one_query(q, k, v, mask, self.scale)
        else:
            o = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, scale=self.scale)
        return self.out(merge_heads(o).reshape(rows, 1, heads * d))


@implements("mh_dot_self_att")
class SelfAttention(DotAttention):
    def __init__(
        self,
        d_in: int,
        heads: int,
        s: float | None,
        num_hidden: int,
        att_num_hidden: int | None,
        dropout: float = 0.0,  # none for hard retrieval (hard_self_att takes no dropout)
        window: int | None = None,
    ):
        super().__init__(d_in, d_in, heads, s, num_hidden, att_num_hidden, dropout)
        self.qkv = nn.Linear(d_in, 3 * self.att)  # [W^Q; W^K; W^V] in one matmul
        self.window = window
        self.banded: bool | None = None  # windows: None picks (BAND_FROM), True/False force

    def forward(self, x: Tensor, ctx: Context) -> Tensor:
        q, k, v = (split_heads(t, self.heads) for t in self.qkv(x).chunk(3, dim=-1))
        band = self.band(ctx)
        if ctx.state is not None:
            cache = ctx.state.of(self)
            if band is not None and self.window is not None:
                if "k" in cache:
                    k = torch.cat([cache["k"], k], dim=2)
                    v = torch.cat([cache["v"], v], dim=2)
                # a window reaches back k - 1 positions: older keys are never seen again
                old = max(k.size(2) - (self.window - 1), 0)
                cache["k"], cache["v"] = k[:, :, old:], v[:, :, old:]
            else:
                if "prefix" not in cache:
                    cache["prefix"] = ctx.state.prefix()
                k, v = cache["prefix"].append(k, v)
        banded = self.banded if self.banded is not None else q.size(2) >= BAND_FROM
        if band is not None and banded and ctx.record is None and not self.retrieves:
            key_ok = None if ctx.pad is None or ctx.state is not None else ~ctx.pad
            p = self.dropout if self.training else 0.0
            return self.out(merge_heads(band_attention(q, k, v, *band, self.scale, key_ok, p)))
        mask, causal = self.mask(ctx, q.size(2), k.size(2), x.device)
        if ctx.record is not None:
            ctx.record_attention(self, "self", self.probabilities(q, k, mask, causal))
        return self.attend(q, k, v, mask, causal)

    def band(self, ctx: Context) -> tuple[int, int] | None:
        """(lo, hi): the window as key offsets from the query, or None (no window, or a joint
        stream, whose mask is not a band)."""
        if self.window is None or ctx.role == "joint":
            return None
        if ctx.causal:
            return -(self.window - 1), 0  # the previous k positions, the query included
        dl, du = patterns.band_limits(self.window)  # i - dl < j < i + du
        return -(dl - 1), du - 1

    def mask(self, ctx: Context, queries: int, keys: int, device: torch.device):
        """(attention mask or None, is_causal) for this role, window and step."""
        if ctx.role == "joint":
            assert ctx.joint is not None  # a joint model always lays out its stream
            q = torch.arange(keys - queries, keys, device=device)
            allowed = patterns.joint_allowed(
                q,
                torch.arange(keys, device=device),
                ctx.joint.source_length,
                self.window,
                ctx.joint.source_pad,
            )
            return allowed.unsqueeze(1), False  # (B, 1, Q, K)
        if not ctx.causal:
            pad = ctx.key_padding()
            if self.window is None:
                return pad, False
            band = patterns.band(queries, self.window).to(device=device, dtype=torch.bool)
            return (band if pad is None else band & pad), False
        if ctx.state is not None and ctx.state.static and self.window is None:
            if queries == 1 and not ctx.state.whole:
                return None, False  # one new position sees every key written so far
            return ctx.state.key_mask(queries, keys, device), False  # the keys written so far
        if queries == 1 and (self.window is None or keys <= self.window):
            return None, False  # one new position sees all (a window's cache holds k - 1)
        if self.window is None:
            if ctx.state is None:
                return None, True
            return causal_mask(queries, keys, keys - queries, device), False
        q = torch.arange(keys - queries, keys, device=device).unsqueeze(1)
        j = torch.arange(keys, device=device).unsqueeze(0)
        return (j <= q) & (j > q - self.window), False  # the previous k positions


class SourceAttention(DotAttention):
    """Attention over encoder states U: queries from the decoder, keys and values from U.
    In a decoding step it reads only the keys and values it cached of the source, so a
    beam's hypotheses can share their sentence's (``shares_source``)."""

    shares_source = True

    def __init__(
        self,
        d_in: int,
        source_d: int,
        level: int | None,
        heads: int,
        s: float | None,
        num_hidden: int,
        att_num_hidden: int | None,
        dropout: float = 0.0,  # none for hard retrieval (hard_src_att takes no dropout)
    ):
        super().__init__(d_in, source_d, heads, s, num_hidden, att_num_hidden, dropout)
        self.level = level  # None: the encoder's output
        self.q = nn.Linear(d_in, self.att)
        self.kv = nn.Linear(source_d, 2 * self.att)

    def keys_values(self, ctx: Context) -> tuple[Tensor, Tensor]:
        if ctx.state is not None:
            cache = ctx.state.of_source(self)
            if "k" not in cache:  # once per sentence, laid out for the steps' reads
                cache["k"], cache["v"] = (t.contiguous() for t in self.project_source(ctx))
            return cache["k"], cache["v"]
        return self.project_source(ctx)

    def project_source(self, ctx: Context) -> tuple[Tensor, Tensor]:
        u = ctx.source.level(self.level)  # (B, S, D_src)
        k, v = self.kv(u).chunk(2, dim=-1)
        return split_heads(k, self.heads), split_heads(v, self.heads)

    def forward(self, x: Tensor, ctx: Context) -> Tensor:
        q = split_heads(self.q(x), self.heads)
        k, v = self.keys_values(ctx)
        mask = ctx.source.allowed
        if ctx.record is not None:
            ctx.record_attention(self, "source", self.probabilities(q, k, mask))
        group = ctx.source.group
        if ctx.state is not None and not self.retrieves:  # a decoding step: made once
            return self.attend(q, k, v, ctx.source.additive(q.dtype), group=group)
        return self.attend(q, k, v, mask, group=group)


@implements("mh_dot_src_att")
class MultiHeadSourceAttention(SourceAttention):
    pass


@implements("dot_src_att")
class SingleHeadSourceAttention(SourceAttention):
    def __init__(
        self,
        d_in: int,
        source_d: int,
        level: int | None,
        s: float | None,
        num_hidden: int,
        dropout: float,
    ):
        super().__init__(d_in, source_d, level, 1, s, num_hidden, None, dropout)


@implements("mlp_src_att")
class MLPSourceAttention(Layer):
    """Bahdanau: S_ij = w_o^T tanh(W_q q_i + W_k k_j); context = softmax(S) U."""

    def __init__(
        self, d_in: int, source_d: int, level: int | None, num_hidden: int | None, dropout: float
    ):
        super().__init__()
        a = num_hidden if num_hidden is not None else d_in
        self.level = level
        self.wq = nn.Linear(d_in, a)
        self.wk = nn.Linear(source_d, a, bias=False)
        self.wo = nn.Linear(a, 1, bias=False)
        self.drop = Dropout(dropout)

    def forward(self, x: Tensor, ctx: Context) -> Tensor:
        u = ctx.source.level(self.level)  # (B, S, D_src)
        if ctx.state is not None:
            cache = ctx.state.of_source(self)
            if "k" not in cache:
                cache["k"] = self.wk(u)
            k = cache["k"]
        else:
            k = self.wk(u)
        scores = self.wo(torch.tanh(self.wq(x).unsqueeze(2) + k.unsqueeze(1))).squeeze(-1)
        if ctx.source.pad is not None:  # (B, T, S)
            scores = scores.masked_fill(ctx.source.pad.unsqueeze(1), float("-inf"))
        probs = scores.softmax(-1)
        ctx.record_attention(self, "source", probs.unsqueeze(1))
        return self.drop(probs) @ u  # softmax(S) U
