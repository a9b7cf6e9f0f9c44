"""The settings a file is checked with in the editor: a sweep spec's or a preset's."""

import subprocess
import sys
import textwrap

import yaml
from conftest import ROOT

from adl.lsp.settings import PARENTS, Settings, SettingsFinder


def read(path):
    return yaml.safe_load(path.read_text())


def test_a_bundled_sweep_names_its_files():
    sweep = read(ROOT / "adl" / "runtime" / "sweeps" / "you2020.yaml")
    preset = read(ROOT / "adl" / "runtime" / "presets" / f"{sweep['preset']}.yaml")["model"]
    found = SettingsFinder().settings(ROOT / "architectures" / "you2020" / "hc_all.dec.adl")
    assert found.origin.endswith("sweeps/you2020.yaml, system HC-ALL")
    assert (found.d_model, found.heads, found.dropout) == (
        preset["d_model"],
        preset["heads"],
        preset["dropout"],
    )
    assert dict(found.vars) == {**preset.get("vars", {}), **sweep.get("vars", {})}
    assert found.partner == (ROOT / "architectures" / "you2020" / "hc_sa.enc.adl")


def test_a_bundled_preset_names_its_files():
    first = sorted(
        p.stem
        for p in (ROOT / "adl" / "runtime" / "presets").glob("*.yaml")
        if "transformer.enc.adl" in (read(p).get("architectures") or [])
    )[0]
    model = read(ROOT / "adl" / "runtime" / "presets" / f"{first}.yaml")["model"]
    found = SettingsFinder().settings(ROOT / "architectures" / "transformer.enc.adl")
    assert found.origin == f"preset {first}"
    assert (found.d_model, found.heads, dict(found.vars)) == (
        model["d_model"],
        model["heads"],
        model.get("vars", {}),
    )


def test_a_spec_above_the_file_and_its_changes(tmp_path):
    folder = tmp_path / "models" / "mine"
    folder.mkdir(parents=True)
    enc, dec = folder / "a.enc.adl", folder / "a.dec.adl"
    enc.write_text("pos -> ffl($ff)\n")
    dec.write_text("pos -> mh_dot_src_att\n")
    spec = tmp_path / "runs.yaml"
    text = """
        preset: tiny
        vars: {ff: 96}
        baseline: A
        systems:
          - name: A
            files: [models/mine/a.enc.adl, models/mine/a.dec.adl]
            vars: {ff: 128}
        """
    spec.write_text(textwrap.dedent(text))
    finder = SettingsFinder()
    found = finder.settings(enc)
    assert (found.d_model, dict(found.vars)) == (
        read(ROOT / "adl/runtime/presets/tiny.yaml")["model"]["d_model"],
        {"ff": 128},
    )
    assert found.partner == dec.resolve() and "system A" in found.origin
    spec.write_text(textwrap.dedent(text).replace("128", "256") + "\n")
    assert dict(finder.settings(enc).vars) == {"ff": 256}  # read again: the file changed
    spec.write_text("systems: [this is: not a spec")
    assert finder.settings(enc) == Settings()  # a broken spec names nothing


def test_a_file_no_spec_names_gets_the_defaults_without_the_runtime(tmp_path):
    # Deeper than the folders searched above a file, so that a sweep spec left in the
    # machine's temporary folder (or any folder above tmp_path) cannot reach the test.
    path = tmp_path.joinpath(*["sub"] * (PARENTS + 1), "x.enc.adl")
    path.parent.mkdir(parents=True)
    path.write_text("pos -> ffl\n")
    (path.parent / "notes.yaml").write_text("just: notes\n")
    (tmp_path / "notes.yaml").write_text("systems: but not in a folder searched\n")
    code = (
        "import sys\n"
        "from pathlib import Path\n"
        "from adl.lsp.settings import Settings, SettingsFinder\n"
        f"assert SettingsFinder().settings(Path({str(path)!r})) == Settings()\n"
        "print('adl.runtime' in sys.modules, 'torch' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False"]
