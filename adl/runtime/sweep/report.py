"""``adl sweep report SPEC``: a sweep's table from its committed result files alone (no run
folders, no data), and the tables of a document kept equal to them.

A document holds a table as a block that this module rewrites::

    <!-- adl sweep report you2020 -->
    ...the table...
    <!-- end of adl sweep report -->
"""

from __future__ import annotations

from pathlib import Path

from adl.runtime.docblocks import pattern, rewrite
from adl.runtime.sweep.markdown import markdown
from adl.runtime.sweep.planning import load_plan
from adl.runtime.sweep.table import Table, build

BLOCK = pattern("adl sweep report", r"\S+")


def report(target: str | Path, results: str | Path | None = None, title: bool = True) -> str:
    """The Markdown table of a spec (a file or a bundled spec's name) from its result files."""
    return markdown(_table(target, results), title=title)


def report_and_pictures(
    target: str | Path, folder: str | Path, results: str | Path | None = None
) -> tuple[str, list[Path]]:
    """:func:`report`, and the sweep's pictures (:func:`adl.runtime.sweep.pictures.draw`)
    drawn from the same table into ``folder``: those a document shows are committed from
    here."""
    from adl.runtime.sweep.pictures import draw

    table = _table(target, results)
    return markdown(table), draw(table, Path(folder))


def _table(target: str | Path, results: str | Path | None) -> Table:
    spec, plan, kept = load_plan(target, None, results)
    return build(plan, kept)


def update_doc(
    path: str | Path, results: str | Path | None = None, write: bool = True
) -> list[str]:
    """Rewrite every report block of the document at ``path`` from the result files; returns
    the specs whose block changed (with ``write=False`` nothing is written: a check)."""
    return rewrite(path, BLOCK, lambda m: report(m["args"], results, title=False), write)
