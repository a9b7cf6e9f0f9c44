"""The model settings a file is checked with in the editor: those of a sweep spec or a preset
that names the file, else ``adl compile``'s defaults.

A sweep spec (a YAML file with ``systems:``) in the file's folder or up to
:data:`PARENTS` folders above it, then the bundled specs (``adl/runtime/sweeps``), then the
bundled presets (``adl/runtime/presets``, by their ``architectures:`` lists): the first that
names the file gives its ``d_model``, ``heads``, ``dropout`` and ``$variables``, as the
sweep's run of that system (or ``adl compile --check --preset NAME FILE``) would check it. A
sweep's system also names the file's partner (its encoder or decoder).

The runtime (and with it torch) is imported only when a spec or preset may name the file;
what each YAML file names is kept until the file changes.
"""

from __future__ import annotations

import importlib.util
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..registry import Hyper
from ..roles import role_from_name

PARENTS = 3  # folders above the file searched for sweep specs
MAX_YAML_BYTES = 1 << 20  # larger YAML files are not sweep specs
MAX_YAML_FILES = 50  # YAML files read from one folder
_SWEEP = re.compile(r"^systems\s*:", re.MULTILINE)


@dataclass(frozen=True)
class Settings:
    """Model settings for checking one file, and where they come from."""

    d_model: int = Hyper.d_model  # adl compile's defaults (adl.check's)
    heads: int = Hyper.heads
    dropout: float = Hyper.dropout
    vars: tuple[tuple[str, Any], ...] = ()  # $NAME values, sorted by name
    origin: str = ""  # "preset NAME" or "sweep FILE, system NAME"; "" for the defaults
    partner: Path | None = None  # the other file of the sweep's system (encoder or decoder)

    def options(self) -> dict[str, Any]:
        """The keyword arguments of :func:`adl.batch.check_files`."""
        return dict(
            d_model=self.d_model, heads=self.heads, dropout=self.dropout, vars=dict(self.vars)
        )

    def describe(self) -> str:
        """One line: the sizes and variables, and where they come from."""
        values = [f"d_model {self.d_model}", f"heads {self.heads}", f"dropout {self.dropout:g}"]
        values += [f"${k} = {v}" for k, v in self.vars]
        where = self.origin or "adl compile's defaults"
        return f"{', '.join(values)} ({where})"


class SettingsFinder:
    """Finds the settings of files, remembering what each YAML file names."""

    def __init__(self) -> None:
        self._read: dict[Path, tuple[tuple[int, int], dict[Path, Settings]]] = {}

    def settings(self, path: Path) -> Settings:
        path = path.resolve()
        for spec in self._sweep_files(path):
            found = self._named(spec, self._read_sweep).get(path)
            if found is not None:
                return found
        root = _bundled_root()
        if root is not None and root.parents[1] in path.parents:  # in the source tree
            for preset in sorted((root / "presets").glob("*.yaml")):
                found = self._named(preset, self._read_preset).get(path)
                if found is not None:
                    return found
        return Settings()

    def _sweep_files(self, path: Path) -> Iterator[Path]:
        folders = [path.parent, *list(path.parent.parents)[:PARENTS]]
        root = _bundled_root()
        if root is not None and root.parents[1] in path.parents:  # in the source tree
            folders.append(root / "sweeps")
        for folder in dict.fromkeys(folders):
            try:
                files = sorted(p for p in folder.iterdir() if p.suffix in (".yaml", ".yml"))
            except OSError:
                continue
            yield from files[:MAX_YAML_FILES]

    def _named(self, file: Path, read: Any) -> dict[Path, Settings]:
        """What ``file`` names, read anew when it changed."""
        try:
            info = file.stat()
        except OSError:
            return {}
        stamp = (info.st_mtime_ns, info.st_size)
        cached = self._read.get(file)
        if cached is None or cached[0] != stamp:
            try:
                names = read(file) if info.st_size <= MAX_YAML_BYTES else {}
            except Exception:  # a broken spec or preset names nothing (adl sweep says why)
                names = {}
            self._read[file] = cached = (stamp, names)
        return cached[1]

    @staticmethod
    def _read_sweep(file: Path) -> dict[Path, Settings]:
        if not _SWEEP.search(file.read_text(encoding="utf-8", errors="replace")):
            return {}
        from adl.runtime.sweep.plan import data_files, system_config  # torch: only here
        from adl.runtime.sweep.reader import read_spec

        spec, _problems = read_spec(file)
        named: dict[Path, Settings] = {}
        for system in spec.systems:
            if not system.trained or not system.files:
                continue
            model = system_config(spec, system, data_files(spec)).model
            files = [f.resolve() for f in system.files]
            for f in files:
                others = [o for o in files if o != f and role_from_name(o) != role_from_name(f)]
                origin = f"sweep {file}, system {system.name}"
                named.setdefault(f, _settings(model, origin, others[0] if others else None))
        return named

    @staticmethod
    def _read_preset(file: Path) -> dict[Path, Settings]:
        from adl.runtime.config import load_config, preset_files  # torch: only here

        files = preset_files(str(file))
        if not files:
            return {}
        model = load_config(str(file)).model
        settings = _settings(model, f"preset {file.stem}", None)
        return {f.resolve(): settings for f in files}


def _settings(model: Any, origin: str, partner: Path | None) -> Settings:
    return Settings(
        model.d_model,
        model.heads,
        model.dropout,
        tuple(sorted(model.vars.items())),
        origin,
        partner,
    )


def _bundled_root() -> Path | None:
    """The folder of the runtime's bundled presets and sweeps (``adl.runtime``), found
    without importing it."""
    spec = importlib.util.find_spec("adl.runtime")
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations))).resolve()
