"""What the package's docstrings and the documents cite exists: every file path of the
source tree they name, and every ``:mod:``/``:func:``/``:class:`` target of a docstring."""

import fnmatch
import importlib
import re

import pytest
from conftest import ROOT

# a path of the source tree: adl/..., bench/..., docs/..., tests/..., architectures/...
PATH = re.compile(
    r"(?<![\w./$-])((?:adl|bench|docs|tests|architectures|editors|papers)/[\w./-]*\w)"
    r"(?:\.\{([\w,]+)\}([\w.]*))?"  # transformer.{enc,dec}.adl: each of them
)
PLACEHOLDER = re.compile(r"[A-Z]{3,}|^seedN")  # docs/results/SPEC/SYSTEM/seedN.json
ROLE = re.compile(r":(?:mod|func|class|meth|data|attr):`~?(adl[\w.]*)`")


def _cited_files():
    yield from sorted((ROOT / "adl").rglob("*.py"))
    yield from sorted((ROOT / "docs").glob("*.md"))
    yield ROOT / "README.md"


def _built(path: str) -> bool:
    """A file that a command makes and git ignores (``make vsix``'s package, say)."""
    patterns = [
        line.strip()
        for line in (ROOT / ".gitignore").read_text(encoding="utf-8").splitlines()
        if line.strip() and not line.startswith("#")
    ]
    name = path.rsplit("/", 1)[-1]
    return any(fnmatch.fnmatch(name, p) or fnmatch.fnmatch(path, p) for p in patterns)


def test_every_file_path_cited_in_the_package_and_the_documents_exists():
    missing = []
    for cited in _cited_files():
        for m in PATH.finditer(cited.read_text(encoding="utf-8")):
            stem, choices, rest = m.group(1), m.group(2), m.group(3) or ""
            paths = [f"{stem}.{c}{rest}" for c in choices.split(",")] if choices else [stem]
            for path in (p.rstrip(".") for p in paths):
                if any(PLACEHOLDER.search(part) for part in path.split("/")) or _built(path):
                    continue
                if not (ROOT / path).exists():
                    missing.append(f"{cited.relative_to(ROOT)}: {path}")
    assert not missing, missing


def _resolves(name: str) -> bool:
    parts = name.split(".")
    for i in range(len(parts), 0, -1):
        try:
            found = importlib.import_module(".".join(parts[:i]))
        except ImportError:
            continue
        try:
            for attribute in parts[i:]:
                found = getattr(found, attribute)
        except AttributeError:
            return False
        return True
    return False


@pytest.mark.filterwarnings("ignore::DeprecationWarning")  # the renamed modules kept a release
def test_every_module_function_and_class_a_docstring_cites_exists():
    missing = []
    for path in sorted((ROOT / "adl").rglob("*.py")):
        for m in ROLE.finditer(path.read_text(encoding="utf-8")):
            if not _resolves(m.group(1)):
                missing.append(f"{path.relative_to(ROOT)}: {m.group(1)}")
    assert not missing, missing


def test_the_map_says_where_the_design_cards_top_level_folders_are():
    text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    section = text.split("## Where the design card's folders are", 1)[1].split("\n## ", 1)[0]
    for top, inside in (("grammar/", "adl/grammar/adl.lark"), ("runtime/", "adl/runtime/")):
        assert f"`{top}`" in section and f"`{inside}`" in section and (ROOT / inside).exists()
    assert "9b7f9bc" in section  # and why: the commit that moved them says so
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "`adl/grammar/`, `adl/runtime/`" in readme
