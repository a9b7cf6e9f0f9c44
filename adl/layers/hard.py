"""Hard retrieval attention (Xu et al., 2020): each head attends to one position.

The rules are dot attention's (:mod:`.attention`): the same arguments, sizes and
parameters, without the dropout on attention weights (there are none to drop) or the local
window; what differs is what the modules of :mod:`adl.nn.hard` do with the scores."""

from __future__ import annotations

from ..registry import DECODER, ENCODER, variant
from .attention import mh_dot_self_att, mh_dot_src_att

hard_self_att = variant(
    mh_dot_self_att,
    "hard_self_att",
    """Hard retrieval self-attention: scores ``Q K^T / √s`` as dot attention; in training each
    head samples one key from ``softmax`` and returns its value (gradients pass straight
    through to the probabilities); in inference it takes the value at ``argmax`` of the scores.""",
    drop=("dropout", "window"),
    roles=(ENCODER, DECODER),
    why="it is defined for one sentence at a time",
)

hard_src_att = variant(
    mh_dot_src_att,
    "hard_src_att",
    """Hard retrieval attention over the source (cross attention): one source position per
    head, sampled in training, the argmax of the scores in inference.""",
    drop=("dropout",),
    attends_source=True,
)
