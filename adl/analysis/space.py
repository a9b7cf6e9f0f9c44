"""Spaces of programs: texts with choices (``{a | b}``, ``{2..6}``) and the programs in them.

A choice is one decision, made once wherever its text is used: a choice in a block's body
is the same for every use of the block (and every copy of a ``repeat``), a choice in a
variable's default the same wherever the variable is read. Write two choices to decide two
places apart. A program of the space (a *member*) picks one option of every choice it
*reaches*: from the network, through the blocks and variables it uses, into the options it
picks. A choice it does not reach (inside an option not picked, in a block only such an
option uses, in a variable set with ``--var``) is no decision of that program; a member
keeps only the definitions and variable defaults it uses, so two members differ exactly
when their texts do.

:func:`resolve` makes a member from the picks a function makes as the choices are reached;
:func:`count` counts the members exactly (nested choices, blocks and variables shared
between options included) without listing them; :func:`members` lists them. A member's
syntax nodes keep their spans in the space's text, so the checker's messages about a member
point into the space (:mod:`adl.analysis.spacecheck`).
"""

from __future__ import annotations

import random
from collections.abc import Callable, Collection, Iterator
from dataclasses import dataclass, field

from ..layers import REGISTRY
from ..registry import ROLES
from ..source import Source
from ..syntax import ast

Unit = tuple[str, str]  # ("network", ""), ("block", NAME) or ("var", NAME)
Pick = Callable[[ast.Choice], int]  # the option a member takes at a choice it reaches
Picks = dict[int, int]  # a member: the choice at each text offset -> the option it takes
MAX_STATES = 200_000  # steps of the exact count before a space is called too entangled
NETWORK: Unit = ("network", "")


class Entangled(ValueError):
    """A space whose blocks and variables are shared between options in too many ways to
    count exactly within :data:`MAX_STATES` steps."""


def choices(tree: ast.File) -> list[tuple[ast.Choice, tuple[tuple[ast.Choice, int], ...]]]:
    """Every choice of a text in the order of the text, each with the choices (and their
    options) it lies inside."""
    found: list[tuple[ast.Choice, tuple[tuple[ast.Choice, int], ...]]] = []

    def value(v: ast.Value, inside: tuple[tuple[ast.Choice, int], ...]) -> None:
        if isinstance(v, ast.Chain):
            for layer in v.layers:
                if isinstance(layer, ast.Choice):
                    found.append((layer, inside))
                    for i, option in enumerate(layer.options):
                        value(option, (*inside, (layer, i)))
                else:
                    for arg in layer.args:
                        value(arg.value, inside)
        elif isinstance(v, ast.BinOp):
            value(v.left, inside)
            value(v.right, inside)
        elif isinstance(v, ast.Negate):
            value(v.operand, inside)

    for var in tree.variables:
        value(var.value, ())
    for d in tree.definitions:
        value(d.body, ())
    if tree.network is not None:
        value(tree.network, ())
    return sorted(found, key=lambda c: c[0].span.start)


def is_space(tree: ast.File) -> bool:
    """Whether a text holds a choice (a space of programs rather than one program)."""
    return bool(choices(tree))


def where(source: Source, choice: ast.Choice) -> str:
    """A choice's name: its line and column in the text (``3:18``)."""
    line, col = source.line_col(choice.span.start)
    return f"{line}:{col}"


# --- one member -------------------------------------------------------------------------------
class _Names:
    """What a name in a text stands for (a block parameter, a block, a layer, a variable of
    the file), as the checker reads it."""

    def __init__(self, tree: ast.File, given: Collection[str]):
        self.defs = {d.name: d for d in tree.definitions}
        self.vars = {v.name: v for v in tree.variables if v.name not in given}
        self.roots: list[Unit] = [NETWORK] if tree.network is not None else []
        self.roots += [("block", r) for r in ROLES if r in self.defs]

    def call(self, name: str, params: Collection[str]) -> Unit | None:
        if name in params:
            return None
        if name in self.defs:
            return ("block", name)
        if REGISTRY.get(name) is None and name in self.vars:
            return ("var", name)
        return None

    def name(self, name: str, params: Collection[str]) -> Unit | None:
        return ("var", name) if name not in params and name in self.vars else None


