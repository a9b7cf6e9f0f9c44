"""Mixed precision that fits the device: ``train.precision`` = auto | fp32 | bf16 | fp16.

``auto`` on a CUDA device takes bfloat16 autocast where the GPU computes in bfloat16
natively (Ampere and later: ``torch.cuda.is_bf16_supported(including_emulation=False)``),
else float16 autocast with a gradient scaler where the GPU has fast float16 (tensor cores,
compute capability 7.0 and later: V100, T4, RTX 20xx; and the P100, 6.0), else float32. On
a CPU ``auto`` is float32; ``bf16`` (and ``fp16``) may still be asked for there: torch
autocasts on the CPU too, so the tests run the same code a GPU run takes.

One code path serves every choice: :meth:`Precision.autocast` is a no-op context for fp32,
and :meth:`Precision.scaler` is a ``torch.amp.GradScaler`` that is disabled (its ``scale``,
``unscale_``, ``step`` and ``update`` pass through) unless the precision is fp16.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import nullcontext
from dataclasses import dataclass

import torch

from adl.runtime.errors import ConfigError

PRECISIONS = ("auto", "fp32", "bf16", "fp16")
DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}


@dataclass(frozen=True)
class Capability:
    """What a device computes fast: the answers :func:`select` decides by."""

    bf16: bool  # native bfloat16 arithmetic
    fp16: bool  # fast float16 arithmetic (tensor cores)
    name: str = ""  # the device's name, for the log


def cuda_capability(device: torch.device) -> Capability:
    """The capability of a CUDA device, asked of torch. (CUDA only: never run by the
    CPU tests, which pass their own answers to :func:`select`.)"""
    with torch.cuda.device(device):
        bf16 = torch.cuda.is_bf16_supported(including_emulation=False)
    major, minor = torch.cuda.get_device_capability(device)
    fp16 = major >= 7 or (major, minor) == (6, 0)
    return Capability(bf16=bf16, fp16=fp16, name=torch.cuda.get_device_name(device))


@dataclass(frozen=True)
class Precision:
    """The precision a run trains in, and why."""

    name: str  # fp32 | bf16 | fp16
    device_type: str  # cpu | cuda
    reason: str  # one line for the log

    @property
    def dtype(self) -> torch.dtype:
        return DTYPES[self.name]

    @property
    def scaled(self) -> bool:
        """Whether the loss is scaled (float16 gradients underflow without it)."""
        return self.name == "fp16"

    def autocast(self):
        """The context the forward pass runs in."""
        if self.name == "fp32":
            return nullcontext()
        return torch.autocast(self.device_type, dtype=self.dtype)

    def scaler(self) -> torch.amp.GradScaler:
        """A gradient scaler: active for fp16, a pass-through otherwise."""
        return torch.amp.GradScaler(self.device_type, enabled=self.scaled)

    def describe(self) -> str:
        return f"precision {self.name} ({self.reason})"


def select(
    requested: str,
    device: torch.device,
    capability: Callable[[torch.device], Capability] = cuda_capability,
) -> Precision:
    """The precision for ``requested`` (auto | fp32 | bf16 | fp16) on ``device``;
    ``capability`` answers what a CUDA device supports (tests pass their own)."""
    if requested not in PRECISIONS:
        raise ConfigError(
            f"train.precision must be one of {', '.join(PRECISIONS)}, not {requested!r}"
        )
    kind = device.type
    if kind != "cuda":
        if requested == "auto":
            return Precision("fp32", kind, "auto: float32 on the CPU")
        if requested == "fp32":
            return Precision("fp32", kind, "as asked")
        return Precision(requested, kind, f"as asked: {requested} autocast on the CPU")
    cap = capability(device)
    on = f" on {cap.name}" if cap.name else ""
    if requested == "auto":
        if cap.bf16:
            return Precision("bf16", kind, f"auto: native bfloat16{on}")
        if cap.fp16:
            return Precision(
                "fp16", kind, f"auto: no native bfloat16{on}; float16 with a gradient scaler"
            )
        return Precision("fp32", kind, f"auto: neither bfloat16 nor fast float16{on}")
    if requested == "bf16" and not cap.bf16:
        return Precision("bf16", kind, f"as asked, but emulated{on}: slow; fp16 or auto fits")
    if requested == "fp16" and not cap.fp16:
        return Precision("fp16", kind, f"as asked, but float16 is slow{on}")
    return Precision(requested, kind, "as asked" + on)
