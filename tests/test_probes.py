"""Causality, padding and incremental probes for every architecture in architectures/.

Incremental and padding probes run in float64, so that they test the logic and not float32
rounding (deep un-normalised residual stacks reach large activations)."""

import pytest
import torch
from models import (
    batch,
    decoder_models,
    encode,
    encoder_models,
    joint_models,
    run,
    small_model,
    start,
)

DECODERS = decoder_models()
ENCODERS = encoder_models()
JOINTS = joint_models()


@pytest.mark.parametrize("name,enc,dec", DECODERS, ids=[d[0] for d in DECODERS])
def test_causality(name, enc, dec):
    """Changing target tokens after position t leaves the outputs up to t exactly unchanged."""
    model = small_model(enc, dec)
    src, tgt = batch()
    with torch.no_grad():
        full = run(model, src, tgt)
        for t in range(tgt.size(1) - 1):
            other = tgt.clone()
            other[:, t + 1 :] = (tgt[:, t + 1 :] + 7) % 56 + 4
            changed = run(model, src, other)
            assert torch.equal(full[:, : t + 1], changed[:, : t + 1]), (
                f"position {t} sees later tokens"
            )


@pytest.fixture(params=DECODERS, ids=[d[0] for d in DECODERS])
def decoder64(request):
    """(model, src, tgt, full): a decoder model in float64, a batch, and the full forward's
    outputs on it."""
    _, enc, dec = request.param
    model = small_model(enc, dec).double()
    src, tgt = batch()
    with torch.no_grad():
        return model, src, tgt, run(model, src, tgt)


def test_incremental_equals_full(decoder64):
    """Step-by-step decoding with the cache gives the full forward's outputs at every position."""
    model, src, tgt, full = decoder64
    with torch.no_grad():
        memory, state = start(model, src)
        steps = [model.decode(tgt[:, t : t + 1], memory, state) for t in range(tgt.size(1))]
        torch.testing.assert_close(torch.cat(steps, 1), full, rtol=1e-9, atol=1e-9)
        # a prefix at once, then single steps, works too (joint models decode this way)
        memory, state = start(model, src)
        first = model.decode(tgt[:, :3], memory, state)
        rest = [model.decode(tgt[:, t : t + 1], memory, state) for t in range(3, tgt.size(1))]
        torch.testing.assert_close(torch.cat([first] + rest, 1), full, rtol=1e-9, atol=1e-9)


def test_decoder_padding(decoder64):
    """Appending padding to the target leaves every real position's output unchanged."""
    model, src, tgt, full = decoder64
    with torch.no_grad():
        padded = torch.cat([tgt, torch.zeros(tgt.size(0), 4, dtype=tgt.dtype)], 1)
        torch.testing.assert_close(
            run(model, src, padded)[:, : tgt.size(1)], full, rtol=1e-9, atol=1e-9
        )


@pytest.mark.parametrize("name,enc,dec", ENCODERS, ids=[e[0] for e in ENCODERS])
def test_encoder_padding(name, enc, dec):
    """Appending padding to the source changes no real position's encoding, nor the decoder."""
    model = small_model(enc, dec).double()
    src, tgt = batch()
    with torch.no_grad():
        memory = encode(model, src)
        padded = torch.cat([src, torch.zeros(src.size(0), 5, dtype=src.dtype)], 1)
        memory2 = encode(model, padded)
        real = ~src.eq(0)
        torch.testing.assert_close(
            memory2.top[:, : src.size(1)][real], memory.top[real], rtol=1e-9, atol=1e-9
        )
        torch.testing.assert_close(
            run(model, padded, tgt), run(model, src, tgt), rtol=1e-9, atol=1e-9
        )
        # a sentence alone equals the same sentence inside a padded batch
        one = src[1:2, : int(real[1].sum())]
        torch.testing.assert_close(
            run(model, one, tgt[1:2]), run(model, src, tgt)[1:2], rtol=1e-9, atol=1e-9
        )


@pytest.mark.parametrize("name,path", JOINTS, ids=[j[0] for j in JOINTS])
def test_joint_source_padding(name, path):
    """In a joint model too, a padded source changes no real position's output."""
    model = small_model(path, None).double()
    src, tgt = batch()
    with torch.no_grad():
        full = run(model, src, tgt)
        padded = torch.cat([src, torch.zeros(src.size(0), 5, dtype=src.dtype)], 1)
        torch.testing.assert_close(run(model, padded, tgt), full, rtol=1e-9, atol=1e-9)
        n = int((src[1] != 0).sum())
        torch.testing.assert_close(
            run(model, src[1:2, :n], tgt[1:2]), full[1:2], rtol=1e-9, atol=1e-9
        )
