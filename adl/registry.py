"""The layer registry: one decorator, everything else read from the Python definition.

A layer of the language is a plain function. Its signature gives the argument names, types,
defaults and keyword aliases; its docstring gives the description, the ``Size:`` rule and a
line per argument; the decorator gives the names it is spelled with and the roles it may
appear in. The function body is the dimension rule: called with the layer's input and its
bound arguments, it returns the output size and the parameter count::

    @layer(aliases=("mh_dot_att",), attends_source=True)
    def mh_dot_src_att(h: LayerInput, /, heads: Annotated[Count, aka("h")] = HEADS, ...) -> LayerOutput:
        \"\"\"Multi-head dot-product attention over the source (Domhan §2.3).

        Size: ``num_hidden`` (default: the input size).

        Args:
            heads: number of heads.
        \"\"\"
        ...

The registry never imports torch; the modules that implement layers live in :mod:`adl.nn`.
Nor does it import the layers: :mod:`adl.layers` imports it, registering every built-in layer,
and offers the full registry (``from adl.layers import REGISTRY``) to what looks layers up.
"""

from __future__ import annotations

import inspect
import re
import sys
import typing
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from .plugins import RULES_GROUP, NameClash, loading
from .plugins import load as load_plugins
from .types import ArgType, ChainType, ModelDefault, arg_type

ENCODER, DECODER, JOINT = "encoder", "decoder", "joint"
ROLES = (ENCODER, DECODER, JOINT)
ALL_ROLES = frozenset(ROLES)

REQUIRED = inspect.Parameter.empty


@dataclass(frozen=True)
class Hyper:
    """The model hyper-parameters a network is checked and built with."""

    d_model: int = 512  # model size: embeddings, and the default of most layer sizes
    heads: int = 8  # default number of attention heads ($heads)
    dropout: float = 0.1  # default dropout rate ($dropout)
    vars: tuple[tuple[str, Any], ...] = ()  # user variables ($NAME), as (name, value) pairs

    def var(self, name: str) -> Any:
        return self._table[name]

    def has_var(self, name: str) -> bool:
        return name in self._table

    def var_names(self) -> list[str]:
        return list(self._table)

    @cached_property
    def _table(self) -> dict[str, Any]:
        """Every variable by name (built once: a lookup is O(1))."""
        builtin = {"d_model": self.d_model, "heads": self.heads, "dropout": self.dropout}
        return {**builtin, **dict(self.vars)}

    def with_defaults(self, defaults: Iterable[tuple[str, Any]]) -> Hyper:
        """These variables' defaults (a file's ``$name = value``) under the ones set here."""
        given = dict(self.vars)
        merged = {**dict(defaults), **given}
        return Hyper(self.d_model, self.heads, self.dropout, tuple(sorted(merged.items())))


@dataclass(frozen=True)
class LayerInput:
    """What a layer's rule sees: its input size, the model, its role and the source size."""

    d: int
    hyper: Hyper
    role: str
    source_d: int

    @property
    def d_model(self) -> int:
        return self.hyper.d_model


@dataclass(frozen=True)
class LayerOutput:
    """A layer's output size and its own parameter count (sub-chains are counted apart).

    ``repeat`` multiplies the sub-chains' parameters (``repeat(n, ...)`` builds n copies);
    ``buffer_bytes`` are the fixed tensors a layer holds besides its parameters (a kernel)."""

    d: int
    params: int = 0
    repeat: int = 1
    buffer_bytes: int = 0


class Refusal(Exception):
    """Raised by a rule for an argument combination that cannot work; becomes a diagnostic
    at the argument named by ``at`` (or at the whole call)."""

    def __init__(self, message: str, at: str | None = None, hint: str | None = None):
        super().__init__(message)
        self.at = at
        self.hint = hint


@dataclass(frozen=True)
class ParamSpec:
    name: str
    type: ArgType
    default: Any
    aliases: tuple[str, ...] = ()
    doc: str = ""
    variadic: bool = False

    @property
    def required(self) -> bool:
        return self.default is REQUIRED and not self.variadic

    @property
    def is_chain(self) -> bool:
        return isinstance(self.type, ChainType)

    def default_text(self) -> str:
        if self.variadic:
            return "(any number)"
        if self.default is REQUIRED:
            return "required"
        if isinstance(self.default, ModelDefault):
            return self.default.label
        if self.default is None:
            return "derived"
        if isinstance(self.default, bool):
            return "true" if self.default else "false"
        return str(self.default)


