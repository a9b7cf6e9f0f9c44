"""A sweep's systems that name another system, checked once every system is read
(docs/experiments.md, "Errors"): ``against:`` (whose Δ and p a row is measured against) and
``decode_of:`` (whose runs a system decodes) must name another system of the spec, and
``decode_of:`` one that trains; the baseline is what the others are compared with, so it
takes no ``against:``. The reader (reader.py) collects what :func:`reference_problems`
finds with the other problems of the file."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence

from adl.errors import did_you_mean
from adl.runtime.sweep.located import Mark, Problem
from adl.runtime.sweep.spec import SystemSpec

# (system name, key) -> where that system's key is written
Marks = Mapping[tuple[str, str], Mark]


def reference_problems(
    systems: Sequence[SystemSpec], marks: Marks, baseline: str | None
) -> Iterator[Problem]:
    """Every problem of the systems' ``against:`` and ``decode_of:``, at the key's value."""
    names = [s.name for s in systems]
    trained = [s.name for s in systems if s.trained]
    for s in systems:
        if s.against is not None:
            yield from _against(s, marks[s.name, "against"], names, baseline)
    for s in systems:
        if s.decode_of is not None:
            yield from _decode_of(s, marks[s.name, "decode_of"], systems, trained)


def _against(
    s: SystemSpec, where: Mark, names: list[str], baseline: str | None
) -> Iterator[Problem]:
    if s.name == baseline:
        yield Problem(
            where,
            f"system '{s.name}' is the baseline, what the others are compared with: "
            "it takes no against:",
        )
    if s.against == s.name:
        yield Problem(where, f"system '{s.name}' cannot be compared with itself")
    elif s.against not in names:
        hint = did_you_mean(str(s.against), names, ignore_case=True)
        yield Problem(where, f"against: no system '{s.against}'", hint or "")


def _decode_of(
    s: SystemSpec, where: Mark, systems: Sequence[SystemSpec], trained: list[str]
) -> Iterator[Problem]:
    if s.decode_of == s.name:
        yield Problem(where, f"system '{s.name}' cannot decode its own runs")
    elif s.decode_of not in trained:
        other = next((o for o in systems if o.name == s.decode_of), None)
        if other is not None:
            yield Problem(
                where,
                f"decode_of: '{s.decode_of}' trains nothing itself (it decodes "
                f"'{other.decode_of}'): name a system with files:",
            )
        else:
            hint = did_you_mean(str(s.decode_of), trained, ignore_case=True)
            yield Problem(where, f"decode_of: no system '{s.decode_of}'", hint or "")
