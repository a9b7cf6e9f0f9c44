"""Blocks that use themselves: the use graph of a file's block definitions, its strongly
connected components, and the shortest cycle through each, for the checker's error."""

from __future__ import annotations

from ..source import Span
from ..syntax import ast


def recursive_blocks(tree: ast.File) -> tuple[set[str], list[tuple[str, str, Span]]]:
    """Blocks that use themselves, directly or through others.

    Returns every block on a cycle, and each cycle once as (block, 'a -> b -> a', span of
    the use that closes it)."""
    defs = {d.name: d for d in tree.definitions}
    edges: dict[str, list[tuple[str, Span]]] = {}
    for d in tree.definitions:
        refs: list[tuple[str, Span]] = []
        _references(d.body, {p.name for p in d.params}, defs, refs)
        for p in d.params:
            if p.default is not None:
                _references(p.default, set(), defs, refs)
        edges[d.name] = refs
    members: set[str] = set()
    cycles: list[tuple[str, str, Span]] = []
    for component in _strongly_connected(list(defs), edges):
        first = component[0]
        if len(component) == 1 and all(t != first for t, _ in edges.get(first, [])):
            continue  # a block that does not use itself
        members.update(component)
        cycle, span = _shortest_cycle(first, set(component), edges)
        cycles.append((first, " -> ".join(cycle), span))
    return members, cycles


def _strongly_connected(
    nodes: list[str], edges: dict[str, list[tuple[str, Span]]]
) -> list[list[str]]:
    """Tarjan's strongly connected components, iteratively (no recursion limit), each in
    definition order; components come in the order of their first-defined member."""
    order = {n: i for i, n in enumerate(nodes)}
    targets_of = {n: [t for t, _ in edges.get(n, []) if t in order] for n in nodes}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in nodes:
        if root in index:
            continue
        work = [(root, 0)]
        while work:
            node, i = work.pop()
            if i == 0:
                index[node] = low[node] = len(index)
                stack.append(node)
                on_stack.add(node)
            targets = targets_of[node]
            if i < len(targets):
                work.append((node, i + 1))
                t = targets[i]
                if t not in index:
                    work.append((t, 0))
                elif t in on_stack:
                    low[node] = min(low[node], index[t])
                continue
            if low[node] == index[node]:
                component = []
                while True:
                    n = stack.pop()
                    on_stack.discard(n)
                    component.append(n)
                    if n == node:
                        break
                found.append(sorted(component, key=order.__getitem__))
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
    return sorted(found, key=lambda c: order[c[0]])


def _shortest_cycle(
    start: str, inside: set[str], edges: dict[str, list[tuple[str, Span]]]
) -> tuple[list[str], Span]:
    """The shortest path from ``start`` back to itself through ``inside`` (breadth first),
    and the span of the use that closes it."""
    came: dict[str, str] = {}
    queue = [start]
    for name in queue:
        for target, span in edges.get(name, []):
            if target == start:
                path = [name]
                while path[-1] != start:
                    path.append(came[path[-1]])
                return [*reversed(path), start], span
            if target in inside and target not in came and target != start:
                came[target] = name
                queue.append(target)
    raise AssertionError("a strongly connected block has a cycle")


def _references(value: ast.Value, own: set[str], defs: dict, out: list) -> None:
    if isinstance(value, ast.Chain):
        for call in value.layers:
            if isinstance(call, ast.Choice):  # a space's: every option may be taken
                for option in call.options:
                    _references(option, own, defs, out)
                continue
            if call.name in defs and call.name not in own:
                out.append((call.name, call.name_span))
            for arg in call.args:
                _references(arg.value, own, defs, out)
