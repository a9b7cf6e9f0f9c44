"""Resolve names, expand blocks, bind arguments, infer sizes and enforce roles.

One :class:`Checker` walks one file's network chain. It never stops at the first problem:
every error is recorded with its span (and, inside a block, a note for each block use it
came through), and a layer whose input size is unknown after an earlier error is still
resolved and bound, so that all errors of a file are reported together.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..errors import Diagnostic, Note, did_you_mean
from ..registry import REGISTRY, Hyper, In, LayerSpec, Refusal
from ..source import Source, Span
from ..syntax import ast
from ..types import ChainRef, ModelDefault
from .bind import Problem, bind
from .program import CheckedChain, Node
from .values import EvalError, Scope, Thunk, evaluate

MAX_LAYERS = 10_000  # a guard against blocks that expand exponentially

_ROLE_NAMES = {"encoder": "an encoder", "decoder": "a decoder", "joint": "a joint network"}


@dataclass
class _Use:
    """A block use on the expansion stack (for notes and recursion checks)."""

    block: str
    span: Span


@dataclass
class _Where:
    role: str
    uses: tuple[_Use, ...] = ()
    blocks: tuple[str, ...] = field(default=())


class Checker:
    def __init__(self, tree: ast.File, source: Source, hyper: Hyper, source_d: int | None = None):
        self.tree = tree
        self.source = source
        self.hyper = hyper
        self.source_d = source_d if source_d is not None else hyper.d_model
        self.defs = {d.name: d for d in tree.definitions}
        self.diagnostics: list[Diagnostic] = []
        self._seen: set[tuple] = set()
        self._count = 0
        self.used: set[str] = set()
        self._recursive, cycles = recursive_blocks(tree)
        for name, cycle, span in cycles:
            self.report(f"recursive block '{name}': {cycle}", span,
                        hint="a block cannot contain itself; use repeat(n, ...) for copies")

    # --- diagnostics ----------------------------------------------------------------------
    def report(self, message: str, span: Span | None, where: _Where | None = None,
               hint: str | None = None, severity: str = "error") -> None:
        notes = tuple(Note(f"in block '{u.block}', used here", self.source, u.span)
                      for u in reversed(where.uses)) if where else ()
        d = Diagnostic(severity, message, self.source, span, hint, notes)  # type: ignore[arg-type]
        if d.key() not in self._seen:
            self._seen.add(d.key())
            self.diagnostics.append(d)

    # --- chains ---------------------------------------------------------------------------
    def network(self, chain: ast.Chain, role: str) -> CheckedChain:
        return self.chain(chain, Scope(blocks=frozenset(self.defs)), self.hyper.d_model,
                          _Where(role), True)

    def chain(self, chain: ast.Chain, scope: Scope, d_in: int, where: _Where,
              sure: bool) -> CheckedChain:
        """Check a chain read at size ``d_in``. ``sure`` is false when that size is only a
        guess after an earlier error: size errors that follow from a guess are not reported."""
        nodes: list[Node] = []
        d = d_in
        for call in chain.layers:
            for node in self.call(call, scope, d, where, sure):
                nodes.append(node)
                d, sure = node.d_out, node.sure
            if self._count > MAX_LAYERS:
                break
        return CheckedChain(nodes, d_in, d, chain.span)

    def call(self, call: ast.Call, scope: Scope, d: int, where: _Where,
             sure: bool) -> list[Node]:
        name = call.name
        if name in scope.params:
            return self.parameter(call, scope, d, where, sure)
        if name in self.defs:
            return self.expand(call, scope, d, where, sure)
        spec = REGISTRY.get(name)
        if spec is not None:
            return [self.layer(spec, call, scope, d, where, sure)]
        candidates = [*REGISTRY.names(), *self.defs, *scope.params]
        self.report(f"unknown layer '{name}'", call.name_span, where,
                    did_you_mean(name, candidates))
        for arg in call.args:  # still look inside, for the errors there
            self.lookinside(arg.value, scope, d, where)
        return [self.unknown(call, d)]

    def unknown(self, call: ast.Call, d: int) -> Node:
        """A layer that could not be resolved: guessed to keep the size."""
        return Node(_UNKNOWN, {}, call, d, d, sure=False)

    def lookinside(self, value: ast.Value, scope: Scope, d: int, where: _Where) -> None:
        if isinstance(value, ast.Chain) and value.bare_name() is None:
            self.chain(value, scope, d, where, False)

    # --- block parameters and blocks --------------------------------------------------------
    def parameter(self, call: ast.Call, scope: Scope, d: int, where: _Where,
                  sure: bool) -> list[Node]:
        if call.args:
            self.report(f"'{call.name}' is a parameter of block '{scope.block}' and takes no "
                        f"arguments", call.span, where)
        try:
            value = evaluate(ast.Chain((ast.Call(call.name, (), call.span, call.name_span),),
                                       call.span), scope, self.hyper)
        except EvalError as exc:
            self.report(str(exc), exc.span, where, exc.hint)
            return [self.unknown(call, d)]
        if not isinstance(value, ChainRef):
            self.report(f"'{call.name}' stands for {_value_text(value)} here, not a layer",
                        call.name_span, where)
            return [self.unknown(call, d)]
        return self.chain(value.chain, value.scope, d, where, sure).nodes

    def expand(self, call: ast.Call, scope: Scope, d: int, where: _Where,
               sure: bool) -> list[Node]:
        block = self.defs[call.name]
        self.used.add(block.name)
        if block.name in self._recursive or any(u.block == block.name for u in where.uses):
            return [self.unknown(call, d)]  # reported once, by recursive_blocks
        params: dict[str, Thunk] = {}
        names = [p.name for p in block.params]
        for i, arg in enumerate(call.positional):
            if i >= len(names):
                self.report(f"too many arguments: block '{block.name}' takes {len(names)}",
                            arg.span, where, hint=f"defined as {_head(block)}")
                break
            params[names[i]] = Thunk(arg.value, scope)
        for arg in call.keywords:
            if arg.key not in names:
                self.report(f"block '{block.name}' has no parameter '{arg.key}'", arg.key_span,
                            where, did_you_mean(arg.key, names) or f"defined as {_head(block)}")
            elif arg.key in params:
                self.report(f"parameter '{arg.key}' of block '{block.name}' is given twice",
                            arg.span, where)
            else:
                params[arg.key] = Thunk(arg.value, scope)
        for p in block.params:
            if p.name not in params:
                if p.default is None:
                    self.report(f"block '{block.name}' needs the argument '{p.name}'", call.span,
                                where, hint=f"defined as {_head(block)}")
                    return [self.unknown(call, d)]
                params[p.name] = Thunk(p.default, Scope(blocks=frozenset(self.defs)))
        inner = _Where(where.role, where.uses + (_Use(block.name, call.span),),
                       where.blocks + (block.name,))
        return self.chain(block.body, scope.inner(params, block.name), d, inner, sure).nodes

    # --- layers -----------------------------------------------------------------------------
    def layer(self, spec: LayerSpec, call: ast.Call, scope: Scope, d: int, where: _Where,
              sure: bool) -> Node:
        self._count += 1
        if self._count == MAX_LAYERS + 1:
            self.report(f"the network expands to more than {MAX_LAYERS} layers", call.span, where)
        if where.role not in spec.roles:
            self.report(f"'{call.name}' is not allowed in {_ROLE_NAMES[where.role]}: {spec.why}",
                        call.name_span, where, hint=_role_hint(spec, where.role))
        problems: list[Problem] = []
        args = bind(spec, call, lambda v: evaluate(v, scope, self.hyper), problems)
        for p in problems:
            self.report(p.message, p.span, where, p.hint)
        node = Node(spec, {}, call, d, d, blocks=where.blocks, sure=False)  # a guess until ruled
        if args is None:
            for arg in call.args:
                self.lookinside(arg.value, scope, d, where)
            return node
        node.given = tuple(args)
        h = In(d, self.hyper, where.role, self.source_d)
        for p in spec.params:
            if p.name not in args:
                args[p.name] = [] if p.variadic else \
                    p.default.resolve(h) if isinstance(p.default, ModelDefault) else p.default
        # Sub-chains read this layer's input.
        for p in spec.params:
            if p.is_chain and p.name in args:
                if p.variadic:
                    args[p.name] = [self.chain(r.chain, r.scope, d, where, sure)
                                    for r in args[p.name]]
                else:
                    r = args[p.name]
                    args[p.name] = self.chain(r.chain, r.scope, d, where, sure)
        node.args = args
        sure = sure and all(c.sure for c in node.children)
        variadic = next((p.name for p in spec.params if p.variadic), None)
        rest = args.get(variadic, []) if variadic else []
        try:
            out = spec.rule(h, *rest, **{k: v for k, v in args.items() if k != variadic})
        except Refusal as exc:
            if sure:
                self.report(str(exc), _arg_span(call, spec, exc.at), where, exc.hint)
            return node
        node.d_out, node.own_params, node.repeat = out.d, out.params, out.repeat
        node.sure = sure
        return node


def _arg_span(call: ast.Call, spec: LayerSpec, at: str | None) -> Span:
    """The span of the argument a refusal names, else of the whole call."""
    if at is None:
        return call.span
    param = spec.param(at)
    for arg in call.keywords:
        if param is not None and spec.param(arg.key) is param:
            return arg.value.span
    # A positional argument: find it by binding order (the first one of a matching kind).
    chains = [a for a in call.positional if isinstance(a.value, ast.Chain)
              and a.value.bare_name() is None]
    if param is not None and param.is_chain and chains:
        return chains[0].value.span
    index = [p.name for p in spec.params].index(param.name) if param else -1
    positional = call.positional
    if 0 <= index < len(positional):
        return positional[index].value.span
    if param is not None and param.is_chain and positional:
        return positional[-1].value.span
    return call.span


def _role_hint(spec: LayerSpec, role: str) -> str | None:
    if spec.attends_source:
        return "use self-attention ('mh_dot_self_att') here, or move this layer to a decoder"
    if spec.name == "birnn":
        return "use 'rnn', which reads only earlier positions"
    return None


def _head(block: ast.Definition) -> str:
    from ..syntax.printer import to_text

    return to_text(ast.Definition(block.name, block.params, ast.Chain(()))).rstrip(" =")


def _value_text(value: Any) -> str:
    from ..types import describe

    return describe(value)


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
    seen: set[frozenset[str]] = set()
    for start in defs:
        path: list[str] = [start]
        visited: set[str] = {start}

        def visit(name: str) -> tuple[list[str], Span] | None:
            for target, span in edges.get(name, []):
                if target == start:
                    return path + [start], span
                if target not in visited:
                    visited.add(target)
                    path.append(target)
                    found = visit(target)
                    if found:
                        return found
                    path.pop()
            return None

        found = visit(start)
        if found:
            cycle, span = found
            members.update(cycle)
            if frozenset(cycle) not in seen:
                seen.add(frozenset(cycle))
                cycles.append((start, " -> ".join(cycle), span))
    return members, cycles


def _references(value: ast.Value, own: set[str], defs: dict, out: list) -> None:
    if isinstance(value, ast.Chain):
        for call in value.layers:
            if call.name in defs and call.name not in own:
                out.append((call.name, call.name_span))
            for arg in call.args:
                _references(arg.value, own, defs, out)


def _unknown_spec() -> LayerSpec:
    from ..registry import ALL_ROLES, Out

    def unknown(h: In, /) -> Out:  # pragma: no cover - never called
        raise AssertionError

    return LayerSpec("?", unknown, (), (), ALL_ROLES)


_UNKNOWN = _unknown_spec()
