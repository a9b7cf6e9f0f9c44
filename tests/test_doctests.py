"""Docstring examples are true: every ``>>>`` example in the package runs as a test."""

import doctest
import importlib

import pytest
from conftest import ROOT


def _modules_with_examples():
    for top, package in (("adl", "adl"),):
        for path in sorted((ROOT / top).rglob("*.py")):
            if ">>> " not in path.read_text(encoding="utf-8"):
                continue
            parts = path.relative_to(ROOT / top).with_suffix("").parts
            if parts[-1] == "__init__":
                parts = parts[:-1]
            yield ".".join((package, *parts))


def test_the_package_docstring_has_an_example():
    assert "adl" in list(_modules_with_examples())


@pytest.mark.parametrize("name", list(_modules_with_examples()))
def test_docstring_examples(name):
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.attempted > 0, name
    assert result.failed == 0, f"{result.failed} of {result.attempted} examples in {name} fail"
