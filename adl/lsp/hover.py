"""What hovering over a name shows (Markdown).

A layer: its section of docs/language.md (usage, summary, roles, size rule, arguments with
their defaults; :func:`adl.docgen.layer_section`), then its input and output sizes and
parameters where this file uses it, at the sizes the file is checked with. A keyword
argument: its row of that table. A block: its definition; a block's parameter: its block's
head; a ``$variable``: the value it is checked with and where that comes from.

What the file declares comes as :class:`Declared`: of its syntax tree, or, while the file
does not parse, of its text (:func:`adl.lsp.tokens.declared`).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from ..analysis.program import Program
from ..analysis.spacecheck import CheckedSpace
from ..analysis.variables import MODEL_SETTINGS
from ..docgen import argument_row, layer_section
from ..registry import REGISTRY
from ..source import Span
from ..syntax import ast
from ..syntax.printer import to_text
from .occurrences import Occurrence, at
from .settings import Settings
from .symbols import block_head

_TABLE_HEAD = ["| argument | also | type | default | meaning |", "|---|---|---|---|---|"]


@dataclass(frozen=True)
class Declared:
    """What a file declares, as hover shows it."""

    blocks: dict[str, str] = field(default_factory=dict)  # name -> its definition's text
    heads: dict[str, str] = field(default_factory=dict)  # name -> `name(x, n=2)`
    defaults: dict[str, str] = field(default_factory=dict)  # $variable -> its default's text

    @classmethod
    def of(cls, tree: ast.File) -> Declared:
        """What a parsed file declares, in canonical text (the first of a name counts)."""
        found = cls()
        for d in tree.definitions:
            found.blocks.setdefault(d.name, to_text(d))
            found.heads.setdefault(d.name, block_head(d))
        for v in tree.variables:
            found.defaults.setdefault(v.name, to_text(v.value))
        return found


def hover(
    declared: Declared,
    found: list[Occurrence],
    offset: int,
    program: Program | None,
    settings: Settings,
    space: CheckedSpace | None = None,
) -> tuple[str, Span] | None:
    """The Markdown for the name at ``offset`` and the name's span, or None."""
    name = at(found, offset)
    if name is None:
        return None
    text = None
    if name.kind == "choice":
        text = _choice(name, space, settings)
    elif name.kind == "layer":
        spec = REGISTRY.get(name.name)
        if spec is not None:
            text = "\n".join(layer_section(spec)) + "\n\n" + _sizes(name, program, settings)
    elif name.kind == "keyword" and name.callee is not None:
        text = _keyword(declared, name, name.callee)
    elif name.kind == "block":
        d = declared.blocks.get(name.name)
        text = f"block `{name.name}`\n\n```adl\n{d}\n```" if d is not None else None
    elif name.kind == "param" and name.owner is not None:
        text = f"parameter `{name.name}` of block `{declared.heads.get(name.owner, name.owner)}`"
    elif name.kind == "var":
        text = _variable(declared, name.name, settings)
    return (text, name.span) if text else None


def _choice(name: Occurrence, space: CheckedSpace | None, settings: Settings) -> str:
    """A choice: the space's size and what its check found."""
    head = "a choice: each program of the space takes one of its options"
    if space is None:
        return f"{head}\n\nThe space: not counted while the file has errors."
    return f"{head}\n\nThe file is {space.describe()}, at {settings.describe()}."


def _sizes(name: Occurrence, program: Program | None, settings: Settings) -> str:
    """Where the file uses this layer: each distinct input -> output size and parameters."""
    if program is None:
        return "Sizes here: not known while the file has errors."
    assert name.call is not None
    span = name.call.span
    uses: Counter[tuple[str, int, int, int]] = Counter()
    for role, network in program.networks.items():
        for _, _, node in network.chain.walk():
            if node.call.span == span:
                uses[(role, node.d_in, node.d_out, node.params)] += 1
    if not uses:
        return "Sizes here: not checked (the network does not reach this layer)."
    lines = [f"Here, at {settings.describe()}:", ""]
    for (role, d_in, d_out, params), count in sorted(uses.items()):
        times = f" ({count} uses)" if count > 1 else ""
        lines.append(f"- {role}: {d_in} → {d_out}, {params:,} parameters{times}")
    return "\n".join(lines)


def _keyword(declared: Declared, name: Occurrence, callee: str) -> str | None:
    if name.owner is not None:
        return f"parameter `{name.name}` of block `{declared.heads.get(name.owner, name.owner)}`"
    spec = REGISTRY.get(callee)
    param = spec.param(name.name) if spec is not None else None
    if spec is None or param is None:
        return None
    return "\n".join([f"`{spec.usage()}`", "", *_TABLE_HEAD, argument_row(param)])


def _variable(declared: Declared, name: str, settings: Settings) -> str:
    given = dict(settings.vars)
    default = declared.defaults.get(name)
    if name in MODEL_SETTINGS:
        value = getattr(settings, name)
        where = settings.origin or "adl compile's default"
        return f"`${name}` = {value:g}: the model setting {name} ({where})"
    if name in given:
        text = f"`${name}` = {given[name]} ({settings.origin})"
        if default is not None:
            text += f"; the file's default is `{default}`"
        return text
    if default is not None:
        return f"`${name}` = `{default}`: the file's default (`--var {name}=...` sets it)"
    return f"`${name}` is not set: `--var {name}=VALUE` sets it"