@dataclass
class _Resolver:
    names: _Names
    pick: Pick
    picks: Picks = field(default_factory=dict)
    queue: list[Unit] = field(default_factory=list)
    seen: set[Unit] = field(default_factory=set)

    def reach(self, unit: Unit | None) -> None:
        if unit is not None and unit not in self.seen:
            self.seen.add(unit)
            self.queue.append(unit)

    def value(self, v: ast.Value, params: Collection[str]) -> ast.Value:
        if isinstance(v, ast.Chain):
            layers: list[ast.Layer] = []
            for layer in v.layers:
                if isinstance(layer, ast.Call):
                    self.reach(self.names.call(layer.name, params))
                    args = tuple(
                        ast.Argument(self.value(a.value, params), a.key, a.span, a.key_span)
                        for a in layer.args
                    )
                    layers.append(ast.Call(layer.name, args, layer.span, layer.name_span))
                    continue
                i = self.pick(layer)
                if not 0 <= i < len(layer.options):
                    raise IndexError(f"option {i} of a choice of {len(layer.options)}")
                self.picks[layer.span.start] = i
                option = self.value(layer.options[i], params)
                if not isinstance(option, ast.Chain):
                    return option  # a choice of values stands alone (the parser holds that)
                layers.extend(option.layers)
            return ast.Chain(tuple(layers), v.span)
        if isinstance(v, ast.Var):
            self.reach(self.names.name(v.name, ()))
        elif isinstance(v, ast.NameRef):
            self.reach(self.names.name(v.name, params))
        elif isinstance(v, ast.Negate):  # arithmetic holds no choice: nothing to resolve
            self.value(v.operand, params)
        elif isinstance(v, ast.BinOp):
            self.value(v.left, params)
            self.value(v.right, params)
        return v


def resolve(tree: ast.File, pick: Pick, given: Collection[str] = ()) -> tuple[ast.File, Picks]:
    """The member of a space that ``pick`` makes, and its picks. ``given``: the variables
    set from outside (``--var``), whose defaults (and their choices) no member reads."""
    names = _Names(tree, given)
    r = _Resolver(names, pick)
    for unit in names.roots:
        r.reach(unit)
    network: ast.Chain | None = None
    bodies: dict[str, ast.Chain] = {}
    values: dict[str, ast.Value] = {}
    while r.queue:
        kind, name = r.queue.pop(0)
        if kind == "network":
            assert tree.network is not None
            network = _chain(r.value(tree.network, ()))
        elif kind == "block":
            d = names.defs[name]
            bodies[name] = _chain(r.value(d.body, {p.name for p in d.params}))
        else:
            values[name] = r.value(names.vars[name].value, ())
    definitions = tuple(
        ast.Definition(d.name, d.params, bodies[d.name], d.span, d.name_span)
        for d in tree.definitions
        if d.name in bodies
    )
    variables = tuple(
        ast.Variable(v.name, values[v.name], v.span, v.name_span)
        for v in tree.variables
        if v.name in values
    )
    return ast.File(definitions, network, tree.span, variables), r.picks


def _chain(v: ast.Value) -> ast.Chain:
    assert isinstance(v, ast.Chain), "a statement's chain resolves to a chain"
    return v


def picked(tree: ast.File, picks: Picks, given: Collection[str] = ()) -> ast.File:
    """The member with these picks (those of :func:`resolve` or :func:`members`)."""
    return resolve(tree, lambda c: picks[c.span.start], given)[0]


def sampled(tree: ast.File, rng: random.Random, given: Collection[str] = ()) -> Picks:
    """A member picked at random (each choice it reaches, uniformly over its options)."""
    return resolve(tree, lambda c: rng.randrange(len(c.options)), given)[1]


def members(tree: ast.File, given: Collection[str] = ()) -> Iterator[Picks]:
    """Every member once, in order (the first options first)."""
    prefix: list[int] = []
    while True:
        replay = _Replay(prefix)
        yield resolve(tree, replay, given)[1]
        seen = replay.seen
        j = len(seen) - 1
        while j >= 0 and seen[j][0] == seen[j][1] - 1:
            j -= 1
        if j < 0:
            return
        prefix = [k for k, _ in seen[:j]] + [seen[j][0] + 1]


