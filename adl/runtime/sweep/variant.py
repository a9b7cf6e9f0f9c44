"""A spec at another scale or on other data: ``adl sweep SPEC --preset paper --data DIR``.

A bundled spec trains its paper's systems scaled to the bundled corpus. Its ``paper_scale:``
says how the paper trained them: the paper's preset (its published sizes and recipe), its
updates, and what else the scaled spec changed that must be undone (a depth set in ``vars``,
a half-depth file). :func:`derive` writes the spec that results, a normal spec that names the
paper's preset and budget, and your data instead of the Bible (``--data DIR``: a folder of
train/valid/test files in two languages, such as ``adl data files`` writes), so that every
part of a sweep (local processes or Slurm, seeds, results, the table) works on it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from adl.runtime.data.files import find_langs
from adl.runtime.errors import UserError
from adl.runtime.sweep.spec import spec_path

PAPER = "paper"


def derive(
    target: str | Path,
    out: Path,
    preset: str | None = None,
    data: str | Path | None = None,
    langs: tuple[str, str] | None = None,
) -> Path:
    """Write the spec of ``target`` at ``preset`` (``paper``: its ``paper_scale:``; another
    name: that preset, the budget kept) on ``data`` (None: the spec's), as
    ``out/spec-NAME.yaml``; returns its path."""
    path = spec_path(target)
    doc: dict[str, Any] = yaml.safe_load(path.read_text(encoding="utf-8"))
    name = str(doc.get("name") or path.stem)
    scale = doc.pop("paper_scale", None)
    suffix = []
    if preset == PAPER:
        if not scale:
            raise UserError(f"{path}: no paper_scale: says how the paper trained its systems")
        doc["preset"] = scale["preset"]
        doc["budget"] = {"steps": scale["steps"]}
        doc["vars"] = {**(doc.get("vars") or {}), **(scale.get("vars") or {})}
        changes = scale.get("systems") or {}
        for system in doc.get("systems") or []:
            change = changes.get(system.get("name"), {})
            if "vars" in change:
                system["vars"] = {**(system.get("vars") or {}), **change["vars"]}
            if "files" in change:
                system["files"] = change["files"]
        suffix.append("paper")
    elif preset:
        doc["preset"] = preset
        suffix.append(preset)
    if data is not None:
        folder = Path(data).resolve()
        src, tgt = langs or find_langs(folder)
        doc["data"] = {
            "train": str(folder / "train"),
            "valid": str(folder / "valid"),
            "test": str(folder / "test"),
            "langs": [src, tgt],
        }
        suffix.append(folder.name)
    if not doc.get("vars"):
        doc.pop("vars", None)
    doc["name"] = "-".join([name, *suffix])
    # the files are found beside the spec or in the ADL source tree: keep them findable
    for system in doc.get("systems") or []:
        if "files" in system:
            system["files"] = [
                str((path.parent / f).resolve()) if (path.parent / f).exists() else f
                for f in system["files"]
            ]
    out.mkdir(parents=True, exist_ok=True)
    written = out / f"spec-{doc['name']}.yaml"
    header = f"# made by adl sweep {name} --preset {preset} --data {data} from {path}\n"
    written.write_text(header + yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
    return written
