"""Which ``$variables`` a check reads, and the variables given that no file reads.

A variable set with ``--var`` (or a preset's ``model.vars``) that no file reads is almost
always a misspelt or stale name: the model silently trains with the file's default instead.
The checker notes every variable it evaluates (:func:`note_read`, called where a variable's
value is looked up); :func:`unused_variables` turns the given names that nothing read into
warnings, each with the nearest name the files do read or define.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar

from ..errors import Diagnostic, did_you_mean

MODEL_SETTINGS = ("d_model", "heads", "dropout")  # always set, never "unused"

_reads: ContextVar[set[str] | None] = ContextVar("adl_variable_reads", default=None)


def note_read(name: str) -> None:
    """Record that the check in progress evaluated ``$name``."""
    reads = _reads.get()
    if reads is not None:
        reads.add(name)


@contextmanager
def recording() -> Iterator[set[str]]:
    """The names of the variables read inside the ``with`` block."""
    reads: set[str] = set()
    token = _reads.set(reads)
    try:
        yield reads
    finally:
        _reads.reset(token)


def unused_variables(
    given: Iterable[str], programs: Iterable, origin: str = "--var"
) -> list[Diagnostic]:
    """A warning for every name in ``given`` that none of the checked ``programs`` reads.

    ``programs`` are :class:`~adl.analysis.program.Program` s (the files of one model, or all
    the files of one ``adl compile``); ``origin`` says where the variables were set, for the
    message. The hint names the nearest variable the files read or define, else lists them.
    """
    programs = list(programs)
    read: set[str] = set()
    known: set[str] = set()
    for p in programs:
        read |= set(p.variables_read)
        known |= set(p.variables_read) | {v.name for v in p.tree.variables}
    known -= set(MODEL_SETTINGS)
    out = []
    for name in given:
        if name in read or name in MODEL_SETTINGS:
            continue
        one = len({p.source.name for p in programs}) == 1
        hint = did_you_mean(name, known)
        if hint is not None:
            hint = hint.replace("'", "'$", 1)
        else:
            listed = ", ".join(f"${k}" for k in sorted(known)) or "no variables"
            hint = f"the file{' reads' if one else 's read'} {listed}"
        never = "the file never reads it" if one else "none of the files reads it"
        out.append(
            Diagnostic(
                "warning",
                f"variable ${name} is set ({origin}) but {never}",
                hint=hint,
            )
        )
    return out