@dataclass(frozen=True)
class LayerSpec:
    name: str
    rule: Callable[..., LayerOutput] = field(repr=False)
    params: tuple[ParamSpec, ...]
    aliases: tuple[str, ...] = ()
    roles: frozenset[str] = ALL_ROLES
    why: str = ""  # why the layer is refused outside its roles
    attends_source: bool = False
    summary: str = ""
    size_rule: str = ""
    doc: str = ""
    family: str = ""
    plugin: str = ""  # the plugin that registered it (adl.plugins.describe); "" if built in

    def param(self, key: str) -> ParamSpec | None:
        for p in self.params:
            if p.name == key or key in p.aliases:
                return p
        return None

    def keyword_names(self) -> list[str]:
        return [n for p in self.params if not p.variadic for n in (p.name, *p.aliases)]

    def usage(self) -> str:
        parts = []
        for p in self.params:
            if p.variadic:
                parts.append(f"{p.name}...")
            elif p.required:
                parts.append(p.name)
            else:
                parts.append(f"{p.name}={p.default_text()}")
        return f"{self.name}({', '.join(parts)})" if parts else self.name


class Registry:
    def __init__(self) -> None:
        self._specs: dict[str, LayerSpec] = {}
        self._names: dict[str, LayerSpec] = {}

    def add(self, spec: LayerSpec) -> None:
        names = (spec.name, *spec.aliases)
        for name in names:
            taken = self._names.get(name)
            if taken is not None:
                owner = taken.plugin or f"the built-in layers ({taken.family})"
                raise NameClash(
                    f"layer name '{name}' is taken: '{taken.name}' of {owner} has it"
                    + (", choose another name" if spec.plugin else "")
                )
        for name in names:
            self._names[name] = spec
        self._specs[spec.name] = spec

    def get(self, name: str) -> LayerSpec | None:
        load_plugins(RULES_GROUP)
        return self._names.get(name)

    def names(self) -> list[str]:
        load_plugins(RULES_GROUP)
        return sorted(self._names)

    def __iter__(self) -> Iterator[LayerSpec]:
        load_plugins(RULES_GROUP)
        return iter(sorted(self._specs.values(), key=lambda s: (s.family, s.name)))

    def __contains__(self, name: str) -> bool:
        return self.get(name) is not None


# Every layer of the language: the built-in families register here when :mod:`adl.layers`
# is imported (which offers this registry to those that look layers up, as
# ``adl.layers.REGISTRY``), the plugins' (entry-point group ``adl.layers``) at the first
# lookup, after them.
REGISTRY = Registry()


# why a layer over the source (attends_source=True) is refused outside a decoder
SOURCE_WHY = "it attends to the encoder's states, and only a decoder has them"


def layer(
    *,
    aliases: Iterable[str] = (),
    roles: Iterable[str] | None = None,
    why: str = "",
    attends_source: bool = False,
) -> Callable[[Callable[..., LayerOutput]], Callable[..., LayerOutput]]:
    """Register a layer rule under its function name (a trailing ``_`` is dropped).

    ``roles`` are the networks it may appear in (default: all) and ``why`` says why it is
    refused in the others. A layer that attends to the encoder's states
    (``attends_source=True``) is a decoder's: its role and ``why`` follow from that."""
    if attends_source:
        if roles is not None and set(roles) != {DECODER}:
            raise TypeError("a layer that attends to the source belongs to the decoder only")
        roles, why = (DECODER,), why or SOURCE_WHY
    allowed = ALL_ROLES if roles is None else frozenset(roles)

    def register(fn: Callable[..., LayerOutput]) -> Callable[..., LayerOutput]:
        REGISTRY.add(spec_of(fn, tuple(aliases), allowed, why, attends_source))
        return fn

    return register


