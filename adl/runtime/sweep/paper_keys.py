"""Reading a spec's ``paper_scale:`` (variant.py has what it means): the paper's preset and
updates, and what the scaled spec changed that the paper's scale undoes."""

from __future__ import annotations

from adl.runtime import config as cfgmod
from adl.runtime.errors import UserError
from adl.runtime.sweep.located import Map, Values, show
from adl.runtime.sweep.spec import Spec

PAPER_KEYS = ("preset", "steps", "vars", "systems")


class PaperKeys(Values):
    """The spec reader's ``paper_scale:`` key (reader.py's reader is one)."""

    def paper_scale(self, doc: Map, spec: Spec) -> None:
        m = self.section(doc, "paper_scale", PAPER_KEYS)
        if m is None:
            return
        for key in ("preset", "steps"):
            if key not in m:
                self.add(m.mark, f"paper_scale needs {key}:")
        if "preset" in m:
            try:
                cfgmod.preset_path(str(m["preset"]))
            except UserError as exc:
                self.add(m.value_mark("preset"), f"paper_scale: {exc}")
        if "steps" in m:
            self.integer(m["steps"], m.value_mark("steps"), "paper_scale: steps")
        if "vars" in m:
            self.mapping(m["vars"], m.value_mark("vars"), "paper_scale: vars")
        if "systems" in m:
            systems = self.mapping(m["systems"], m.value_mark("systems"), "paper_scale: systems")
            names = {s.name for s in spec.systems}
            for name in systems or {}:
                if name not in names:
                    self.add(
                        systems.key_mark(name),  # type: ignore[union-attr]
                        f"paper_scale: systems: {show(name)} is not one of the systems",
                    )
