"""The previous release's name of :mod:`adl.runtime.decode.bleu` (it holds sacrebleu's BLEU
and chrF, where ``inference`` said decoding), kept one release: importing it warns."""

import warnings

from adl.runtime.decode.bleu import report, score, signatures

__all__ = ["report", "score", "signatures"]

warnings.warn(
    "adl.runtime.decode.inference is renamed adl.runtime.decode.bleu; the old name goes in the "
    "next release",
    DeprecationWarning,
    stacklevel=2,
)
