"""Layers from other installed packages, found through Python entry points.

A plugin is the counterpart of a built-in layer family, in its own package:

- a module of rules, registered with :func:`adl.registry.layer` exactly as in
  ``adl/layers/``, named in the entry-point group ``adl.layers``; the registry imports
  it (after the built-in layers) the first time a layer is looked up, so checking stays
  free of torch;
- a module of PyTorch modules, registered with :func:`adl.nn.implements` exactly as in
  ``adl/nn/``, named in the entry-point group ``adl.nn``; imported the first time a model
  is built.

In a plugin's ``pyproject.toml``::

    [project.entry-points."adl.layers"]
    swish = "adl_swish.rules"

    [project.entry-points."adl.nn"]
    swish = "adl_swish.modules"

A plugin that cannot be imported, or that takes a name a built-in layer (or another
plugin) already has, is a :class:`PluginError`: one message naming the plugin, raised by
every later use too. See docs/extending.md.
"""

from __future__ import annotations

from importlib.metadata import EntryPoint, entry_points

from .errors import UserError

RULES_GROUP = "adl.layers"  # modules of layer rules (adl/layers/ of a plugin)
MODULES_GROUP = "adl.nn"  # modules of PyTorch layer modules (adl/nn/ of a plugin)


class PluginError(UserError):
    """A plugin that cannot be loaded: it fails to import, or clashes with a layer name."""


class NameClash(ValueError):
    """A layer name (or implementation) registered twice."""


_loading: str = ""  # the plugin being imported, as describe() names it ("" for built-ins)
_loaded: dict[str, PluginError | None] = {}  # group -> its failure (None: loaded fine)


def loading() -> str:
    """The plugin whose module is being imported now ("" while loading the built-ins):
    what :func:`adl.registry.layer` records as a layer's origin."""
    return _loading


def describe(ep: EntryPoint) -> str:
    """``plugin 'swish = adl_swish.rules' (adl.layers, from adl-swish 0.1)``."""
    dist = getattr(ep, "dist", None)
    origin = f", from {dist.name} {dist.version}" if dist is not None else ""
    return f"plugin '{ep.name} = {ep.value}' ({ep.group}{origin})"


def load(group: str) -> None:
    """Import the modules of every entry point of ``group`` once (in name order).

    Raises :class:`PluginError` for the first plugin that fails, and the same error on
    every later call (a half-loaded plugin is never retried)."""
    global _loading
    if group in _loaded:
        failure = _loaded[group]
        if failure is not None:
            raise failure
        return
    _loaded[group] = failure = None  # a plugin that looks layers up while loading is fine
    for ep in sorted(entry_points(group=group), key=lambda e: (e.name, e.value)):
        _loading = describe(ep)
        try:
            ep.load()
        except NameClash as exc:
            failure = PluginError(f"{_loading}: {exc}")
        except Exception as exc:  # any failure of foreign code is reported, not raised
            failure = PluginError(f"{_loading} cannot be loaded: {type(exc).__name__}: {exc}")
        finally:
            _loading = ""
        if failure is not None:
            break
    _loaded[group] = failure
    if failure is not None:
        raise failure
