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
from ..layers import REGISTRY
from ..limits import (
    MAX_BLOCK_DEPTH,
    MAX_ERRORS,
    MAX_LAYER_DEPTH,
    MAX_LAYERS,
    MAX_SIZE,
    MAX_STEPS,
)
from ..registry import ALL_ROLES, Hyper, LayerInput, LayerOutput, LayerSpec, Refusal
from ..source import Source, Span
from ..syntax import ast
from ..syntax.printer import to_text
from ..types import ChainRef, ModelDefault, describe
from .bind import Problem, bind
from .program import CheckedChain, Node
from .recursion import recursive_blocks
from .values import Budget, EvalError, OverBudget, Scope, Thunk, evaluate

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
    nest: int = 0  # layers this chain is inside (res(res(x)): x is at 2)

    def inside(self) -> _Where:
        """The place of a layer's sub-chain."""
        return _Where(self.role, self.uses, self.blocks, self.nest + 1)


class Stop(Exception):
    """Checking stops here: a limit was reached (the diagnostic says which)."""


class Checker:
    def __init__(self, tree: ast.File, source: Source, hyper: Hyper, source_d: int | None = None):
        self.tree = tree
        self.source = source
        self.hyper = hyper
        self.source_d = source_d if source_d is not None else hyper.d_model
        self.defs = {d.name: d for d in tree.definitions}
        self.block_names = frozenset(self.defs)
        self.diagnostics: list[Diagnostic] = []
        self._seen: set[tuple] = set()
        self._errors = 0
        self._count = 0  # layers checked (each block use expanded; a repeat's body once)
        self.budget = Budget(MAX_STEPS)
        self._hints: dict[tuple[str, int], str | None] = {}
        self.used: set[str] = set()
        self._recursive, cycles = recursive_blocks(tree)
        for name, cycle, span in cycles:
            self.report(
                f"recursive block '{name}': {cycle}",
                span,
                hint="a block cannot contain itself; use repeat(n, ...) for copies",
            )

    # --- diagnostics ----------------------------------------------------------------------
    def report(
        self,
        message: str,
        span: Span | None,
        where: _Where | None = None,
        hint: str | None = None,
        severity: str = "error",
    ) -> None:
        notes = (
            tuple(
                Note(f"in block '{u.block}', used here", self.source, u.span)
                for u in reversed(where.uses)
            )
            if where
            else ()
        )
        d = Diagnostic(severity, message, self.source, span, hint, notes)  # type: ignore[arg-type]
        if d.key() not in self._seen:
            self._seen.add(d.key())
            self.diagnostics.append(d)
            if d.is_error:
                self._errors += 1
                if self._errors >= MAX_ERRORS:
                    self.diagnostics.append(
                        Diagnostic(
                            "error", f"checking stopped after {MAX_ERRORS} errors", self.source
                        )
                    )
                    raise Stop

    @property
    def errors(self) -> int:
        """Errors reported so far."""
        return self._errors

    def stop(
        self, message: str, span: Span | None, where: _Where | None, hint: str | None = None
    ) -> None:
        """Report a limit at the outermost block use that leads here, and stop checking."""
        uses = where.uses if where is not None else ()
        self.report(message, uses[0].span if uses else span, None, hint)
        raise Stop

    def over_budget(self, span: Span | None) -> None:
        self.stop(
            f"checking this text takes more than {MAX_STEPS:,} steps (layers, block uses "
            f"and values evaluated)",
            span,
            None,
            hint="a block or value used many times over multiplies the work",
        )

    def hint_for(self, name: str, candidates: list[str]) -> str | None:
        """did_you_mean, once per name and scope (a block used many times over meets the
        same unknown name again)."""
        key = (name, len(candidates))
        if key not in self._hints:
            self._hints[key] = did_you_mean(name, candidates)
        return self._hints[key]

    # --- chains ---------------------------------------------------------------------------
    def network(self, chain: ast.Chain, role: str) -> CheckedChain:
        """The checked network; raises :class:`Stop` (after reporting why) at a limit."""
        try:
            return self.chain(
                chain, Scope(blocks=self.block_names), self.hyper.d_model, _Where(role), True
            )
        except OverBudget:
            self.over_budget(chain.span)
            raise  # pragma: no cover - over_budget raises Stop

    def chain(
        self, chain: ast.Chain, scope: Scope, d_in: int, where: _Where, sure: bool
    ) -> CheckedChain:
        """Check a chain read at size ``d_in``. ``sure`` is false when that size is only a
        guess after an earlier error: size errors that follow from a guess are not reported."""
        nodes: list[Node] = []
        d = d_in
        for call in chain.calls:  # a program's chain: a space is refused before
            for node in self.call(call, scope, d, where, sure):
                nodes.append(node)
                d, sure = node.d_out, node.sure
        return CheckedChain(nodes, d_in, d, chain.span)

    def call(self, call: ast.Call, scope: Scope, d: int, where: _Where, sure: bool) -> list[Node]:
        self.budget.spend()
        name = call.name
        if name in scope.params:
            return self.parameter(call, scope, d, where, sure)
        if name in self.defs:
            return self.expand(call, scope, d, where, sure)
        spec = REGISTRY.get(name)
        if spec is not None:
            return [self.layer(spec, call, scope, d, where, sure)]
        candidates = [*REGISTRY.names(), *self.defs, *scope.params]
        hint = self.hint_for(name, candidates)
        self.report(f"unknown layer '{name}'", call.name_span, where, hint)
        for arg in call.args:  # still look inside, for the errors there
            self.lookinside(arg.value, scope, d, where)
        return [self.unknown(call, d)]

    def unknown(self, call: ast.Call, d: int) -> Node:
        """A layer that could not be resolved: guessed to keep the size."""
        return Node(_UNKNOWN, {}, call, d, d, sure=False)

    def lookinside(self, value: ast.Value, scope: Scope, d: int, where: _Where) -> None:
        if isinstance(value, ast.Chain) and value.bare_name() is None:
            if where.nest < MAX_LAYER_DEPTH:
                self.chain(value, scope, d, where.inside(), False)

    # --- block parameters and blocks --------------------------------------------------------
    def parameter(
        self, call: ast.Call, scope: Scope, d: int, where: _Where, sure: bool
    ) -> list[Node]:
        if call.args:
            self.report(
                f"'{call.name}' is a parameter of block '{scope.block}' and takes no arguments",
                call.span,
                where,
            )
        try:
            value = evaluate(
                ast.Chain((ast.Call(call.name, (), call.span, call.name_span),), call.span),
                scope,
                self.hyper,
                budget=self.budget,
            )
        except EvalError as exc:
            self.report(str(exc), exc.span, where, exc.hint)
            return [self.unknown(call, d)]
        if not isinstance(value, ChainRef):
            self.report(
                f"'{call.name}' stands for {_value_text(value)} here, not a layer",
                call.name_span,
                where,
            )
            return [self.unknown(call, d)]
        return self.chain(value.chain, value.scope, d, where, sure).nodes

    def expand(self, call: ast.Call, scope: Scope, d: int, where: _Where, sure: bool) -> list[Node]:
        block = self.defs[call.name]
        self.used.add(block.name)
        if block.name in self._recursive or any(u.block == block.name for u in where.uses):
            return [self.unknown(call, d)]  # reported once, by recursive_blocks
        if len(where.uses) >= MAX_BLOCK_DEPTH:
            self.stop(
                f"blocks are used inside blocks more than {MAX_BLOCK_DEPTH} levels deep "
                f"(block '{block.name}' is level {len(where.uses) + 1})",
                call.span,
                where,
                hint="define the network with fewer levels of blocks",
            )
        params: dict[str, Thunk] = {}
        names = [p.name for p in block.params]
        for i, arg in enumerate(call.positional):
            if i >= len(names):
                self.report(
                    f"too many arguments: block '{block.name}' takes {len(names)}",
                    arg.span,
                    where,
                    hint=f"defined as {_head(block)}",
                )
                break
            params[names[i]] = Thunk(arg.value, scope)
        for arg in call.keywords:
            if arg.key not in names:
                self.report(
                    f"block '{block.name}' has no parameter '{arg.key}'",
                    arg.key_span,
                    where,
                    did_you_mean(arg.keyword, names) or f"defined as {_head(block)}",
                )
            elif arg.key in params:
                self.report(
                    f"parameter '{arg.key}' of block '{block.name}' is given twice", arg.span, where
                )
            else:
                params[arg.key] = Thunk(arg.value, scope)
        for p in block.params:
            if p.name not in params:
                if p.default is None:
                    self.report(
                        f"block '{block.name}' needs the argument '{p.name}'",
                        call.span,
                        where,
                        hint=f"defined as {_head(block)}",
                    )
                    return [self.unknown(call, d)]
                params[p.name] = Thunk(p.default, Scope(blocks=self.block_names))
        inner = _Where(
            where.role,
            where.uses + (_Use(block.name, call.span),),
            where.blocks + (block.name,),
            where.nest,
        )
        return self.chain(block.body, scope.inner(params, block.name), d, inner, sure).nodes

    # --- layers -----------------------------------------------------------------------------
    def layer(
        self, spec: LayerSpec, call: ast.Call, scope: Scope, d: int, where: _Where, sure: bool
    ) -> Node:
        self._count += 1
        if self._count > MAX_LAYERS:
            self.stop(
                f"the network expands to more than {MAX_LAYERS:,} layers "
                f"(every block use and repeat copy counted)",
                call.span,
                where,
                hint=_growth_hint(where),
            )
        if where.role not in spec.roles:
            self.report(
                f"'{call.name}' is not allowed in {_ROLE_NAMES[where.role]}: {spec.why}",
                call.name_span,
                where,
                hint=_role_hint(spec, where.role),
            )
        problems: list[Problem] = []
        args = bind(
            spec, call, lambda v: evaluate(v, scope, self.hyper, budget=self.budget), problems
        )
        for problem in problems:
            self.report(problem.message, problem.span, where, problem.hint)
        node = Node(spec, {}, call, d, d, blocks=where.blocks, sure=False)  # a guess until ruled
        if args is None:
            for arg in call.args:
                self.lookinside(arg.value, scope, d, where)
            return node
        node.given = tuple(args)
        h = LayerInput(d, self.hyper, where.role, self.source_d)
        for p in spec.params:
            if p.name not in args:
                args[p.name] = (
                    []
                    if p.variadic
                    else p.default.resolve(h)
                    if isinstance(p.default, ModelDefault)
                    else p.default
                )
        # Sub-chains read this layer's input.
        if any(p.is_chain and p.name in args for p in spec.params):
            if where.nest >= MAX_LAYER_DEPTH:
                self.report(
                    f"layers nest more than {MAX_LAYER_DEPTH} levels deep here "
                    f"('{call.name}' is level {where.nest + 1})",
                    call.span,
                    where,
                    hint="a block counts as the layers it stands for",
                )
                return node
            inside = where.inside()
            for p in spec.params:
                if p.is_chain and p.name in args:
                    if p.variadic:
                        args[p.name] = [
                            self.chain(r.chain, r.scope, d, inside, sure) for r in args[p.name]
                        ]
                    else:
                        r = args[p.name]
                        args[p.name] = self.chain(r.chain, r.scope, d, inside, sure)
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
        node.own_buffer_bytes = out.buffer_bytes
        if out.d > MAX_SIZE:
            if sure:
                self.report(
                    f"'{call.name}' makes the size {out.d:,}, more than the largest size "
                    f"{MAX_SIZE:,}",
                    call.span,
                    where,
                )
            node.d_out, sure = d, False
        node.sure = sure
        return node