@dataclass
class _Replay:
    """Picks the options of ``prefix`` in the order the choices are reached, then the
    first options, noting each pick and how many options it had."""

    prefix: list[int]
    seen: list[tuple[int, int]] = field(default_factory=list)

    def __call__(self, choice: ast.Choice) -> int:
        k = self.prefix[len(self.seen)] if len(self.seen) < len(self.prefix) else 0
        self.seen.append((k, len(choice.options)))
        return k


@dataclass
class _Forced:
    """Picks the options of ``wanted`` (by the choice's offset), others at random."""

    wanted: dict[int, int]
    rng: random.Random

    def __call__(self, choice: ast.Choice) -> int:
        return self.wanted.get(choice.span.start, self.rng.randrange(len(choice.options)))


def covering(tree: ast.File, rng: random.Random, given: Collection[str] = ()) -> list[Picks]:
    """Members that take every option of every choice at least once (where a member can
    reach it), the other choices picked at random."""
    out: list[Picks] = []
    for choice, inside in choices(tree):
        forced = {c.span.start: i for c, i in inside}
        for i in range(len(choice.options)):
            wanted = {**forced, choice.span.start: i}
            if any(all(p.get(k) == v for k, v in wanted.items()) for p in out):
                continue
            for _ in range(8):  # a choice inside a block that only some options use
                picks = resolve(tree, _Forced(wanted, rng), given)[1]
                if picks.get(choice.span.start) == i:
                    out.append(picks)
                    break
    return out


# --- counting ---------------------------------------------------------------------------------
Refs = dict[frozenset[Unit], int]  # the units reached -> local ways to reach exactly those


def count(tree: ast.File, given: Collection[str] = ()) -> int:
    """The number of members, exactly; raises :class:`Entangled` for a space whose shared
    blocks make the count too long to compute."""
    names = _Names(tree, given)
    local: dict[Unit, Refs] = {}
    if tree.network is not None:
        local[NETWORK] = _refs(tree.network, (), names)
    for name, d in names.defs.items():
        local[("block", name)] = _refs(d.body, {p.name for p in d.params}, names)
    for name, v in names.vars.items():
        local[("var", name)] = _refs(v.value, (), names)
    memo: dict[tuple[frozenset[Unit], frozenset[Unit]], int] = {}

    def ways(done: frozenset[Unit], pending: frozenset[Unit]) -> int:
        if not pending:
            return 1
        key = (done, pending)
        if key in memo:
            return memo[key]
        if len(memo) >= MAX_STATES:
            raise Entangled("the space shares blocks between its options in too many ways")
        unit = min(pending)
        now = done | {unit}
        total = sum(
            n * ways(now, (pending - {unit}) | (refs - now)) for refs, n in local[unit].items()
        )
        memo[key] = total
        return total

    return ways(frozenset(), frozenset(names.roots))


def _refs(v: ast.Value, params: Collection[str], names: _Names) -> Refs:
    if isinstance(v, ast.Chain):
        out: Refs = {frozenset(): 1}
        for layer in v.layers:
            if isinstance(layer, ast.Choice):
                options: Refs = {}
                for option in layer.options:
                    for refs, n in _refs(option, params, names).items():
                        options[refs] = options.get(refs, 0) + n
                out = _times(out, options)
            else:
                unit = names.call(layer.name, params)
                out = _times(out, {frozenset([unit] if unit else []): 1})
                for arg in layer.args:
                    out = _times(out, _refs(arg.value, params, names))
        return out
    if isinstance(v, ast.Var):
        unit = names.name(v.name, ())
        return {frozenset([unit] if unit else []): 1}
    if isinstance(v, ast.NameRef):
        unit = names.name(v.name, params)
        return {frozenset([unit] if unit else []): 1}
    if isinstance(v, ast.Negate):
        return _refs(v.operand, params, names)
    if isinstance(v, ast.BinOp):
        return _times(_refs(v.left, params, names), _refs(v.right, params, names))
    return {frozenset(): 1}


def _times(a: Refs, b: Refs) -> Refs:
    out: Refs = {}
    for ra, na in a.items():
        for rb, nb in b.items():
            out[ra | rb] = out.get(ra | rb, 0) + na * nb
    if len(out) > MAX_STATES:
        raise Entangled("the space shares blocks between its options in too many ways")
    return out
