"""Warnings for texts written in Sockeye's spelling whose meaning differs in ADL.

ADL reads both the paper's spelling and that of Sockeye's ``acl18`` branch, but one bare
name means two things: Sockeye's ``cnn`` is a GLU convolution (``act_type`` defaults to
``glu`` in ``sockeye/convolution.py``), ADL's is a ReLU one, as the paper's experiments use
("All convolutional layers use a kernel of size 3 and a ReLU activation, unless noted
otherwise", §4.1). A README string pasted into an ADL file would silently train another
model, so a bare ``cnn`` in a text that shows Sockeye's spelling gets a warning.

What shows Sockeye's spelling: ``mh_dot_att`` (Sockeye's name for the source attention),
``highway``, ``res(norm -> ...)`` (the paper writes ``res_nd``), ``cnn(N, ...)`` with the
number of hidden units first, and the README's ``$NUM_HIDDEN`` / ``$FF_NUM_HIDDEN``.
"""

from __future__ import annotations

from collections.abc import Iterator

from ..errors import Diagnostic
from ..source import Source, Span
from ..syntax import ast

ACTIVATION_KEYS = ("act_type", "act", "v", "activation")
ACTIVATIONS = ("relu", "glu")
README_VARIABLES = ("NUM_HIDDEN", "FF_NUM_HIDDEN")


def sockeye_cnn_warnings(tree: ast.File, source: Source) -> list[Diagnostic]:
    """A warning at every bare ``cnn`` of a text that shows Sockeye's spelling."""
    marker: tuple[str, Span] | None = None
    bare: list[Span] = []
    blocks = {d.name for d in tree.definitions}
    for call, params in _calls(tree):
        if call.name in params or call.name in blocks:
            continue  # a block parameter or a block of the file, not the layer
        if marker is None:
            found = _marker(call)
            if found is not None:
                marker = (found, call.name_span)
        if call.name == "cnn" and not _sets_activation(call):
            bare.append(call.name_span)
    if marker is None:
        for var in _vars(tree):
            if var.name in README_VARIABLES:
                marker = (f"${var.name}", var.span)
                break
    if marker is None or not bare:
        return []
    what, span = marker
    line, _ = source.line_col(span.start)
    return [
        Diagnostic(
            "warning",
            f"bare 'cnn' is a ReLU convolution in ADL but a GLU one in Sockeye, whose "
            f"spelling this text uses ({what}, line {line})",
            source,
            s,
            "write cnn(glu) for what Sockeye builds, or cnn(relu) to keep ADL's meaning "
            "(docs/language.md, 'Sockeye's spelling')",
        )
        for s in bare
    ]


def _marker(call: ast.Call) -> str | None:
    if call.name == "mh_dot_att":
        return "'mh_dot_att'"
    if call.name == "highway":
        return "'highway'"
    if call.name == "res" and call.args and call.args[0].key is None:
        value = call.args[0].value
        if isinstance(value, ast.Chain) and value.layers and value.layers[0].name == "norm":
            return "'res(norm -> ...)'"
    if call.name == "cnn" and call.positional:
        first = call.positional[0].value
        if isinstance(first, (ast.Int, ast.Var)):
            return "'cnn(num_hidden, ...)'"
    return None


def _sets_activation(call: ast.Call) -> bool:
    if any(a.key in ACTIVATION_KEYS for a in call.keywords):
        return True
    if len(call.positional) >= 3:  # Sockeye's cnn(num_hidden, kernel_width, act_type)
        return True
    return any(
        isinstance(a.value, ast.Chain) and a.value.bare_name() in ACTIVATIONS
        for a in call.positional
    )


def _calls(tree: ast.File) -> Iterator[tuple[ast.Call, frozenset[str]]]:
    """Every call of the text with the block parameters in scope where it is written."""
    for node, params in _nodes(tree):
        if isinstance(node, ast.Call):
            yield node, params


def _vars(tree: ast.File) -> Iterator[ast.Var]:
    for node, _ in _nodes(tree):
        if isinstance(node, ast.Var):
            yield node


def _nodes(tree: ast.File) -> Iterator[tuple[object, frozenset[str]]]:
    """Every call and value of the text, depth first without recursion (texts can nest
    deeper than Python's stack)."""
    none: frozenset[str] = frozenset()
    stack: list[tuple[object, frozenset[str]]] = []
    if tree.network is not None:
        stack.append((tree.network, none))
    stack += [(v.value, none) for v in reversed(tree.variables)]
    for d in reversed(tree.definitions):
        stack += [(p.default, none) for p in d.params if p.default is not None]
        stack.append((d.body, frozenset(p.name for p in d.params)))
    while stack:
        node, params = stack.pop()
        yield node, params
        if isinstance(node, ast.Chain):
            stack += [(c, params) for c in reversed(node.layers)]
        elif isinstance(node, ast.Call):
            stack += [(arg.value, params) for arg in reversed(node.args)]
        elif isinstance(node, ast.Negate):
            stack.append((node.operand, params))
        elif isinstance(node, ast.BinOp):
            stack += [(node.right, params), (node.left, params)]
