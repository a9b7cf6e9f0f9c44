"""The limits of the language: what the checker refuses so that checking stays fast and a
program that checks clean also builds and runs.

Every limit is stated here once; the messages name it and docs/language.md lists them
(generated from :data:`LIMITS`). Nothing here imports anything else of ``adl``.
"""

from __future__ import annotations

import os
import re

MAX_SOURCE_CHARS = (
    1 << 18
)  # characters of one ADL text (bytes of a file): 10,000 layers written out
MAX_NESTING = 64  # parentheses inside parentheses in the text
MAX_EXPRESSION_DEPTH = 64  # operators in one expression (a + b + c counts 2), nested included
MAX_INTEGER = 2**63 - 1  # the largest integer a literal or a computed value may be
MAX_LAYERS = 10_000  # layers of a network, blocks expanded and repeat copies counted
MAX_LAYER_DEPTH = 32  # layers inside layers (res(res(...)) counts 2), blocks expanded
MAX_BLOCK_DEPTH = 64  # blocks used inside blocks (a = b, b = c, ... counts each)
MAX_VALUE_DEPTH = 200  # values that refer to values: $a = $b + 1, block parameters passed on
MAX_STEPS = 1_000_000  # steps of one check: layers, block uses and values evaluated
MAX_ERRORS = 100  # errors reported for one text before checking stops
MAX_SIZE = 1 << 20  # a size: num_hidden, d_model, max_seq_len, the output of concat ...
MAX_HEADS = 1024  # attention heads of one layer
MAX_WINDOW = 4096  # positions a window or offset reaches: cnn's (k - 1) * dilation, ...
MAX_COUNT = 1 << 20  # any other positive integer argument
DEFAULT_MAX_MEMORY = 16 << 30  # bytes of parameters and fixed tensors a model may hold
MEMORY_ENV = "ADL_MAX_MEMORY"  # the environment variable that overrides it

LIMITS: list[tuple[str, str, str]] = [
    ("text", f"{MAX_SOURCE_CHARS:,} characters", "one ADL text or file; only regular files"),
    ("parentheses", f"{MAX_NESTING} levels", "parentheses inside parentheses"),
    (
        "expressions",
        f"{MAX_EXPRESSION_DEPTH} operators deep",
        "each operator of `a + b + c` counts one level",
    ),
    ("integers", f"{MAX_INTEGER:,}", "written or computed"),
    ("layers", f"{MAX_LAYERS:,}", "of one network, every block use and repeat copy counted"),
    ("layer nesting", f"{MAX_LAYER_DEPTH} levels", "layers inside layers: `res(res(...))`"),
    ("block nesting", f"{MAX_BLOCK_DEPTH} levels", "blocks used inside blocks"),
    (
        "value nesting",
        f"{MAX_VALUE_DEPTH} levels",
        "values that refer to values: `$a = $b + 1`, block parameters passed on",
    ),
    (
        "checking steps",
        f"{MAX_STEPS:,}",
        "layers, block uses and values evaluated while checking one text",
    ),
    ("errors", f"{MAX_ERRORS}", "reported for one text; checking stops after them"),
    ("sizes", f"{MAX_SIZE:,}", "every size argument, `d_model`, and every layer's output size"),
    ("heads", f"{MAX_HEADS:,}", "attention heads of one layer"),
    ("windows", f"{MAX_WINDOW:,} positions", "what a window, offset or kernel reaches"),
    ("other counts", f"{MAX_COUNT:,}", "any other positive integer argument"),
    (
        "memory",
        f"{DEFAULT_MAX_MEMORY >> 30} GiB",
        "parameters (float32) and fixed tensors of a network, or of a built model with its "
        f"embeddings; set `{MEMORY_ENV}` (e.g. `64G`) or pass `max_memory=` to change it",
    ),
]

_UNITS = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}
_AMOUNT = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmgt]?)(?:i?b)?\s*$", re.IGNORECASE)


def parse_bytes(text: str) -> int | None:
    """``"64G"``, ``"512MiB"``, ``"1000000"`` -> bytes; None when it is none of these."""
    m = _AMOUNT.match(text)
    if not m:
        return None
    return int(float(m.group(1)) * _UNITS[m.group(2).lower()])


def memory_limit(override: int | None = None) -> int:
    """The memory limit in bytes: ``override``, else ``$ADL_MAX_MEMORY``, else 16 GiB.

    Raises ``ValueError`` for an unreadable setting (callers turn it into their error)."""
    if override is not None:
        if isinstance(override, bool) or not isinstance(override, int) or override <= 0:
            raise ValueError(f"max_memory must be a positive number of bytes, not {override!r}")
        return override
    text = os.environ.get(MEMORY_ENV)
    if text is None or not text.strip():
        return DEFAULT_MAX_MEMORY
    value = parse_bytes(text)
    if value is None or value <= 0:
        raise ValueError(
            f"{MEMORY_ENV}={text!r} is not an amount of memory (write e.g. 64G, 512M or bytes)"
        )
    return value


def amount(n: int) -> str:
    """Bytes in words: ``1.5 GiB``, ``12.0 MiB``, ``800 bytes``."""
    for unit, size in (("TiB", 1 << 40), ("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= size:
            return f"{n / size:,.1f} {unit}"
    return f"{n} bytes"
