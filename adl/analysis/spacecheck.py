"""Checking a space of programs as a program is checked: every member's sizes and roles.

A space of at most ``limit`` members is checked whole, each member by the same checker as a
program (:func:`adl.analysis.check_tree`); a larger one through members that take every
option of every choice at least once, then members picked at random up to ``limit``. The
checker's messages about a member point into the space's text (a member keeps its spans).

What comes out:

- an option that no checked member taking it passes is an **error**, at the option, with the
  first error of those members as a note: the space is refused (remove the option, or fix
  it). With every member checked this is exact; otherwise it holds for the members checked;
- members that fail only with some other picks are **excluded**: a warning per distinct
  error, with how many of the members checked it excludes (the search skips them);
- a space with no valid member checked is refused with its members' errors.
"""

from __future__ import annotations

import random
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from ..errors import ADLError, Diagnostic, Note
from ..registry import Hyper
from ..source import Source
from ..syntax import ast
from ..syntax.printer import to_text
from . import check_tree
from .program import Program
from .space import Entangled, Picks, choices, count, covering, members, picked, sampled

MEMBERS_CHECKED = 2_000  # members checked one by one before a space is checked by a sample


@dataclass
class Excluded:
    """Members of a space that fail with one error (of those checked)."""

    diagnostic: Diagnostic
    members: int
    example: str  # the text of one of them


@dataclass
class CheckedSpace:
    """A space's check: its size, what was checked, and what failed."""

    source: Source
    tree: ast.File
    size: int  # members in the space, counted exactly
    checked: int  # members checked
    valid: int  # of them, those that pass
    excluded: list[Excluded] = field(default_factory=list)
    warnings: list[Diagnostic] = field(default_factory=list)  # of valid members
    example: Program | None = None  # the first valid member, checked

    @property
    def exhaustive(self) -> bool:
        return self.checked == self.size

    def describe(self) -> str:
        """``a space of 20 programs (all 20 checked: 18 valid, 2 excluded)``."""
        s = "s" if self.size != 1 else ""
        if self.exhaustive:
            how = f"all {self.checked:,} checked" if self.size > 1 else "checked"
        else:
            how = f"{self.checked:,} checked, every option at least once"
        bad = self.checked - self.valid
        return (
            f"a space of {self.size:,} program{s} ({how}: {self.valid:,} valid"
            + (f", {bad:,} excluded" if bad else "")
            + ")"
        )

    def diagnostics(self) -> list[Diagnostic]:
        """The warnings: members excluded by each error, then the valid members' own."""
        out = []
        for e in self.excluded:
            d = e.diagnostic
            out.append(
                Diagnostic(
                    "warning",
                    f"{e.members:,} of the {self.checked:,} programs checked excluded: {d.message}",
                    d.source,
                    d.span,
                    d.hint,
                    (*d.notes, Note(f"for example: {e.example.strip()}")),
                )
            )
        return out + self.warnings


def check_space(
    tree: ast.File,
    source: Source,
    role: str | None = None,
    hyper: Hyper = Hyper(),
    *,
    limit: int = MEMBERS_CHECKED,
    seed: int = 0,
    **checks: Any,
) -> CheckedSpace:
    """Check the members of a space (see the module's text); raises :class:`ADLError`
    for a space that is refused. ``checks``: :func:`check_tree`'s ``source_d`` and
    ``max_memory``, for every member."""
    given = dict(hyper.vars)
    try:
        size = count(tree, given)
    except Entangled as exc:
        raise ADLError([Diagnostic("error", str(exc), source, tree.span)]) from None
    rng = random.Random(seed)
    if size <= limit:
        todo = list(members(tree, given))
    else:
        todo = _unique(covering(tree, rng, given))
        for _ in range(20 * limit):
            if len(todo) >= limit:
                break
            todo = _unique([*todo, sampled(tree, rng, given)])
    results: list[tuple[Picks, Program | ADLError]] = []
    for picks in todo:
        member = picked(tree, picks, given)
        try:
            results.append((picks, check_tree(member, source, role, hyper, **checks)))
        except ADLError as exc:
            results.append((picks, exc))
    return _verdict(tree, source, size, results, given)


def _unique(found: list[Picks]) -> list[Picks]:
    return list({tuple(sorted(p.items())): p for p in found}.values())


def _verdict(
    tree: ast.File,
    source: Source,
    size: int,
    results: list[tuple[Picks, Program | ADLError]],
    given: dict,
) -> CheckedSpace:
    valid = [r for _, r in results if isinstance(r, Program)]
    failed = [(p, r) for p, r in results if isinstance(r, ADLError)]
    warnings: dict[tuple, Diagnostic] = {}
    for program in valid:
        for w in program.warnings:
            warnings.setdefault(w.key(), w)
    refused = _never_valid(tree, source, results)
    if refused or not valid:
        if not refused:  # no option alone is to blame: the members' own errors
            first: dict[tuple, Diagnostic] = {}
            for _, exc in failed:
                for d in exc.errors:
                    first.setdefault(d.key(), d)
            head = Diagnostic(
                "error",
                f"none of the {len(results):,} programs checked of this space is valid",
                source,
                tree.span if tree.network is None else tree.network.span,
            )
            refused = [head, *list(first.values())[:20]]
        raise ADLError(refused)
    groups: Counter[tuple] = Counter()
    by_key: dict[tuple, tuple[Diagnostic, Picks]] = {}
    for picks, exc in failed:
        d = exc.errors[0]
        groups[d.key()] += 1
        by_key.setdefault(d.key(), (d, picks))
    excluded = [
        Excluded(by_key[k][0], n, to_text(picked(tree, by_key[k][1], given)))
        for k, n in groups.most_common()
    ]
    return CheckedSpace(
        source, tree, size, len(results), len(valid), excluded, list(warnings.values()), valid[0]
    )


def _never_valid(
    tree: ast.File, source: Source, results: list[tuple[Picks, Program | ADLError]]
) -> list[Diagnostic]:
    """An error at each option that no checked member taking it passes (the innermost such
    options only: an option holding a choice whose every option fails follows from it)."""
    found: list[tuple[ast.Choice, int, ADLError]] = []
    for choice, _ in choices(tree):
        at = choice.span.start
        for i in range(len(choice.options)):
            taking = [r for p, r in results if p.get(at) == i]
            if taking and not any(isinstance(r, Program) for r in taking):
                exc = next(r for r in taking if isinstance(r, ADLError))
                found.append((choice, i, exc))
    spans = [c.options[i].span for c, i, _ in found]
    out = []
    for (choice, i, exc), span in zip(found, spans):
        inner = [s for s in spans if s != span and span.start <= s.start and s.end <= span.end]
        if inner:
            continue
        first = exc.errors[0]
        out.append(
            Diagnostic(
                "error",
                f"no program of the space that takes the option '{to_text(choice.options[i])}' "
                f"here is valid: {first.message}",
                source,
                span,
                "remove the option from the choice, or change it",
                (
                    *(
                        [Note(first.message, first.source, first.span)]
                        if first.span != span
                        else []
                    ),
                    *first.notes,
                ),
            )
        )
    return out
