"""Checking a parsed file: which networks it holds, in which roles, and whether they are valid."""

from __future__ import annotations

import math
from collections.abc import Callable

from ..errors import ADLError, Diagnostic, error
from ..limits import MAX_LAYERS, MEMORY_ENV, amount, memory_limit
from ..registry import DECODER, ENCODER, JOINT, ROLES, Hyper
from ..roles import role_from_name
from ..source import Source, Span
from ..syntax import ast
from .checker import Checker, Stop
from .pairs import pair_problems
from .program import CheckedChain, CheckedNetwork, Node, Program
from .space import Entangled, choices, count
from .spelling import sockeye_cnn_warnings
from .variables import recording

__all__ = ["check_tree", "CheckedChain", "CheckedNetwork", "Node", "Program"]


def entries(tree: ast.File, source: Source, role: str | None) -> dict[str, ast.Chain]:
    """The file's networks by role: a bare chain in the given (or file-named) role, or the
    ``encoder =``, ``decoder =`` and ``joint =`` definitions."""
    problems: list[Diagnostic] = []

    def fail(message: str, span=None, hint: str | None = None) -> None:
        problems.append(Diagnostic("error", message, source, span, hint))

    named = {r: d for r in ROLES if (d := tree.definition(r)) is not None}
    for r, d in named.items():
        if d.params:
            fail(f"'{r}' names the {r} network and cannot take parameters", d.name_span)
    if JOINT in named and (ENCODER in named or DECODER in named):
        fail(
            "a file defines either 'joint' or 'encoder'/'decoder', not both", named[JOINT].name_span
        )
    if role is not None and role not in ROLES:
        fail(f"unknown role '{role}'", hint="roles are encoder, decoder and joint")
    if problems:
        raise ADLError(problems)

    if tree.network is not None:
        if named:
            first = next(iter(named.values()))
            fail(
                f"this file defines '{first.name}' and also has a bare network chain",
                tree.network.span,
                hint="name the chain ('encoder = ...' / 'decoder = ...') or remove it",
            )
            raise ADLError(problems)
        the_role = role or role_from_name(source.name)
        if the_role is None:
            fail(
                "cannot tell whether this network is an encoder, a decoder or a joint network",
                tree.network.span,
                hint="name the file *.enc.adl, *.dec.adl or *.joint.adl, pass --role "
                "(role= in Python), or write 'encoder = ...'",
            )
            raise ADLError(problems)
        return {the_role: tree.network}
    if not named:
        fail(
            "no network: the file has no bare chain and defines no 'encoder', 'decoder' or 'joint'",
            source.end,
            hint="add a chain such as 'pos -> repeat(6, "
            "res_nd(mh_dot_self_att) -> res_nd(ffl)) -> norm'",
        )
        raise ADLError(problems)
    if role is not None:
        if role not in named:
            fail(f"this file defines no '{role}'", hint=f"it defines {', '.join(named)}")
            raise ADLError(problems)
        named = {role: named[role]}
    return {r: d.body for r, d in named.items()}


def check_tree(
    tree: ast.File,
    source: Source,
    role: str | None = None,
    hyper: Hyper = Hyper(),
    source_d: int | None = None,
    max_memory: int | None = None,
) -> Program:
    """Check every network of a parsed file; raises :class:`ADLError` with all errors.

    Checking stops at the limits of :mod:`adl.limits` (the first one reached is the last
    error); a network needing more than ``max_memory`` bytes (default:
    :func:`adl.limits.memory_limit`) is refused. The program lists the variables the check
    read (``variables_read``)."""
    refuse_space(tree, source, hyper)
    limit = resolve_memory_limit(max_memory)
    with recording() as reads:
        program = _check_tree(tree, source, role, hyper, source_d, limit)
    program.variables_read = frozenset(reads)
    return program


def _check_tree(
    tree: ast.File,
    source: Source,
    role: str | None,
    hyper: Hyper,
    source_d: int | None,
    limit: int,
) -> Program:
    networks = entries(tree, source, role)
    hyper = hyper.with_defaults((v.name, v.value) for v in tree.variables)
    checker = Checker(tree, source, hyper, source_d)
    checked: dict[str, CheckedNetwork] = {}
    try:
        _check_networks(tree, source, networks, hyper, source_d, limit, checker, checked)
    except Stop:
        raise ADLError(_in_order(checker.diagnostics)) from None
    errors = [d for d in checker.diagnostics if d.is_error]
    if errors:
        raise ADLError(_in_order(checker.diagnostics))
    return Program(source, tree, checked, [d for d in checker.diagnostics if not d.is_error])