def variant(
    of: Callable[..., LayerOutput],
    name: str,
    summary: str,
    *,
    drop: Iterable[str] = (),
    **options: Any,
) -> Callable[..., LayerOutput]:
    """Register a layer with the arguments, size rule and argument docs of the layer rule
    ``of`` but those in ``drop`` (they keep ``of``'s defaults), as ``name`` in the family of the
    calling module; ``summary`` replaces the first paragraph of ``of``'s docstring,
    ``options`` are :func:`layer`'s::

        hard_self_att = variant(mh_dot_self_att, "hard_self_att", "Hard ...", drop=("dropout",))

    For layers that share one dimension rule and differ in what the modules do with it
    (hard retrieval is dot attention that picks one key)."""
    dropped = set(drop)
    signature = inspect.signature(of)
    unknown = dropped - set(signature.parameters)
    if unknown:
        raise TypeError(f"{of.__name__} has no argument {', '.join(sorted(unknown))}")
    hints = typing.get_type_hints(of, include_extras=True)
    module = sys._getframe(1).f_globals["__name__"]  # the family, as for a decorated rule

    def rule(h: LayerInput, /, *args: Any, **kwargs: Any) -> LayerOutput:
        return of(h, *args, **kwargs)

    rule.__signature__ = signature.replace(  # type: ignore[attr-defined]
        parameters=[p for p in signature.parameters.values() if p.name not in dropped]
    )
    rule.__annotations__ = {k: v for k, v in hints.items() if k not in dropped}
    rule.__name__ = rule.__qualname__ = name
    rule.__module__ = module
    rule.__doc__ = _with_summary(inspect.getdoc(of) or "", summary, dropped)
    return layer(**options)(rule)


def _with_summary(doc: str, summary: str, dropped: set[str]) -> str:
    """``doc`` with its first paragraph replaced and the ``Args:`` entries of ``dropped``
    (with their continuation lines) left out."""
    lines = doc.splitlines()
    end = next((i for i, line in enumerate(lines) if not line.strip()), len(lines))
    out = inspect.cleandoc(summary).splitlines()
    skipping = False
    for line in lines[end:]:
        entry = _ARG.match(line)
        if entry:
            skipping = entry.group(1).lstrip("*") in dropped
        elif not line.startswith(" " * 8):
            skipping = False
        if not skipping:
            out.append(line)
    return "\n".join(out)


def spec_of(
    fn: Callable[..., LayerOutput],
    aliases: tuple[str, ...] = (),
    roles: frozenset[str] = ALL_ROLES,
    why: str = "",
    attends_source: bool = False,
) -> LayerSpec:
    doc = inspect.getdoc(fn) or ""
    summary, size_rule, arg_docs = _parse_docstring(doc)
    hints = typing.get_type_hints(fn, include_extras=True)
    params = []
    for i, p in enumerate(inspect.signature(fn).parameters.values()):
        if i == 0:
            if p.kind is not inspect.Parameter.POSITIONAL_ONLY:
                raise TypeError(
                    f"{fn.__name__}: the first parameter (the input) must be positional-only"
                )
            continue
        typ, al = arg_type(hints[p.name])
        params.append(
            ParamSpec(
                p.name,
                typ,
                p.default,
                al,
                arg_docs.get(p.name, ""),
                p.kind is inspect.Parameter.VAR_POSITIONAL,
            )
        )
        missing = [a for a in (p.name,) if a not in arg_docs]
        if missing:
            raise TypeError(f"{fn.__name__}: argument '{p.name}' has no line in the docstring")
    name = fn.__name__.rstrip("_")
    family = fn.__module__.rsplit(".", 1)[-1]
    return LayerSpec(
        name,
        fn,
        tuple(params),
        aliases,
        roles,
        why,
        attends_source,
        summary,
        size_rule,
        doc,
        family,
        loading(),
    )


_SECTION = re.compile(r"^(Args|Size):\s*(.*)$")
_ARG = re.compile(r"^\s{4}(\*?\w+):\s*(.*)$")  # an entry of Args: (its continuation: 8 spaces)


def _parse_docstring(doc: str) -> tuple[str, str, dict[str, str]]:
    """Summary paragraph, the ``Size:`` rule, and ``Args:`` lines by name."""
    summary_lines: list[str] = []
    size: list[str] = []
    args: dict[str, str] = {}
    section = "summary"
    current: str | None = None
    for line in doc.splitlines():
        m = _SECTION.match(line)
        if m:
            section = m.group(1).lower()
            if section == "size" and m.group(2):
                size.append(m.group(2))
            continue
        if section == "summary":
            if not line.strip() and summary_lines:
                section = "body"
            elif line.strip():
                summary_lines.append(line.strip())
        elif section == "size":
            if line.strip():
                size.append(line.strip())
            else:
                section = "body"
        elif section == "args":
            am = _ARG.match(line)
            if am:
                current = am.group(1).lstrip("*")
                args[current] = am.group(2).strip()
            elif line.strip() and current:
                args[current] += " " + line.strip()
    return " ".join(summary_lines), " ".join(size), args
