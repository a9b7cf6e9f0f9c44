"""Fixed encoder self-attention patterns (Raganato et al., 2020) plus learned heads.

A fixed head's weights depend on positions and the sentence's length only, so each pattern is
computed in its cheapest form, with no (T, T) matrix per batch and nothing but constants kept
for the backward pass:

- cur, prev, next, last: the value at i, i - 1, i + 1, n - 1 (a shifted or gathered copy);
- left (f over 0..i-2): a running sum of (j+1)³·v_j divided by Σ_{k≤i-1} k³;
- end, start (f over the whole sentence, and its mirror): one weighted sum per sentence;
- right (f over i+2..n-1, with f counted from i+2): the only pattern whose weights move with
  i, a (T, T) Toeplitz matrix of (j-i-1)³ cached per length, applied by one einsum.

Up to :data:`DENSE_UNTIL` positions, where a handful of small operations per pattern cost
more than the arithmetic, every head takes its dense weights instead: one (P, T, T) tensor per
sentence length, made once per padded length and kept, applied to all heads by one einsum.

The fixed heads run in float32 under a half-precision model (float64 stays float64).

Word level: the pieces of a word are averaged, the pattern runs over words, and every piece
takes its word's row (the same weights as :func:`adl.patterns.fixed_words`).
:meth:`FixedSelfAttention.weights` builds the dense (B, P, T, T) weights of
:mod:`adl.patterns` (the reference, and what ``adl viz`` draws).
"""

from __future__ import annotations

from functools import lru_cache

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from .. import patterns
from ..errors import InputError
from ..layers.fixed import SEVEN
from .attention import merge_heads, split_heads
from .base import Layer, implements
from .context import Context


def cube_sum(m: Tensor, dtype: torch.dtype) -> Tensor:
    """Σ_{k=1..m} k³ = (m(m+1)/2)² (0 for m ≤ 0)."""
    m = m.clamp(min=0).to(dtype)
    return (m * (m + 1) / 2) ** 2


def inverse(total: Tensor) -> Tensor:
    """1 / total where total > 0, else 0 (an empty span has no weight)."""
    return torch.where(total > 0, 1.0 / total.clamp(min=1.0), torch.zeros_like(total))


@lru_cache(maxsize=64)
def _right_numerators(length: int, dtype: torch.dtype, device: torch.device) -> Tensor:
    """(T, T): (j - i - 1)³ where j ≥ i + 2, else 0."""
    i = torch.arange(length, device=device).unsqueeze(1)
    j = torch.arange(length, device=device).unsqueeze(0)
    cubes = (j - i - 1).to(dtype) ** 3
    return torch.where(j >= i + 2, cubes, torch.zeros((), dtype=dtype, device=device))


DENSE_UNTIL = 32  # padded lengths up to this take the cached dense weights


@lru_cache(maxsize=4 * DENSE_UNTIL)
def _dense(names: tuple[str, ...], length: int, dtype: torch.dtype, device: torch.device) -> Tensor:
    """(length + 1, P, length, length): the weights of each pattern for a sentence of n
    tokens (n = 0 .. length), zero past it (:func:`adl.patterns.fixed`)."""
    out = torch.zeros(length + 1, len(names), length, length, dtype=torch.float64)
    for n in range(1, length + 1):
        for p, name in enumerate(names):
            out[n, p, :n, :n] = patterns.fixed(name, n)
    return out.to(dtype=dtype, device=device)


def pattern(name: str, v: Tensor, n: Tensor) -> Tensor:
    """One fixed head over values (B, T, d), zero from position n_b on, sentence lengths n
    (B,): (B, T, d) (rows past n_b are left for the caller to clear)."""
    B, T, _ = v.shape
    i = torch.arange(T, device=v.device)
    cubes = lambda m: cube_sum(m, v.dtype)  # noqa: E731
    if name == "cur":
        return v
    if name == "prev":
        return F.pad(v[:, :-1], (0, 0, 1, 0))
    if name == "next":
        return F.pad(v[:, 1:], (0, 0, 0, 1))
    if name == "last":
        return v.gather(1, (n - 1).clamp(min=0).view(B, 1, 1).expand(B, T, v.size(2)))
    if name == "right":
        num = torch.einsum("ij,bjd->bid", _right_numerators(T, v.dtype, v.device), v)
        return num * inverse(cubes(n.unsqueeze(1) - i - 2)).unsqueeze(-1)
    if name in ("left", "end"):
        running = torch.cumsum(v * ((i + 1).to(v.dtype) ** 3).view(1, T, 1), 1)  # Σ_{j≤i}
        if name == "end":  # the whole sentence (v is zero past it): every row alike
            return (running[:, -1:] * inverse(cubes(n)).view(B, 1, 1)).expand(B, T, -1)
        return F.pad(running[:, :-2], (0, 0, 2, 0)) * inverse(cubes(i - 1)).view(1, T, 1)
    if name == "start":  # f mirrored: (n - j)³ on position j
        w = (n.unsqueeze(1) - i).clamp(min=0).to(v.dtype) ** 3 * inverse(cubes(n)).unsqueeze(1)
        return torch.einsum("bj,bjd->bd", w, v).unsqueeze(1).expand(B, T, -1)
    raise ValueError(f"unknown pattern {name!r}; patterns are {', '.join(patterns.PATTERNS)}")