def _check_networks(
    tree: ast.File,
    source: Source,
    networks: dict[str, ast.Chain],
    hyper: Hyper,
    source_d: int | None,
    limit: int,
    checker: Checker,
    checked: dict[str, CheckedNetwork],
) -> None:
    for r in (ENCODER, DECODER, JOINT):
        if r not in networks:
            continue
        sd = source_d
        if r == DECODER and ENCODER in checked and source_d is None:
            sd = checked[ENCODER].d_out  # a model file: the decoder reads this encoder
        checker.source_d = sd if sd is not None else hyper.d_model
        chain = checker.network(networks[r], r)
        net = CheckedNetwork(r, chain, hyper, checker.source_d, source.name)
        checked[r] = net
        for message, span, hint in size_problems(net, networks[r].span, limit):
            checker.report(message, span, hint=hint)
        if r == DECODER and not checker.errors:  # after an error, blocks are a guess
            encoder = checked.get(ENCODER) if source_d is None else None
            for node, refusal in pair_problems(net, encoder):
                checker.report(str(refusal), arg_span(node, refusal.at), hint=refusal.hint)
        if r == DECODER and not net.attends_source:
            checker.report(
                "this decoder never attends to the source: its translations "
                "cannot depend on the input",
                networks[r].span,
                hint="add a source attention such as 'res_nd(mh_dot_src_att)'",
                severity="warning",
            )
    for d in tree.definitions:
        if d.name not in checker.used | checker._recursive and d.name not in ROLES:
            checker.report(f"block '{d.name}' is never used", d.name_span, severity="warning")
    for w in sockeye_cnn_warnings(tree, source):
        checker.report(w.message, w.span, hint=w.hint, severity="warning")


def refuse_space(tree: ast.File, source: Source, hyper: Hyper) -> None:
    """A text with choices is a space of programs, not a program: an error at its first
    choice, saying how many programs it holds and what reads it."""
    found = choices(tree)
    if not found:
        return
    try:
        size = f"{count(tree, dict(hyper.vars)):,}"
    except Entangled:
        size = "many"
    raise error(
        f"this text is a space of {size} programs (it has a choice), not one program",
        source,
        found[0][0].span,
        hint="adl compile --check checks a space (adl.check_space in Python); adl search "
        "searches one (docs/search.md)",
    )


def resolve_memory_limit(max_memory: int | None) -> int:
    """The memory limit in bytes, or an :class:`ADLError` for an unreadable setting."""
    try:
        return memory_limit(max_memory)
    except ValueError as exc:
        raise error(str(exc)) from None


def size_problems(
    net: CheckedNetwork, span: Span, max_memory: int
) -> list[tuple[str, Span, str | None]]:
    """The layers a network builds (repeat copies counted) and its memory, against the
    limits: each problem at the innermost layer that alone exceeds the limit."""
    problems: list[tuple[str, Span, str | None]] = []
    if net.layers > MAX_LAYERS:
        where = _heaviest(net.chain, lambda n: n.layers, MAX_LAYERS)
        count = net.layers if where is None else where.layers
        problems.append(
            (
                f"{_what(where)} builds {count:,} layers, more than the limit of "
                f"{MAX_LAYERS:,} (every repeat copy counted)",
                span if where is None else where.call.span,
                None,
            )
        )
    if net.bytes > max_memory:
        where = _heaviest(net.chain, lambda n: n.bytes, max_memory)
        size, params = (net.bytes, net.params) if where is None else (where.bytes, where.params)
        problems.append(
            (
                f"{_what(where)} needs about {amount(size)} for its {params:,} parameters "
                f"(float32) and fixed tensors, more than the memory limit of "
                f"{amount(max_memory)}",
                span if where is None else where.call.span,
                f"set {MEMORY_ENV} (e.g. {MEMORY_ENV}=64G) or pass max_memory= to allow more",
            )
        )
    return problems


def _what(node: Node | None) -> str:
    return "this network" if node is None else f"'{node.name}'"


def _heaviest(chain: CheckedChain, measure: Callable[[Node], int], limit: int) -> Node | None:
    """The innermost layer whose own measure exceeds ``limit`` (None: no single one does)."""
    found = None
    chains = [chain]
    while chains:
        over = [n for c in chains for n in c.nodes if measure(n) > limit]
        if not over:
            break
        found = over[0]
        chains = found.children
    return found


def arg_span(node: Node, at: str | None) -> Span:
    """The span of a node's argument (by its canonical name), else of the call."""
    for arg in node.call.keywords:
        if at is not None and node.spec.param(arg.keyword) is node.spec.param(at):
            return arg.value.span
    return node.call.span


def _in_order(diags: list[Diagnostic]) -> list[Diagnostic]:
    """Errors first, each group in the order of the text."""
    return sorted(diags, key=lambda d: (not d.is_error, d.span.start if d.span else math.inf))
