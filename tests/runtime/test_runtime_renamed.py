"""Names of the runtime that said less than they hold, renamed: the old ones still work for
one release, each with a DeprecationWarning that names the new one."""

import importlib
import sys
import warnings

import pytest

from adl.runtime.config import ModelConfig
from adl.runtime.data import parallel
from adl.runtime.decode import bleu
from adl.runtime.decode.translator import Translator


def _import_anew(name: str):
    sys.modules.pop(name, None)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        module = importlib.import_module(name)
    return module, [str(w.message) for w in caught if w.category is DeprecationWarning]


@pytest.mark.parametrize(
    "old, new, names",
    [
        ("adl.runtime.decode.inference", bleu, ["score", "report", "signatures"]),
        ("adl.runtime.data.data", parallel, ["encode_pairs", "Limits", "TextPairs", "read_lines"]),
    ],
)
def test_a_renamed_module_still_imports_with_a_warning(old, new, names):
    module, said = _import_anew(old)
    assert said == [f"{old} is renamed {new.__name__}; the old name goes in the next release"]
    for name in names:
        assert getattr(module, name) is getattr(new, name)


def test_renamed_functions_still_work_with_a_warning(monkeypatch):
    from adl.runtime.model import build

    seen = []
    monkeypatch.setattr(build, "check_model_files", lambda cfg: seen.append(cfg))
    cfg = ModelConfig(encoder="x.enc.adl")
    with pytest.warns(DeprecationWarning, match="renamed check_model_files"):
        build.check_model(cfg)
    assert seen == [cfg]

    calls = []
    monkeypatch.setattr(Translator, "search_tokens", lambda self, *a, **k: calls.append(a) or [])
    translator = Translator.__new__(Translator)
    with pytest.warns(DeprecationWarning, match="renamed search_tokens"):
        assert translator.search_ids([[5, 6]]) == []
    assert calls == [([[5, 6]],)]
