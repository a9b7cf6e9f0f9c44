"""The names of a text that does not parse, read from its tokens: what hover, go to
definition and references fall back on while the file has a syntax error (an unclosed
parenthesis, a half-typed argument), as error-tolerant servers do.

The text is cut into statements where a line starts, at its first column, with a name or a
``$`` (the way completion reads it, :func:`adl.lsp.completion.definition_heads`); a
statement whose line is ``name =`` or ``name(p, q=...) =`` defines a block. Each name then
resolves as the checker would resolve it: a block's parameters inside its body, the file's
blocks, the registry's layers; ``name=`` inside ``f(...)`` is a keyword of ``f``. The
occurrences are those of :func:`adl.lsp.occurrences.occurrences` for a text that parses,
less what only the syntax tree knows (the call each name belongs to).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

from ..registry import REGISTRY
from ..source import Span
from .completion import Head, definition_heads
from .hover import Declared
from .occurrences import Kind, Occurrence

_TOKEN = re.compile(
    r"""
    (?P<comment>\#[^\n]*)
  | (?P<string>"(?:\\.|[^"\\\n])*"?|'(?:\\.|[^'\\\n])*'?)
  | (?P<var>\$[A-Za-z_][A-Za-z0-9_]*)
  | (?P<name>[A-Za-z_][A-Za-z0-9_]*)
  | (?P<number>(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?)
  | (?P<arrow>->|→)
  | (?P<punct>[()=,+\-*/])
  | (?P<space>\s+)
  | (?P<other>.)
    """,
    re.VERBOSE,
)
_STATEMENT = re.compile(r"^[A-Za-z_$]", re.MULTILINE)  # a line that starts a statement


@dataclass(frozen=True)
class Token:
    kind: str  # var, name, number, string, arrow, punct, other
    text: str
    start: int

    @property
    def span(self) -> Span:
        return Span(self.start, self.start + len(self.text))

    def punct(self, text: str) -> bool:
        return self.kind == "punct" and self.text == text


def tokens(text: str) -> list[Token]:
    """The tokens of ``text``, comments and white space left out."""
    return [
        Token(m.lastgroup or "other", m.group(), m.start())
        for m in _TOKEN.finditer(text)
        if m.lastgroup not in ("space", "comment")
    ]


def occurrences(text: str) -> list[Occurrence]:
    """All names of the text, in its order."""
    heads = {h.start: h for h in definition_heads(text)}
    blocks = {h.name for h in heads.values()}
    found: list[Occurrence] = []
    for head, toks in _statements(text, heads):
        found += _Statement(head, blocks, toks).names()
    return found


def declared(text: str) -> Declared:
    """What the text declares, as written: each block's statement, its head, each
    variable's default (the first of a name counts)."""
    found = Declared()
    starts = [m.start() for m in _STATEMENT.finditer(text)] + [len(text)]
    heads = {h.start: h for h in definition_heads(text)}
    for start, end in zip(starts, starts[1:]):
        statement = text[start:end].strip()
        head = heads.get(start)
        if head is not None:
            found.blocks.setdefault(head.name, statement)
            found.heads.setdefault(head.name, _head_of(statement))
        variable = re.match(r"\$([A-Za-z_][A-Za-z0-9_]*)\s*=(?!=)\s*(.*)", statement, re.DOTALL)
        if variable is not None:
            found.defaults.setdefault(variable.group(1), variable.group(2).strip())
    return found


def _head_of(statement: str) -> str:
    """A definition's left side as written: the text before its ``=`` (outside parentheses)."""
    depth = 0
    for i, ch in enumerate(statement):
        depth += {"(": 1, ")": -1}.get(ch, 0)
        if ch == "=" and depth == 0:
            return " ".join(statement[:i].split())
    return statement


def _statements(text: str, heads: dict[int, Head]) -> Iterator[tuple[Head | None, list[Token]]]:
    """Each statement's head (None: not a definition) and tokens."""
    starts = [m.start() for m in _STATEMENT.finditer(text)]
    bounds = [0, *[s for s in starts if s > 0], len(text)]
    toks = tokens(text)
    i = 0
    for start, end in zip(bounds, bounds[1:]):
        mine = []
        while i < len(toks) and toks[i].start < end:
            mine.append(toks[i])
            i += 1
        yield heads.get(start), mine


class _Statement:
    """The names of one statement."""

    def __init__(self, head: Head | None, blocks: set[str], toks: list[Token]):
        self.head, self.blocks, self.toks = head, blocks, toks

    def names(self) -> list[Occurrence]:
        body = self._head_end() if self.head is not None else 0
        found = self._head_names(body) if self.head is not None else []
        params = self.head.params if self.head is not None else ()
        owner = self.head.name if self.head is not None else None
        return found + self._body_names(body, params, owner)

    def _head_end(self) -> int:
        """The index of the first token after the head's ``=`` (outside its parentheses)."""
        depth = 0
        for i, tok in enumerate(self.toks):
            depth += tok.punct("(") - tok.punct(")")
            if depth == 0 and tok.punct("="):
                return i + 1
        return len(self.toks)

    def _head_names(self, end: int) -> list[Occurrence]:
        """The block's name and parameters (declared), and the names of their defaults."""
        assert self.head is not None
        name, params = self.head.name, self.head.params
        found = []
        depth = 0
        for i, tok in enumerate(self.toks[:end]):
            depth += tok.punct("(") - tok.punct(")")
            before = self.toks[i - 1] if i else None
            if tok.kind == "name" and i == 0:
                found.append(Occurrence("block", name, tok.span, declares=True))
            elif (
                tok.kind == "name"
                and depth == 1
                and before is not None
                and (before.punct("(") or before.punct(","))
                and tok.text in params
            ):
                found.append(Occurrence("param", tok.text, tok.span, declares=True, owner=name))
            elif i > 0:  # a parameter's default is read outside the block
                found += self._name(tok, (), None, [], self._after(i), first=False)
        return found

    def _after(self, i: int) -> Token | None:
        return self.toks[i + 1] if i + 1 < len(self.toks) else None

    def _body_names(
        self, start: int, params: tuple[str, ...], block: str | None
    ) -> list[Occurrence]:
        found: list[Occurrence] = []
        calls: list[str] = []  # the open calls, innermost last
        for i in range(start, len(self.toks)):
            tok = self.toks[i]
            if tok.punct("("):
                before = self.toks[i - 1] if i > start else None
                calls.append(before.text if before is not None and before.kind == "name" else "")
            elif tok.punct(")") and calls:
                calls.pop()
            else:
                found += self._name(tok, params, block, calls, self._after(i), first=i == 0)
        return found

    def _name(
        self,
        tok: Token,
        params: tuple[str, ...],
        block: str | None,
        calls: list[str],
        after: Token | None,
        first: bool,
    ) -> list[Occurrence]:
        """The occurrence of a token (none for a number, a string, punctuation)."""
        assigned = after is not None and after.punct("=")
        if tok.kind == "var":  # `$x = ...` at a statement's start: its default
            return [Occurrence("var", tok.text[1:], tok.span, declares=first and assigned)]
        if tok.kind != "name":
            return []
        if calls and assigned:  # f(name=...): a keyword of f
            callee = calls[-1]
            owner = callee if callee in self.blocks and callee not in params else None
            return [Occurrence("keyword", tok.text, tok.span, owner=owner, callee=callee)]
        kind = self._kind(tok.text, params)
        owner = block if kind == "param" else None
        return [Occurrence(kind, tok.text, tok.span, owner=owner)]

    def _kind(self, name: str, params: tuple[str, ...]) -> Kind:
        if name in params:
            return "param"
        if name in self.blocks:
            return "block"
        return "layer" if name in REGISTRY else "unknown"
