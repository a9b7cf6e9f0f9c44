"""The one ADL grammar, ``adl/grammar/adl.lark``, loaded once.

The file lives in the package ``adl.grammar`` (the design card's top-level ``grammar/``:
docs/architecture.md says why it is inside ``adl/``) and ships in the wheel as its package
data, so an installed ``adl`` finds it without the repository.
"""

from __future__ import annotations

from functools import lru_cache
from importlib import resources

from lark import Lark


def grammar_text() -> str:
    return resources.files("adl.grammar").joinpath("adl.lark").read_text(encoding="utf-8")


@lru_cache(maxsize=1)
def parser() -> Lark:
    """The LALR parser, built on first use and cached for the process."""
    return Lark(
        grammar_text(),
        parser="lalr",
        lexer="contextual",
        propagate_positions=True,
        maybe_placeholders=False,
        cache=False,
    )
