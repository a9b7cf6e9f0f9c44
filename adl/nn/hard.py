"""Hard retrieval attention (Xu et al., 2020): the layers, and decoding a model the other way.

How a layer retrieves (sampling in training, the argmax in inference) is in
:mod:`adl.nn.retrieval`, which the standard attention's core calls when it retrieves.

The layers share their weights' layout with the standard attention layers, so a model trained
one way decodes the other way (:func:`set_decode_attention`, Xu et al.'s Table 4).
"""

from __future__ import annotations

from torch import nn

from ..errors import error
from .attention import DotAttention, SelfAttention, SourceAttention
from .base import implements
from .retrieval import HardRetrieval, retrieve

__all__ = ["HardRetrieval", "retrieve", "set_decode_attention", "DECODE_MODES"]

DECODE_MODES = ("soft", "hard")


def set_decode_attention(model: nn.Module, mode: str | None) -> None:
    """Decode ``model`` with hard retrieval (``"hard"``) or standard softmax attention
    (``"soft"``) in every dot-product attention of its decoder, self and source, whatever
    they were trained with; ``None`` decodes each as written. Training is unchanged, and so
    is the encoder (Xu et al. 2020, Table 4: soft-trained models decoded hard and the
    reverse). Raises :class:`adl.ADLError` for another mode or a joint model."""
    if mode is not None and mode not in DECODE_MODES:
        raise error(f"decode attention must be soft or hard, not {mode!r}")
    decoder = getattr(model, "decoder", None)
    if decoder is None:
        if mode is None:
            return
        raise error(
            "decode attention modes apply to encoder-decoder models (the decoder's "
            "attention); a joint model has no separate decoder"
        )
    for module in decoder.modules():
        if isinstance(module, DotAttention):
            module.decode_hard = None if mode is None else mode == "hard"


# The hard layers are the standard ones, retrieving: their arguments are the standard
# layers' but for the dropout, which retrieval does without (the constructors' default, 0).


@implements("hard_self_att")
class HardSelfAttention(SelfAttention):
    hard = True  # retrieves (DotAttention.attend); the weights are SelfAttention's


@implements("hard_src_att")
class HardSourceAttention(SourceAttention):
    hard = True  # retrieves (DotAttention.attend); the weights are SourceAttention's
