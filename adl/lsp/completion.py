"""What completion offers at a cursor, read from the text before it (it need not parse).

Everywhere a layer can go: the registry's layers (with their one-line summary), the file's
named blocks, and inside a block's body its parameters. Inside ``name(...)`` also the
keyword arguments of that layer or block not given yet (``heads=``). After ``$``: the
variables (the model settings, the file's defaults, those the file is checked with).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

from ..analysis.variables import MODEL_SETTINGS
from ..registry import REGISTRY, ROLES

ItemKind = Literal["layer", "block", "param", "keyword", "var"]
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_WORD_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_")
_VAR_DEFAULT = re.compile(r"^[ \t]*\$([A-Za-z_][A-Za-z0-9_]*)[ \t]*=", re.MULTILINE)


@dataclass(frozen=True)
class Item:
    label: str
    kind: ItemKind
    detail: str = ""
    documentation: str = ""
    insert: str = ""  # the text put in place of the word typed so far (default: label)


@dataclass(frozen=True)
class Head:
    """A definition's head found in the text: ``name`` or ``name(p, q=...)``."""

    name: str
    params: tuple[str, ...]
    start: int  # offset of the line it starts


def complete(text: str, offset: int, variables: Iterable[str] = ()) -> tuple[int, list[Item]]:
    """The offset where the word being typed starts, and the items for it."""
    start = word_start(text, offset)
    heads = definition_heads(text)
    if text[start:offset].startswith("$"):
        return start, _variables(text, variables)
    calls = _open_calls(text, start)
    items: list[Item] = []
    if calls and not text[:start].rstrip().endswith("="):  # not where a value goes
        name, given = calls[-1]
        items += _keywords(name, given, heads)
    here = next((h for h in reversed(heads) if h.start <= start), None)
    if here is not None and _statement_start(text, start) == here.start:
        items += [Item(p, "param", f"parameter of block {here.name}") for p in here.params]
    items += _layers()
    items += [
        Item(h.name, "block", head_text(h), f"block defined in this file: {head_text(h)}")
        for h in heads
        if h.name not in ROLES
    ]
    return start, items


def word_start(text: str, offset: int) -> int:
    """Where the name (or ``$variable``) that ends at ``offset`` starts."""
    i = offset
    while i > 0 and text[i - 1] in _WORD_CHARS:
        i -= 1
    return i - 1 if i > 0 and text[i - 1] == "$" else i


def definition_heads(text: str) -> list[Head]:
    """The definitions of the text, found line by line: a line that starts (at its first
    column) with ``name =`` or ``name(...) =``."""
    heads = []
    for line in re.finditer(r"^[A-Za-z_][^\n]*", text, re.MULTILINE):
        name = _NAME.match(line.group())
        assert name is not None
        rest = line.group()[name.end() :]
        params: tuple[str, ...] = ()
        if rest.lstrip().startswith("("):
            inside, rest = _balanced(rest.lstrip())
            params = tuple(m.group() for p in _split(inside) if (m := _NAME.match(p.strip())))
        if re.match(r"\s*=(?!=)", rest):
            heads.append(Head(name.group(), params, line.start()))
    return heads


def head_text(h: Head) -> str:
    """The head as written in hover and completion: ``name`` or ``name(p, q)``."""
    return f"{h.name}({', '.join(h.params)})" if h.params else h.name


def _statement_start(text: str, offset: int) -> int:
    """The start of the line where the statement around ``offset`` begins: the last line at
    or before it that starts with a name or a ``$`` (continuation lines start with spaces or
    ``->``)."""
    lines = list(re.finditer(r"^[A-Za-z_$]", text[:offset], re.MULTILINE))
    return lines[-1].start() if lines else 0


def _open_calls(text: str, end: int) -> list[tuple[str, set[str]]]:
    """The calls whose '(' is open at ``end``, outermost first, each with the keyword
    arguments given so far in it. Comments and strings are skipped."""
    stack: list[tuple[str, set[str]]] = []
    i = 0
    while i < end:
        ch = text[i]
        if ch == "#":
            newline = text.find("\n", i, end)
            i = end if newline < 0 else newline
        elif ch in "\"'":
            j = i + 1
            while j < end and text[j] not in (ch, "\n"):
                j += 2 if text[j] == "\\" else 1
            i = j + 1
        elif ch == "(":
            name = re.search(r"([A-Za-z_][A-Za-z0-9_]*)\s*$", text[max(0, i - 200) : i])
            stack.append((name.group(1) if name else "", set()))
            i += 1
        elif ch == ")":
            if stack:
                stack.pop()
            i += 1
        elif ch == "=" and stack:
            key = re.search(r"([A-Za-z_][A-Za-z0-9_]*)\s*$", text[max(0, i - 200) : i])
            if key:
                stack[-1][1].add(key.group(1))
            i += 1
        else:
            i += 1
    return stack


def _keywords(name: str, given: set[str], heads: list[Head]) -> list[Item]:
    spec = REGISTRY.get(name)
    if spec is not None:
        taken = {p.name for p in spec.params if given & {p.name, *p.aliases}}
        return [
            Item(f"{p.name}=", "keyword", f"{p.type.label}, default {p.default_text()}", p.doc)
            for p in spec.params
            if not p.variadic and p.name not in taken
        ]
    head = next((h for h in heads if h.name == name), None)
    if head is None:
        return []
    return [
        Item(f"{p}=", "keyword", f"parameter of block {head_text(head)}")
        for p in head.params
        if p not in given
    ]


def _layers() -> list[Item]:
    items = []
    for name in REGISTRY.names():
        spec = REGISTRY.get(name)
        assert spec is not None
        also = f" (also spelled {name})" if name != spec.name else ""
        items.append(Item(name, "layer", spec.usage(), spec.summary + also))
    return items


def _variables(text: str, variables: Iterable[str]) -> list[Item]:
    names = dict.fromkeys([*MODEL_SETTINGS, *_VAR_DEFAULT.findall(text), *variables])
    return [
        Item(
            f"${n}",
            "var",
            "model setting" if n in MODEL_SETTINGS else "variable",
        )
        for n in names
    ]


def _balanced(text: str) -> tuple[str, str]:
    """``(inside) rest`` -> (inside, rest); an unclosed '(' takes the rest of the line."""
    depth = 0
    for i, ch in enumerate(text):
        depth += {"(": 1, ")": -1}.get(ch, 0)
        if depth == 0:
            return text[1:i], text[i + 1 :]
    return text[1:], ""


def _split(text: str) -> list[str]:
    """Split at the commas outside parentheses."""
    parts, depth, last = [], 0, 0
    for i, ch in enumerate(text):
        depth += {"(": 1, ")": -1}.get(ch, 0)
        if ch == "," and depth == 0:
            parts.append(text[last:i])
            last = i + 1
    return [*parts, text[last:]]
