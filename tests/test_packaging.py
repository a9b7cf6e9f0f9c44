"""The wheel holds every package and the grammar; pyproject lists every package."""

import zipfile

import pytest
import tomllib
from conftest import ROOT


def _listed() -> set[str]:
    data = tomllib.loads((ROOT / "pyproject.toml").read_text())
    return set(data["tool"]["setuptools"]["packages"])


def test_every_package_is_listed():
    found = {
        ".".join(p.parent.relative_to(ROOT).parts) for p in (ROOT / "adl").rglob("__init__.py")
    }
    assert found == _listed()


def test_dependencies_keep_a_normal_range():
    deps = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    names = {d.split(">")[0].split("=")[0].split("<")[0] for d in deps}
    assert names == {
        "torch",
        "lark",
        "sacrebleu",
        "pyyaml",
        "sentencepiece",
        "matplotlib",
        "submitit",
        "tqdm",
        "safetensors",
        "numpy",
        "scipy",
    }
    assert not any("==" in d for d in deps)


@pytest.mark.slow
def test_wheel_ships_the_grammar(project_wheel):
    wheel = project_wheel
    names = zipfile.ZipFile(wheel).namelist()
    assert "adl/grammar/adl.lark" in names
    for pkg in _listed():
        assert f"{pkg.replace('.', '/')}/__init__.py" in names
    # the installed grammar is the repository's grammar
    text = zipfile.ZipFile(wheel).read("adl/grammar/adl.lark").decode()
    assert text == (ROOT / "adl" / "grammar" / "adl.lark").read_text()
