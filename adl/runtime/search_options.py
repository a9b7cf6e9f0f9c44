"""How a translation is searched: the decoding options, one name each for every door.

:class:`SearchOptions` names each option once, with its default and its meaning. The
command line's flag is the name with dashes (``--len-a``, ``--max-tokens``: ``adl
translate``, ``adl eval``), ``Translator.translate`` (``adl.load_model(...).translate``)
and the CTranslate2 backend take the names as keywords, a sweep spec's ``decode:`` takes
them as keys, and the training's validation decodes greedily with ``train.decode_len_a``
and ``train.decode_len_b`` (the flat ``train`` section says whose with ``decode_``), whose
defaults are read from here.

An option is checked once, when the options are made (:func:`check_options`, from
``__post_init__``): a :class:`SearchOptions` that exists is valid, and no door checks it
again. It imports no room (``adl --help`` reads it without loading torch).
"""

from __future__ import annotations

import dataclasses
import math
import warnings
from dataclasses import dataclass, field
from typing import Any

from adl.runtime.errors import ConfigError

PENALTIES = ("fairseq", "gnmt", "none")


def _about(metavar: str, meaning: str) -> dict[str, str]:
    """A field's command-line metavar and help (the default is added where it is shown)."""
    return {"metavar": metavar, "help": meaning}


@dataclass(frozen=True)
class SearchOptions:
    """How to search: greedy (beam 1) or beam search, and how long a translation may be."""

    # hypotheses kept per sentence; 1: greedy
    beam: int = field(default=5, metadata=_about("K", "beam size; 1 is greedy search"))
    # hypotheses returned per sentence (at most beam)
    nbest: int = field(
        default=1,
        metadata=_about("N", "write the N best as 'index ||| text ||| score ||| normalized'"),
    )
    # length penalty: fairseq (length^alpha), gnmt or none
    penalty: str = field(
        default="fairseq",
        metadata=_about(
            "KIND",
            "how finished hypotheses are ranked: fairseq, score/length^alpha; gnmt, "
            "score/((5+length)/6)^alpha; none",
        ),
    )
    # the length penalty's exponent
    alpha: float = field(default=1.0, metadata=_about("ALPHA", "the length penalty's exponent"))
    # at most len_a x source length + len_b target tokens
    len_a: float = field(
        default=1.5, metadata=_about("A", "at most A x source length + B tokens a translation")
    )
    len_b: int = field(default=10, metadata=_about("B", "(see --len-a)"))
    # source tokens x beam per batch (sentences are sorted by length)
    max_tokens: int = field(
        default=4096,
        metadata=_about(
            "TOKENS",
            "source tokens x beam per batch; adl translate batches the lines already "
            "read, up to TOKENS / beam lines",
        ),
    )
    # searches that run at once, each over its own batches, sharing torch's CPU threads
    workers: int = field(
        default=1,
        metadata=_about(
            "N",
            "batches searched at once by N workers, which share the CPU threads (2 "
            "threads, 2 workers: one thread each, in processes of their own); the same "
            "batches as one worker (CTranslate2: N translators, its inter_threads)",
        ),
    )

    def __post_init__(self) -> None:
        check_options(self)

    @classmethod
    def of(cls, options: SearchOptions | None = None, **settings: Any) -> SearchOptions:
        """``options`` (default: the defaults) with ``settings`` over it, by name. The names
        of the previous release (``length_penalty``, ``max_len_a``, ``max_len_b``,
        ``batch_size``) are read with a DeprecationWarning; another name is a TypeError."""
        known = {f.name for f in dataclasses.fields(cls)}
        given: dict[str, Any] = {}
        for name, value in settings.items():
            new = RENAMED.get(name)
            if new is not None:
                warnings.warn(
                    f"the search option {name} is renamed {new}; {name} goes in the next release",
                    DeprecationWarning,
                    stacklevel=3,
                )
                name = new
            if name not in known:
                raise TypeError(f"unknown search option {name!r}: {', '.join(sorted(known))}")
            given[name] = value
        if options is None:
            return cls(**given)
        return dataclasses.replace(options, **given) if given else options


# options that change how a search runs, not what it finds: a result decoded with another
# value is the same result (a sweep's outcome hash leaves them out)
HOW_IT_RUNS = ("workers",)


# the names of the previous release -> their names now (kept one release)
RENAMED = {
    "length_penalty": "penalty",
    "max_len_a": "len_a",
    "max_len_b": "len_b",
    "batch_size": "max_tokens",
}


def check_options(options: SearchOptions) -> SearchOptions:
    """The search options, or one :class:`ConfigError` naming what is out of range."""
    if options.beam < 1:
        raise ConfigError(f"the beam size must be at least 1, not {options.beam}")
    if not 1 <= options.nbest <= options.beam:
        raise ConfigError(f"nbest must be between 1 and the beam size ({options.beam})")
    if options.max_tokens < 1:
        raise ConfigError(
            f"the batch size must be at least 1 token, not {options.max_tokens} "
            "(max_tokens counts source tokens x beam per batch)"
        )
    if options.workers < 1:
        raise ConfigError(f"workers must be at least 1, not {options.workers}")
    if not math.isfinite(options.alpha):
        raise ConfigError(
            f"the length penalty's alpha must be a finite number, not {options.alpha}"
        )
    if options.penalty not in PENALTIES:
        raise ConfigError(
            f"unknown length penalty {options.penalty!r}: {', '.join(PENALTIES[:-1])} or none"
        )
    limit = "(translations have at most len_a x source length + len_b tokens)"
    if not math.isfinite(options.len_a) or options.len_a < 0:
        raise ConfigError(f"len_a must be a finite number >= 0, not {options.len_a} {limit}")
    if options.len_b < 0:
        raise ConfigError(f"len_b must be >= 0, not {options.len_b} {limit}")
    if options.len_a == 0 and options.len_b == 0:
        raise ConfigError("len_a and len_b are both 0: every translation would be empty")
    return options


DEFAULTS = SearchOptions()  # every option's default, read where another door shows it
