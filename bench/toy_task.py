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
