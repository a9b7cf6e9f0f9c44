"""The model's default settings (d_model 512, 8 heads, dropout 0.1) are written once, in
:class:`adl.Hyper`, and every door that has a default reads it from there."""

import dataclasses
import inspect
import re

from conftest import ROOT

import adl
from adl.batch import check_files
from adl.cli.common import DEFAULTS
from adl.lsp.settings import Settings
from adl.runtime.config import ModelConfig

NAMES = ("d_model", "heads", "dropout")
# a default written as a value: `d_model: int = 512`, `"heads": 8`, `dropout=0.1`
WRITTEN = re.compile(r"\b(d_model|heads|dropout)\b[\"']?\s*(?::\s*[A-Za-z_.]+\s*)?[=:]\s*(\S+)")
VALUES = {"d_model": "512", "heads": "8", "dropout": "0.1"}


def test_each_model_default_is_written_in_one_definition():
    found = []
    for path in sorted((ROOT / "adl").rglob("*.py")):
        for line in path.read_text(encoding="utf-8").splitlines():
            code = line.split("#")[0]
            for m in WRITTEN.finditer(code):
                if m[2].rstrip(",)") == VALUES[m[1]]:
                    found.append((str(path.relative_to(ROOT)), m[1]))
    assert found == [("adl/registry.py", name) for name in NAMES]


def test_every_door_has_adl_hypers_defaults():
    expected = {name: getattr(adl.Hyper(), name) for name in NAMES}
    assert expected == {"d_model": 512, "heads": 8, "dropout": 0.1}
    for function in (adl.check, adl.check_model, adl.build, adl.check_hyper, check_files):
        params = inspect.signature(function).parameters
        assert {n: params[n].default for n in NAMES} == expected, function.__name__
    for kind in (adl.ModelSpec, ModelConfig, Settings):
        fields = {f.name: f.default for f in dataclasses.fields(kind)}
        assert {n: fields[n] for n in NAMES} == expected, kind.__name__
    assert DEFAULTS == expected
