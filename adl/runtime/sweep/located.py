"""YAML read with the line and column of every value, for messages that point into the file.

``load(text, name)`` composes the document with pyyaml (``yaml.compose`` keeps each node's
start mark) and builds plain Python values from it with pyyaml's safe constructor, so scalars
mean what ``yaml.safe_load`` says they mean. Mappings become :class:`Map` and sequences
:class:`Seq`: a ``dict`` and a ``list`` that also remember where each key, value and item
stands. A key written twice is a :class:`Problem` (``safe_load`` silently keeps the last).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from adl.errors import did_you_mean
from adl.runtime import config as cfgmod


@dataclass(frozen=True)
class Mark:
    """A place in a file: 1-based line and column."""

    file: str
    line: int
    column: int

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.column}"


@dataclass(frozen=True)
class Problem:
    """One error in a file, rendered ``file:line:col: error: message``, then the hint line
    and the detail (e.g. the ADL compiler's messages), indented."""

    mark: Mark
    message: str
    hint: str = ""
    detail: str = ""

    def render(self) -> str:
        text = f"{self.mark}: error: {self.message}"
        if self.hint:
            text += f"\nhint: {self.hint}"
        if self.detail:
            text += "\n" + "\n".join("  " + line for line in self.detail.splitlines())
        return text


class Map(dict):
    """A YAML mapping: a dict whose keys and values keep their marks."""

    mark: Mark
    key_marks: dict[Any, Mark]
    value_marks: dict[Any, Mark]

    def key_mark(self, key: Any) -> Mark:
        return self.key_marks.get(key, self.mark)

    def value_mark(self, key: Any) -> Mark:
        return self.value_marks.get(key, self.mark)


class Seq(list):
    """A YAML sequence: a list whose items keep their marks."""

    mark: Mark
    item_marks: list[Mark]

    def item_mark(self, index: int) -> Mark:
        return self.item_marks[index] if index < len(self.item_marks) else self.mark


def _mark(node: yaml.Node, name: str) -> Mark:
    return Mark(name, node.start_mark.line + 1, node.start_mark.column + 1)


def load(text: str, name: str) -> tuple[Any, list[Problem]]:
    """The document's value (``None`` for an empty one) and the problems found building it.
    Raises :class:`yaml.YAMLError` for text that is not YAML."""
    loader = yaml.SafeLoader(text)
    try:
        root = loader.get_single_node()
    finally:
        loader.dispose()
    problems: list[Problem] = []
    if root is None:
        return None, problems
    return _build(root, loader, name, problems), problems


def _build(node: yaml.Node, loader: yaml.SafeLoader, name: str, problems: list[Problem]) -> Any:
    mark = _mark(node, name)
    if isinstance(node, yaml.MappingNode):
        loader.flatten_mapping(node)  # merge keys (<<: *anchor)
        out = Map()
        out.mark, out.key_marks, out.value_marks = mark, {}, {}
        for key_node, value_node in node.value:
            key = loader.construct_object(key_node, deep=True)
            if isinstance(key, (list, dict)):
                problems.append(Problem(_mark(key_node, name), "a key must be a plain name"))
                continue
            if key in out:
                problems.append(
                    Problem(
                        _mark(key_node, name),
                        f"'{key}' is given twice (first on line {out.key_marks[key].line})",
                    )
                )
                continue
            out[key] = _build(value_node, loader, name, problems)
            out.key_marks[key] = _mark(key_node, name)
            out.value_marks[key] = _mark(value_node, name)
        return out
    if isinstance(node, yaml.SequenceNode):
        seq = Seq(_build(item, loader, name, problems) for item in node.value)
        seq.mark, seq.item_marks = mark, [_mark(item, name) for item in node.value]
        return seq
    return loader.construct_object(node, deep=True)


class Values:
    """Values of located YAML checked by type, each problem kept with its mark (a spec
    reader's base: every problem is reported at once)."""

    def __init__(self, path: Path):
        self.path = path
        self.problems: list[Problem] = []

    def add(self, mark: Mark, message: str, hint: str | None = "") -> None:
        self.problems.append(Problem(mark, message, hint or ""))

    def required(self, doc: Map, key: str, message: str) -> tuple[Any, Mark] | None:
        """``doc``'s value at ``key`` and where it is written; if there is none, ``message``
        is a problem of the whole file."""
        if key in doc:
            return doc[key], doc.value_mark(key)
        self.add(Mark(str(self.path), 1, 1), message)
        return None

    def mapping(self, value: Any, mark: Mark, what: str) -> Map | None:
        if value is None:
            return None
        if not isinstance(value, Map):
            self.add(mark, f"{what} takes key: value lines, not {show(value)}")
            return None
        return value

    def section(self, doc: Map, key: str, allowed: tuple[str, ...]) -> Map | None:
        """``doc[key]``, a mapping whose keys are among ``allowed`` (each other one an
        error), or None where the key is absent or not a mapping."""
        if key not in doc:
            return None
        m = self.mapping(doc[key], doc.value_mark(key), key)
        if m is not None:
            self.keys(m, allowed, key)
        return m

    def keys(self, m: Map, allowed: tuple[str, ...], what: str) -> None:
        for key in m:
            if key not in allowed:
                self.add(
                    m.key_mark(key),
                    f"unknown key '{key}' in {what}",
                    did_you_mean(str(key), allowed, ignore_case=True)
                    or f"{what} takes: {', '.join(allowed)}",
                )

    def integer(self, value: Any, mark: Mark, what: str, minimum: int = 1) -> int | None:
        value = cfgmod.yaml_number(value)
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        if not isinstance(value, int) or isinstance(value, bool) or value < minimum:
            self.add(mark, f"{what} takes an integer of at least {minimum}, not {show(value)}")
            return None
        return value

    def number(self, value: Any, mark: Mark, what: str) -> float | None:
        value = cfgmod.yaml_number(value)
        if (
            not isinstance(value, (int, float))
            or isinstance(value, bool)
            or not math.isfinite(value)
            or value <= 0
        ):
            self.add(mark, f"{what} takes a positive number, not {show(value)}")
            return None
        return float(value)

    def text(self, value: Any, mark: Mark, what: str) -> str | None:
        if isinstance(value, bool) or not isinstance(value, (str, int, float)):
            self.add(mark, f"{what} takes a string, not {show(value)}")
            return None
        return str(value)

    def choice(self, value: Any, mark: Mark, what: str, allowed: tuple[str, ...]) -> str | None:
        if value not in allowed:
            hint = did_you_mean(str(value), allowed, ignore_case=True)
            self.add(
                mark,
                f"{what} must be one of {', '.join(allowed)}, not {show(value)}",
                hint,
            )
            return None
        return value


def show(value: Any) -> str:
    if isinstance(value, (Map, dict)):
        return "a mapping"
    if isinstance(value, (Seq, list)):
        return "a list"
    return repr(value)
