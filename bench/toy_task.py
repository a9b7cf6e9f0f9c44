"""The toy task of the benches and the tests: random letter sentences and their reversal."""

from __future__ import annotations

import random
from pathlib import Path

LETTERS = "abcdefghijklmnopqrst"  # each letter becomes one sentencepiece piece


def write_reverse_pairs(
    folder: Path,
    sizes: dict[str, int],
    seed: int = 0,
    lengths: tuple[int, int] = (3, 8),
    letters: str = LETTERS,
) -> None:
    """``NAME.src``/``NAME.tgt`` in ``folder`` for each ``NAME: lines`` of ``sizes`` (in that
    order, from one random stream): sentences of ``lengths`` letters, and each reversed."""
    rng = random.Random(seed)
    folder.mkdir(parents=True, exist_ok=True)
    for name, n in sizes.items():
        with open(folder / f"{name}.src", "w") as fs, open(folder / f"{name}.tgt", "w") as ft:
            for _ in range(n):
                words = [rng.choice(letters) for _ in range(rng.randint(*lengths))]
                fs.write(" ".join(words) + "\n")
                ft.write(" ".join(reversed(words)) + "\n")


def write_reverse_sweep(
    folder: Path,
    name: str,
    sizes: dict[str, int],
    lengths: tuple[int, int],
    depth: int,
    steps: int,
    settings: str,
    beam: int,
    more: str = "",
) -> Path:
    """A sweep over the toy task in ``folder``: the pairs (:func:`write_reverse_pairs`), a
    Transformer encoder and two decoders of ``depth`` blocks (self-attention ATT, RNN), and
    ``spec.yaml`` (sweep ``name``) training both for ``steps`` updates and seeds 1 and 2 on the
    tiny preset with ``settings`` (the YAML lines under ``settings:``), decoding with beam
    ``beam``; ``more`` adds systems."""
    write_reverse_pairs(folder, sizes, lengths=lengths)
    blocks = {
        "att.enc.adl": "res_nd(mh_dot_self_att) -> res_nd(ffl)",
        "att.dec.adl": "res_nd(mh_dot_self_att) -> res_nd(mh_dot_src_att) -> res_nd(ffl)",
        "rnn.dec.adl": "res_nd(rnn) -> res_nd(mh_dot_src_att) -> res_nd(ffl)",
    }
    for file, block in blocks.items():
        body = block if depth == 1 else f"repeat({depth}, {block})"
        (folder / file).write_text(f"pos -> {body} -> norm\n")
    spec = folder / "spec.yaml"
    spec.write_text(
        f"""name: {name}
data: {{train: train, valid: valid, test: test, langs: [src, tgt]}}
preset: tiny
budget: {{steps: {steps}}}
settings:
{settings}seeds: [1, 2]
baseline: ATT
decode: {{beam: {beam}}}
systems:
  - name: ATT
    files: [att.enc.adl, att.dec.adl]
  - name: RNN
    files: [att.enc.adl, rnn.dec.adl]
{more}""",
        encoding="utf-8",
    )
    return spec