def _arg_span(call: ast.Call, spec: LayerSpec, at: str | None) -> Span:
    """The span of the argument a refusal names, else of the whole call."""
    if at is None:
        return call.span
    param = spec.param(at)
    for arg in call.keywords:
        if param is not None and spec.param(arg.keyword) is param:
            return arg.value.span
    # A positional argument: find it by binding order (the first one of a matching kind).
    chains = [
        a for a in call.positional if isinstance(a.value, ast.Chain) and a.value.bare_name() is None
    ]
    if param is not None and param.is_chain and chains:
        return chains[0].value.span
    index = [p.name for p in spec.params].index(param.name) if param else -1
    positional = call.positional
    if 0 <= index < len(positional):
        return positional[index].value.span
    if param is not None and param.is_chain and positional:
        return positional[-1].value.span
    return call.span


def _growth_hint(where: _Where) -> str:
    if not where.uses:
        return "split the network, or use repeat(n, ...), which checks its chain once"
    names = list(dict.fromkeys(u.block for u in where.uses))
    shown = ", ".join(f"'{n}'" for n in names[:3]) + (", ..." if len(names) > 3 else "")
    return (
        f"through the blocks {shown}: each use of a block copies its layers, "
        "so a block that uses another twice doubles it"
    )


def _role_hint(spec: LayerSpec, role: str) -> str | None:
    if spec.attends_source:
        return "use self-attention ('mh_dot_self_att') here, or move this layer to a decoder"
    if spec.name == "birnn":
        return "use 'rnn', which reads only earlier positions"
    return None


def _head(block: ast.Definition) -> str:
    return to_text(ast.Definition(block.name, block.params, ast.Chain(()))).rstrip(" =")


def _value_text(value: Any) -> str:
    return describe(value)


def _unknown_spec() -> LayerSpec:
    def unknown(h: LayerInput, /) -> LayerOutput:  # pragma: no cover - never called
        raise AssertionError

    return LayerSpec("?", unknown, (), (), ALL_ROLES)


_UNKNOWN = _unknown_spec()
