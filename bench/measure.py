"""What the benches share: the device to measure on, waiting for it, the memory autograd
saves, and one layer built from its text."""

from __future__ import annotations

import torch

import adl
from adl.models import build_network

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"  # the default of --device


def sync(device: str) -> None:
    """Waits for the work queued on ``device`` (CUDA runs asynchronously), before a clock."""
    if device.startswith("cuda"):
        torch.cuda.synchronize()


def saved_bytes(fn, parameters: bool = True) -> int:
    """Bytes of the distinct storages autograd saves while ``fn`` runs; ``parameters``:
    counting the parameters it saves too."""
    storages: dict[int, int] = {}

    def pack(t):
        if parameters or not isinstance(t, torch.nn.Parameter):
            s = t.untyped_storage()
            storages[s.data_ptr()] = s.nbytes()
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        fn()
    return sum(storages.values())


def one_layer(text: str, role: str, d: int, heads: int) -> torch.nn.Module:
    """The first layer of the network ``text`` in ``role`` (no dropout), in training mode."""
    program = adl.check(text, role=role, d_model=d, heads=heads, dropout=0.0)
    return build_network(program, program.network)[0].chain.layers[0].train()