def fixed_heads(names: tuple[str, ...], v: Tensor, pad: Tensor | None) -> Tensor:
    """The fixed heads (B, P, T, d) over their values (B, P, T, d), token level."""
    B, P, T, _ = v.shape
    if pad is None:
        n = torch.full((B,), T, device=v.device)
    else:
        n = (~pad).sum(1)
        v = v.masked_fill(pad[:, None, :, None], 0.0)
    if T <= DENSE_UNTIL:
        weights = _dense(names, T, v.dtype, v.device)[n]  # (B, P, T, T)
        return torch.einsum("bpij,bpjd->bpid", weights, v)  # zero past each sentence
    out = torch.stack([pattern(name, v[:, p], n) for p, name in enumerate(names)], 1)
    return out if pad is None else out.masked_fill(pad[:, None, :, None], 0.0)


def word_heads(names: tuple[str, ...], v: Tensor, pad: Tensor | None, words: Tensor) -> Tensor:
    """The fixed heads at word level: each word's pieces averaged (B, P, W, d), the patterns
    over words, each piece given its word's row. ``words`` (B, T): each token's word index."""
    B, P, T, d = v.shape
    real = torch.ones(B, T, dtype=torch.bool, device=v.device) if pad is None else ~pad
    ids = words.masked_fill(~real, 0)
    index = ids.view(B, 1, T, 1).expand(B, P, T, d)
    pieces = v.new_zeros(B, T).scatter_add(1, ids, real.to(v.dtype))  # per word
    pooled = torch.zeros_like(v).scatter_add(2, index, v.masked_fill(~real[:, None, :, None], 0))
    pooled = pooled * inverse(pieces).view(B, 1, T, 1)  # (B, P, W = T at most, d)
    n_words = torch.where(real, ids + 1, 0).amax(1)  # words of each sentence
    word_pad = torch.arange(T, device=v.device) >= n_words.unsqueeze(1)
    out = fixed_heads(names, pooled, word_pad).gather(2, index)
    return out.masked_fill(~real[:, None, :, None], 0.0)


@implements("fixed_self_att")
class FixedSelfAttention(Layer):
    reads_src_words = False

    def __init__(
        self,
        d_in: int,
        patterns: list,
        learned: int,
        unit: str,
        num_hidden: int,
        att_num_hidden: int | None,
        dropout: float,
    ):
        super().__init__()
        self.names = tuple(patterns) or SEVEN
        self.learned, self.unit, self.dropout = learned, unit, dropout
        a = att_num_hidden if att_num_hidden is not None else num_hidden
        self.heads = len(self.names) + learned
        self.head = a // self.heads
        self.value = nn.Linear(d_in, a)
        if learned:
            self.qk = nn.Linear(d_in, 2 * learned * self.head)
        self.out = nn.Linear(a, num_hidden)
        self.reads_src_words = unit == "word"

    def _words(self, ctx: Context) -> Tensor | None:
        words = ctx.extra.get("words")
        if self.unit == "word" and words is None:
            raise InputError(
                "fixed_self_att(unit=word) needs the source's word ids: pass src_words= to the model"
            )
        return words

    def weights(self, batch: int, length: int, pad: Tensor | None, words: Tensor | None) -> Tensor:
        """(B, P, T, T) dense fixed weights of each sentence of the batch (zero over padding),
        from :mod:`adl.patterns`: the reference the layer's forms agree with."""
        lengths = [length] * batch if pad is None else (~pad).sum(1).tolist()
        out = torch.zeros(len(lengths), len(self.names), length, length)
        for b, n in enumerate(lengths):
            if self.unit == "word":
                assert words is not None
                ids = tuple(words[b, :n].tolist())
                w = torch.stack([patterns.fixed_words(p, ids) for p in self.names])
            else:
                w = torch.stack([patterns.fixed(p, n) for p in self.names])
            out[b, :, :n, :n] = w
        return out

    def forward(self, x: Tensor, ctx: Context) -> Tensor:
        B, T, _ = x.shape
        v = split_heads(self.value(x), self.heads)  # (B, H, T, d)
        P = len(self.names)
        words = self._words(ctx)
        vf = v[:, :P]  # the fixed heads, in float32 at least (running sums of cubes)
        vf = vf if vf.dtype in (torch.float32, torch.float64) else vf.float()
        if self.unit == "word":
            assert words is not None
            fixed = word_heads(self.names, vf, ctx.pad, words)
        else:
            fixed = fixed_heads(self.names, vf, ctx.pad)
        parts, heads = [fixed.to(v.dtype)], []
        if ctx.record is not None:
            heads.append(self.weights(B, T, ctx.pad, words).to(x.device))
        if self.learned:
            q, k = (split_heads(t, self.learned) for t in self.qk(x).chunk(2, dim=-1))
            p = self.dropout if self.training else 0.0
            mask = ctx.key_padding()
            if ctx.record is not None:
                scores = (q @ k.transpose(-1, -2)) / q.size(-1) ** 0.5
                if mask is not None:
                    scores = scores.masked_fill(~mask, float("-inf"))
                heads.append(scores.softmax(-1))
            parts.append(
                F.scaled_dot_product_attention(q, k, v[:, P:], attn_mask=mask, dropout_p=p)
            )
        if ctx.record is not None:  # fixed heads, then learned
            ctx.record_attention(self, "self", torch.cat(heads, dim=1))
        return self.out(merge_heads(torch.cat(parts, dim=1)))
