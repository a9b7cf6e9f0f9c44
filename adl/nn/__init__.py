"""PyTorch modules for checked ADL networks. Importing this package registers every module."""
from . import attention, basic, conv, position, recurrent, structure  # noqa: F401
from .base import IMPLEMENTATIONS, Builder, Chain, Layer, implements
from .context import Context, DecodeState, Memory
from .model import Network, Seq2Seq

__all__ = ["IMPLEMENTATIONS", "Builder", "Chain", "Context", "DecodeState", "Layer", "Memory",
           "Network", "Seq2Seq", "implements"]
