"""PyTorch modules for checked ADL networks. Importing this package registers every module."""

from . import attention, basic, conv, fixed, gaussian, hard, position, recurrent, structure  # noqa: F401
from .base import IMPLEMENTATIONS, Builder, Chain, Layer, implements
from .context import AttentionRecord, Context, DecodeState, JointLayout, Memory
from .joint import JointModel
from .model import Network, Seq2Seq, TranslationModel

__all__ = [
    "AttentionRecord",
    "IMPLEMENTATIONS",
    "Builder",
    "Chain",
    "Context",
    "DecodeState",
    "JointLayout",
    "JointModel",
    "Layer",
    "Memory",
    "Network",
    "Seq2Seq",
    "TranslationModel",
    "implements",
]
