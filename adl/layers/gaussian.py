"""Hard-coded Gaussian attention (You et al., 2020): fixed heads N(j; i + o, σ) over the values."""

from __future__ import annotations

from typing import Annotated, Literal

from ..bands import cross_taps, gaussian_taps
from ..limits import MAX_HEADS, MAX_WINDOW
from ..registry import DECODER, ENCODER, LayerInput, LayerOutput, Refusal, layer
from ..types import INPUT, CountType, IntType, PositiveFloatType, Size, aka
from .attention import EncoderBlock

Offset = Annotated[int, IntType(-MAX_WINDOW, MAX_WINDOW)] | Literal["l", "c", "r"]
# the density's peak 1/(σ√2π) stays a sane weight (below 40), and its tails representable
Sigma = Annotated[float, PositiveFloatType(0.01, 10_000.0), aka("σ", "std")]
HeadCount = Annotated[int, CountType(MAX_HEADS)]
ValueSize = Annotated[Size | None, aka("att_size", "d_p")]


def hardcoded_params(
    d_values: int,
    heads: int | None,
    offsets: tuple,
    num_hidden: int,
    att_num_hidden: int | None,
    layer: str,
) -> int:
    """Value projection and output projection (the only weights of a hard-coded head)."""
    if not offsets:
        raise Refusal(f"'{layer}' needs at least one head offset", hint=f"e.g. {layer}(l, r)")
    if len(offsets) > MAX_HEADS:
        raise Refusal(f"{len(offsets):,} heads are more than the limit of {MAX_HEADS:,}")
    a = att_num_hidden if att_num_hidden is not None else num_hidden
    if (heads or len(offsets)) > a:
        raise Refusal(f"{heads or len(offsets)} heads cannot share {a} value units", at="heads")
    return (d_values * a + a) + (a * num_hidden + num_hidden)


@layer(
    roles=(ENCODER, DECODER),
    why="its heads are centred on positions of one sentence, and a joint stream holds two",
)
def gauss_att(
    h: LayerInput,
    /,
    *offsets: Offset,
    sigma: Sigma = 1.0,
    window: Annotated[int, CountType(MAX_WINDOW)] | None = None,
    index: bool = False,
    heads: HeadCount | None = None,
    num_hidden: Size = INPUT,
    att_num_hidden: ValueSize = None,
) -> LayerOutput:
    """Hard-coded Gaussian self-attention: head h puts ``N(j; i + o_h, σ)`` on position j (the
    raw density, cut at the sentence and padding, not renormalised) and averages the value
    vectors with it. No query or key projections; weights at j > i are zero in a decoder.

    Size: ``num_hidden`` (default: the input size).

    Args:
        offsets: one offset per head: ``l`` (i − 1), ``c`` (i), ``r`` (i + 1) or an integer;
            ``gauss_att(l, r)`` has two heads.
        sigma: standard deviation σ of every head.
        window: keep only the k positions centred on i + o (the convolution form,
            ``window=3`` is the kernel [0.242, 0.399, 0.242]); derived: the whole sentence.
        index: each head takes the value at i + o alone (a binary kernel).
        heads: number of heads, filled by repeating the offsets (the paper duplicates heads
            to fit a model); derived: one per offset.
        num_hidden: output size.
        att_num_hidden: size of the value projection, split as evenly as possible over the
            heads; derived: num_hidden.
    """
    params = hardcoded_params(h.d, heads, offsets, num_hidden, att_num_hidden, "gauss_att")
    a = att_num_hidden if att_num_hidden is not None else num_hidden
    # the banded form's kernel: a weight per value channel and relative position from the
    # leftmost to the rightmost it reaches, the query's own included (adl.nn.gaussian)
    causal = h.role != ENCODER
    reach = [
        r
        for o in offsets
        for r in gaussian_taps(o, sigma, window=window, index=index, causal=causal)
    ]
    reach = reach or [0]  # a decoder head that sees only later positions: an empty kernel
    taps = max(0, max(reach)) + max(0, -min(reach)) + 1
    return LayerOutput(num_hidden, params, buffer_bytes=4 * a * taps)


@layer(attends_source=True)
def gauss_src_att(
    h: LayerInput,
    /,
    *offsets: Offset,
    sigma: Sigma = 1.0,
    ratio: Annotated[
        Annotated[float, PositiveFloatType(0.01, 100.0)] | None, aka("gamma", "γ")
    ] = None,
    heads: HeadCount | None = None,
    num_hidden: Size = INPUT,
    att_num_hidden: ValueSize = None,
    encoder_block: EncoderBlock = "top",
) -> LayerOutput:
    """Hard-coded cross attention: target position i puts ``N(j; ⌊γ·i + o_h⌋, σ)`` on source
    position j, γ the mean source/target length ratio of the training data.

    Size: ``num_hidden`` (default: the input size).

    Args:
        offsets: one offset per head (``l``, ``c``, ``r`` or integers).
        sigma: standard deviation σ.
        ratio: γ; derived: the training data's ratio, which the runtime supplies.
        heads: number of heads, filled by repeating the offsets; derived: one per offset.
        num_hidden: output size.
        att_num_hidden: size of the value projection; derived: num_hidden.
        encoder_block: which encoder states to attend to (see ``mh_dot_src_att``).
    """
    params = hardcoded_params(
        h.source_d, heads, offsets, num_hidden, att_num_hidden, "gauss_src_att"
    )
    table = max(cross_taps(sigma)) + 2  # the density at distances 0 .. reach, then 0
    return LayerOutput(num_hidden, params, buffer_bytes=4 * table)
