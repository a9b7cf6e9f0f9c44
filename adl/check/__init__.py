"""Checking a parsed file: which networks it holds, in which roles, and whether they are valid."""
from __future__ import annotations

import re

from ..errors import ADLError, Diagnostic
from ..registry import DECODER, ENCODER, JOINT, ROLES, Hyper
from ..source import Source
from ..syntax import ast
from .checker import Checker
from .program import CheckedChain, Network, Node, Program

__all__ = ["check_tree", "role_from_name", "CheckedChain", "Network", "Node", "Program"]

_SUFFIX = re.compile(r"\.(enc|dec|joint|encoder|decoder)\.adl$")
_SUFFIX_ROLE = {"enc": ENCODER, "encoder": ENCODER, "dec": DECODER, "decoder": DECODER,
                "joint": JOINT}


def role_from_name(name: str) -> str | None:
    """``x.enc.adl`` -> encoder, ``x.dec.adl`` -> decoder, ``x.joint.adl`` -> joint."""
    m = _SUFFIX.search(name)
    return _SUFFIX_ROLE[m.group(1)] if m else None


def entries(tree: ast.File, source: Source, role: str | None) -> dict[str, ast.Chain]:
    """The file's networks by role: a bare chain in the given (or file-named) role, or the
    ``encoder =``, ``decoder =`` and ``joint =`` definitions."""
    problems: list[Diagnostic] = []

    def fail(message: str, span=None, hint: str | None = None) -> None:
        problems.append(Diagnostic("error", message, source, span, hint))

    named = {r: tree.definition(r) for r in ROLES if tree.definition(r) is not None}
    for r, d in named.items():
        if d.params:
            fail(f"'{r}' names the {r} network and cannot take parameters", d.name_span)
    if JOINT in named and (ENCODER in named or DECODER in named):
        fail("a file defines either 'joint' or 'encoder'/'decoder', not both",
             named[JOINT].name_span)
    if role is not None and role not in ROLES:
        fail(f"unknown role '{role}'", hint="roles are encoder, decoder and joint")
    if problems:
        raise ADLError(problems)

    if tree.network is not None:
        if named:
            first = next(iter(named.values()))
            fail(f"this file defines '{first.name}' and also has a bare network chain",
                 tree.network.span,
                 hint="name the chain ('encoder = ...' / 'decoder = ...') or remove it")
            raise ADLError(problems)
        the_role = role or role_from_name(source.name)
        if the_role is None:
            fail("cannot tell whether this network is an encoder, a decoder or a joint network",
                 tree.network.span,
                 hint="name the file *.enc.adl, *.dec.adl or *.joint.adl, pass --role "
                      "(role= in Python), or write 'encoder = ...'")
            raise ADLError(problems)
        return {the_role: tree.network}
    if not named:
        fail("no network: the file has no bare chain and defines no 'encoder', 'decoder' "
             "or 'joint'", source.end, hint="add a chain such as 'pos -> repeat(6, "
             "res_nd(mh_dot_self_att) -> res_nd(ffl)) -> norm'")
        raise ADLError(problems)
    if role is not None:
        if role not in named:
            fail(f"this file defines no '{role}'", hint=f"it defines {', '.join(named)}")
            raise ADLError(problems)
        named = {role: named[role]}
    return {r: d.body for r, d in named.items()}


def check_tree(tree: ast.File, source: Source, role: str | None = None,
               hyper: Hyper = Hyper(), source_d: int | None = None) -> Program:
    """Check every network of a parsed file; raises :class:`ADLError` with all errors."""
    networks = entries(tree, source, role)
    hyper = hyper.with_defaults((v.name, v.value) for v in tree.variables)
    checker = Checker(tree, source, hyper, source_d)
    checked: dict[str, Network] = {}
    for r in (ENCODER, DECODER, JOINT):
        if r not in networks:
            continue
        sd = source_d
        if r == DECODER and ENCODER in checked and source_d is None:
            sd = checked[ENCODER].d_out  # a model file: the decoder reads this encoder
        checker.source_d = sd if sd is not None else hyper.d_model
        chain = checker.network(networks[r], r)
        net = Network(r, chain, hyper, checker.source_d, source.name)
        checked[r] = net
        if r == DECODER and not net.attends_source:
            checker.report("this decoder never attends to the source: its translations "
                           "cannot depend on the input", networks[r].span,
                           hint="add a source attention such as 'res_nd(mh_dot_src_att)'",
                           severity="warning")
    for d in tree.definitions:
        if d.name not in checker.used | checker._recursive and d.name not in ROLES:
            checker.report(f"block '{d.name}' is never used", d.name_span, severity="warning")
    errors = [d for d in checker.diagnostics if d.is_error]
    if errors:
        raise ADLError(_in_order(checker.diagnostics))
    return Program(source, tree, checked, [d for d in checker.diagnostics if not d.is_error])


def _in_order(diags: list[Diagnostic]) -> list[Diagnostic]:
    """Errors first, each group in the order of the text."""
    return sorted(diags, key=lambda d: (not d.is_error, d.span.start if d.span else -1))
