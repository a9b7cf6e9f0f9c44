"""An encoder and a decoder checked together: which encoder block each source attention reads.

``encoder_block=`` names a state of the encoder's top-level ``repeat(n, ...)``: ``top`` (the
encoder's output), an index (0 is the repeat's input, 1..n its copies' outputs, negative
from the end), or ``increasing`` / ``decreasing`` (decoder block i reads encoder block i, or
n + 1 - i). Whether that exists depends on both networks, so it is checked here, by
:func:`adl.check_model`, ``adl compile ENC DEC``, a file that defines both, and the builder.
"""

from __future__ import annotations

from ..registry import Refusal
from .program import CheckedNetwork, Node


def encoder_level(
    block: int | str, encoder_blocks: int | None, decoder_block: int | None, decoder_blocks: int
) -> int | None:
    """The index into U^0 .. U^n a source attention reads (None: the encoder's output).

    ``encoder_blocks`` is None when the encoder is not known (a decoder checked alone): then
    only what the decoder decides is checked. ``decoder_block`` is the copy of the decoder's
    top-level repeat the layer is in (None outside it). Raises :class:`Refusal`."""
    if block == "top":
        return None
    if isinstance(block, str) and decoder_block is None:
        raise Refusal(
            f"encoder_block={block} pairs decoder blocks with encoder blocks, so it must be "
            f"inside the decoder's repeat(n, ...)",
            at="encoder_block",
        )
    n = encoder_blocks
    if n is None:
        return None
    if n == 0:
        raise Refusal(
            f"encoder_block={block} needs an encoder built from repeat(n, ...): this encoder "
            f"has no blocks",
            at="encoder_block",
            hint="use encoder_block=top",
        )
    if isinstance(block, int):
        if not -(n + 1) <= block <= n:
            raise Refusal(
                f"encoder_block={block} is out of range: the encoder has {n} blocks (0 is "
                f"their input, 1..{n} their outputs)",
                at="encoder_block",
            )
        return block % (n + 1)
    if decoder_blocks > n:
        raise Refusal(
            f"encoder_block={block} pairs each of the decoder's {decoder_blocks} blocks with "
            f"an encoder block, but the encoder has {n}",
            at="encoder_block",
            hint=f"give the decoder at most {n} blocks, or the encoder at least {decoder_blocks}",
        )
    assert decoder_block is not None
    return decoder_block if block == "increasing" else n + 1 - decoder_block


def pair_problems(
    decoder: CheckedNetwork, encoder: CheckedNetwork | None
) -> list[tuple[Node, Refusal]]:
    """Every source attention of ``decoder`` whose ``encoder_block`` the encoder (or, when
    it is None, the decoder alone) cannot serve, once per layer."""
    top = decoder.chain.top_repeat
    inside: set[int] = set()
    if top is not None:
        for child in top.children:
            inside.update(id(node) for _, _, node in child.walk())
    enc_blocks = encoder.blocks if encoder is not None else None
    found = []
    for _, _, node in decoder.chain.walk():
        if not node.spec.attends_source or "encoder_block" not in node.args:
            continue
        try:
            encoder_level(
                node.args["encoder_block"],
                enc_blocks,
                1 if id(node) in inside else None,
                decoder.blocks,
            )
        except Refusal as exc:
            found.append((node, exc))
    return found
