"""Layers that combine chains: res, res_d, res_nd, highway, repeat, concat (Domhan §2.2–2.3)."""

from __future__ import annotations

from typing import Annotated, Any

from ..limits import MAX_LAYERS
from ..registry import LayerInput, LayerOutput, Refusal, layer
from ..types import DROPOUT, Chain, CountType, Rate, aka


def keeps_size(h: LayerInput, chain: Any, layer: str, at: str = "chain") -> None:
    """``layer(chain)`` adds the chain's output to its input: both must have one size."""
    if chain.d_out != h.d:
        raise Refusal(
            f"'{layer}' adds the input to the chain's output, but the chain maps "
            f"size {h.d} to {chain.d_out}",
            at=at,
            hint=f"end the chain with 'linear({h.d})' to project back to {h.d}",
        )


@layer()
def res(h: LayerInput, /, chain: Chain) -> LayerOutput:
    """Residual connection: ``res(h_t, l) = h_t + l(h_t)``.

    Size: unchanged; the chain must keep the size.

    Args:
        chain: the chain l.
    """
    keeps_size(h, chain, "res")
    return LayerOutput(h.d)


@layer()
def res_d(h: LayerInput, /, chain: Chain, dropout: Rate = DROPOUT) -> LayerOutput:
    """Residual with dropout: ``res(l -> dropout)``.

    Size: unchanged; the chain must keep the size.

    Args:
        chain: the chain l.
        dropout: dropout on the chain's output.
    """
    keeps_size(h, chain, "res_d")
    return LayerOutput(h.d)


@layer()
def res_nd(h: LayerInput, /, chain: Chain, dropout: Rate = DROPOUT) -> LayerOutput:
    """Pre-norm residual (tensor2tensor's Transformer): ``res(norm -> l -> dropout)``.

    Size: unchanged; the chain must keep the size.

    Args:
        chain: the chain l.
        dropout: dropout on the chain's output.
    """
    keeps_size(h, chain, "res_nd")
    return LayerOutput(h.d, 2 * h.d)


@layer()
def highway(h: LayerInput, /, chain: Chain) -> LayerOutput:
    """Highway connection: ``g ⊗ l(h_t) + (1 − g) ⊗ h_t`` with ``g = σ(W h_t + b)``.

    Size: unchanged; the chain must keep the size.

    Args:
        chain: the chain l.
    """
    keeps_size(h, chain, "highway")
    return LayerOutput(h.d, h.d * h.d + h.d)


@layer()
def repeat(
    h: LayerInput,
    /,
    count: Annotated[int, CountType(MAX_LAYERS), aka("n", "num")],
    chain: Chain,
) -> LayerOutput:
    """``repeat(n, l) = l_1 -> … -> l_n``: n copies of a chain, each with its own weights.

    Size: the chain's output size; with n > 1 the chain must keep the size.

    Args:
        count: the number of copies n.
        chain: the chain l.
    """
    if count > 1 and chain.d_out != h.d:
        raise Refusal(
            f"'repeat' feeds each copy into the next, but the chain maps size "
            f"{h.d} to {chain.d_out}",
            at="chain",
            hint=f"end the chain with 'linear({h.d})' to keep the size",
        )
    return LayerOutput(chain.d_out, 0, repeat=count)


@layer()
def concat(h: LayerInput, /, *chains: Chain) -> LayerOutput:
    """Concatenation of chains run side by side: ``[l_1(h_t); …; l_p(h_t)]``.

    Size: the sum of the chains' output sizes.

    Args:
        chains: the chains l_1 … l_p, each reading the same input.
    """
    if not chains:
        raise Refusal("'concat' needs at least one chain", hint="e.g. concat(id, mlp_att)")
    return LayerOutput(sum(c.d_out for c in chains))
