"""int8 decoding through torchao (the ``quant`` extra: ``pip install 'adl[quant]'``).

:func:`int8` returns a copy of a model whose ``nn.Linear`` layers hold int8 weights, made by
torchao's ``quantize_`` (the successor of ``torch.ao.quantization.quantize_dynamic``, which
PyTorch deprecates and this package no longer calls):

- ``dynamic``: int8 weights (one scale per output channel) and int8 activations quantised on
  the fly (one scale per row), an int8 × int8 matrix product (torchao's
  ``Int8DynamicActivationInt8WeightConfig``);
- ``weight``: int8 weights only, the product in the activations' precision
  (``Int8WeightOnlyConfig``).

Embeddings, layer norms, attention and the output layer (the vocabulary's logits, the model's
``output``) stay in float32, as int8 recipes usually keep the last projection: on the demo's
model, ``weight`` with a float output layer changes 57 of the 329 test verses' greedy
translations and 65 of their beam-4 ones (BLEU −0.07 and +0.20), where an int8 one changed
72 and 82 (−0.06 and +0.37): docs/results/bench/inference_demo.json, now and before. The
copy decodes through the same search as the float model
(``Translator(int8(model), tokenizers)``); bench/inference.py measures its speed and BLEU
against the float model and CTranslate2. On a CPU, ``weight`` is the default: torchao's ``dynamic`` decodes the demo's model several times
slower than float32 (docs/performance.md, "Inference engines").
"""

from __future__ import annotations

import logging
from contextlib import contextmanager
from copy import deepcopy

from torch import nn

from adl.runtime.errors import ConfigError

KINDS = ("dynamic", "weight")


@contextmanager
def _quiet(*names: str):
    """Loggers ``names`` silenced but for errors: importing torchao warns about its GPU
    kernels on a machine without them, and about torch's pytree registrations."""
    loggers = [logging.getLogger(n) for n in names]
    levels = [lg.level for lg in loggers]
    for lg in loggers:
        lg.setLevel(logging.ERROR)
    try:
        yield
    finally:
        for lg, level in zip(loggers, levels):
            lg.setLevel(level)


def _torchao():
    try:
        with _quiet("torchao", "torch.utils._pytree"):
            from torchao import quantization
    except ImportError:
        raise ConfigError(
            "int8 decoding needs torchao: pip install 'adl[quant]' (or pip install torchao)"
        ) from None
    return quantization


def int8(model: nn.Module, kind: str = "weight", copy: bool = True) -> nn.Module:
    """A copy of ``model`` with int8 linear layers (``kind``: dynamic or weight; see the
    module's docstring), in eval mode; ``model`` is unchanged (``copy=False``: ``model``
    itself is quantised, for a model nothing else holds)."""
    if kind not in KINDS:
        raise ConfigError(f"unknown int8 kind {kind!r}: {' or '.join(KINDS)}")
    ao = _torchao()
    config = (
        ao.Int8DynamicActivationInt8WeightConfig()
        if kind == "dynamic"
        else ao.Int8WeightOnlyConfig()
    )
    quantized = (deepcopy(model) if copy else model).eval()
    output = getattr(quantized, "output", None)  # the vocabulary's logits stay in float32
    with _quiet("torchao"):
        ao.quantize_(
            quantized,
            config,
            filter_fn=lambda m, _: isinstance(m, nn.Linear) and m is not output,
        )
    return quantized
