"""What hovering over a name shows (Markdown).

A layer: its section of docs/language.md (usage, summary, roles, size rule, arguments with
their defaults; :func:`adl.docgen.layer_section`), then its input and output sizes and
parameters where this file uses it, at the sizes the file is checked with. A keyword
argument: its row of that table. A block: its definition; a block's parameter: its block's
head; a ``$variable``: the value it is checked with and where that comes from.
"""

from __future__ import annotations

from collections import Counter

from ..analysis.program import Program
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


def hover(
    tree: ast.File,
    found: list[Occurrence],
    offset: int,
    program: Program | None,
    settings: Settings,
) -> tuple[str, Span] | None:
    """The Markdown for the name at ``offset`` and the name's span, or None."""
    name = at(found, offset)
    if name is None:
        return None
    text = None
    if name.kind == "layer":
        spec = REGISTRY.get(name.name)
        if spec is not None:
            text = "\n".join(layer_section(spec)) + "\n\n" + _sizes(name, program, settings)
    elif name.kind == "keyword" and name.call is not None:
        text = _keyword(tree, name, name.call)
    elif name.kind == "block":
        d = tree.definition(name.name)
        text = f"block `{name.name}`\n\n```adl\n{to_text(d)}\n```" if d is not None else None
    elif name.kind == "param" and name.owner is not None:
        text = f"parameter `{name.name}` of block `{_head(tree, name.owner)}`"
    elif name.kind == "var":
        text = _variable(tree, name.name, settings)
    return (text, name.span) if text else None


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


def _keyword(tree: ast.File, name: Occurrence, call: ast.Call) -> str | None:
    if name.owner is not None:
        return f"parameter `{name.name}` of block `{_head(tree, name.owner)}`"
    spec = REGISTRY.get(call.name)
    param = spec.param(name.name) if spec is not None else None
    if spec is None or param is None:
        return None
    return "\n".join([f"`{spec.usage()}`", "", *_TABLE_HEAD, argument_row(param)])


def _head(tree: ast.File, block: str) -> str:
    d = tree.definition(block)
    return block if d is None else block_head(d)


def _variable(tree: ast.File, name: str, settings: Settings) -> str:
    given = dict(settings.vars)
    default = next((v for v in tree.variables if v.name == name), None)
    if name in MODEL_SETTINGS:
        value = getattr(settings, name)
        where = settings.origin or "adl compile's default"
        return f"`${name}` = {value:g}: the model setting {name} ({where})"
    if name in given:
        text = f"`${name}` = {given[name]} ({settings.origin})"
        if default is not None:
            text += f"; the file's default is `{to_text(default.value)}`"
        return text
    if default is not None:
        return f"`${name}` = `{to_text(default.value)}`: the file's default (`--var {name}=...` sets it)"
    return f"`${name}` is not set: `--var {name}=VALUE` sets it"
