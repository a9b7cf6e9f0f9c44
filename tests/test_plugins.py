"""Layers from plugins: a package that names a module of rules in the entry-point group
``adl.layers`` and a module of PyTorch modules in ``adl.nn`` adds layers that ``adl
compile``, ``adl.build`` and ``adl train`` use like built-in ones, with the same error
messages; a broken or clashing plugin is one clear error.

Each plugin is written by the test into a temporary folder and installed there (pip
``--target`` where setuptools is at hand, else the dist-info that pip would write, which is
all entry points are found by). Every use runs in a child process with that folder on
PYTHONPATH, so this process's registry never sees a plugin."""

import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from conftest import ROOT, run_cli

sys.path.insert(0, str(ROOT / "bench"))
from toy_task import write_reverse_pairs  # noqa: E402

DOC = ROOT / "docs" / "extending.md"


def doc_blocks(marker: str) -> dict[str, str]:
    """The code blocks of docs/extending.md that follow ``<!-- MARKER PATH -->``, by PATH."""
    text = DOC.read_text(encoding="utf-8")
    return dict(re.findall(rf"<!-- {marker} (\S+) -->\n```\w*\n(.*?)```", text, re.S))


# the plugin of docs/extending.md, as it is printed there
PLUGIN = doc_blocks("plugin file:")
SWIGLU = {"rules": PLUGIN["adl_swiglu/rules.py"], "modules": PLUGIN["adl_swiglu/modules.py"]}
GROUPS = {"adl.layers": "rules", "adl.nn": "modules"}


def test_the_guide_shows_the_code_as_it_is():
    shown = doc_blocks("from")
    assert set(shown) == {"adl/layers/basic.py", "adl/nn/basic.py"}
    for path, code in shown.items():
        assert code in (ROOT / path).read_text(encoding="utf-8"), path
    assert set(PLUGIN) == {"pyproject.toml", "adl_swiglu/rules.py", "adl_swiglu/modules.py"}


def test_the_guides_refusal_example(tmp_path):
    (tmp_path / "x.adl").write_text("act(glu)\n")
    block = re.search(
        r"\$ (adl compile [^#\n]+?) +# x.adl: act\(glu\)\n(.*?)```", DOC.read_text(), re.S
    )
    argv = block.group(1).split()[1:]
    expected = [line.removeprefix("  ") for line in block.group(2).rstrip().splitlines()]
    code, out, err = run_cli(*argv[:-1], str(tmp_path / "x.adl"))
    assert code == 1 and err.replace(str(tmp_path) + "/", "").splitlines() == expected


def install(
    site: Path,
    name: str,
    modules: dict[str, str],
    groups: dict[str, str],
    pyproject: str | None = None,
) -> None:
    """Install the plugin distribution ``adl-NAME`` (package ``adl_NAME`` with ``modules``,
    entry points ``groups``: group -> module) into ``site``: with ``pip install --target``
    when a ``pyproject`` is given and setuptools is at hand, else as the dist-info pip
    would write (all that entry points are found by)."""
    package = f"adl_{name}"
    src = site.parent / f"src-{name}"
    (src / package).mkdir(parents=True)
    (src / package / "__init__.py").write_text("")
    for module, text in modules.items():
        (src / package / f"{module}.py").write_text(text)
    entry_points = "".join(
        f"[{group}]\n{name} = {package}.{module}\n\n" for group, module in groups.items()
    )
    if pyproject is not None and importlib.util.find_spec("setuptools") is not None:
        (src / "pyproject.toml").write_text(pyproject)
        subprocess.run(
            [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-index"]
            + ["--no-build-isolation", "--target", str(site), str(src)],
            check=True,
            capture_output=True,
        )
    else:
        shutil.copytree(src / package, site / package)
        info = site / f"adl_{name}-0.1.dist-info"
        info.mkdir(parents=True)
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: adl-{name}\nVersion: 0.1\n")
        (info / "entry_points.txt").write_text(entry_points)
    installed = next(site.glob(f"adl_{name}-*.dist-info")) / "entry_points.txt"
    assert installed.read_text().split() == entry_points.split()


def run(site: Path, *argv: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    """``python -m adl ARGV`` (or ``python -c CODE`` when argv[0] is "-c") with ``site`` on
    PYTHONPATH."""
    env = dict(os.environ, PYTHONPATH=str(site))
    env.pop("WORLD_SIZE", None)
    cmd = [sys.executable, *argv] if argv[0] == "-c" else [sys.executable, "-m", "adl", *argv]
    return subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=cwd or ROOT)


@pytest.fixture(scope="module")
def swiglu(tmp_path_factory) -> Path:
    site = tmp_path_factory.mktemp("plugin") / "site"
    install(site, "swiglu", SWIGLU, GROUPS, PLUGIN["pyproject.toml"])
    return site


ENC = "pos -> repeat(2, res_nd(mh_dot_self_att) -> res_nd(swiglu(48))) -> norm\n"
DEC = "pos -> res_nd(mh_dot_self_att) -> res_nd(mh_dot_src_att) -> res_nd(swiglu_ffl) -> norm\n"


def test_compile_checks_a_file_with_a_plugin_layer(swiglu, tmp_path):
    enc = tmp_path / "t.enc.adl"
    enc.write_text(ENC)
    out = run(swiglu, "compile", "--check", "--d-model", "32", str(enc))
    assert out.returncode == 0, out.stderr
    # 2 × (self-attention 4·(32·32+32) + norm 64 + swiglu 3·32·48 + norm 64) + final norm 64
    verdict = f"t.enc.adl: ok (encoder 32 → 32, {2 * (4 * 1056 + 64 + 3 * 32 * 48 + 64) + 64:,} parameters)"
    assert out.stdout == f"{tmp_path / verdict}\n"
    assert f"\n{verdict}\n" in DOC.read_text(encoding="utf-8")  # as the guide shows it
    assert (
        "torch"
        not in run(
            swiglu,
            "-c",
            "import sys, adl; adl.check('swiglu', role='encoder'); print(*sys.modules)",
        ).stdout.split()
    )  # checking a plugin's layer stays free of torch


def test_plugin_layer_errors_read_like_built_in_ones(swiglu, tmp_path):
    bad = tmp_path / "bad.enc.adl"
    bad.write_text("pos -> res_nd(swiglu(num_hiden=64)) -> swigl\n")
    out = run(swiglu, "compile", "--check", str(bad))
    assert out.returncode == 1 and "Traceback" not in out.stderr
    assert out.stderr.splitlines() == [
        f"{bad}:1:22: error: 'swiglu' has no argument 'num_hiden'",
        "  | pos -> res_nd(swiglu(num_hiden=64)) -> swigl",
        "  |                      ^^^^^^^^^",
        "hint: did you mean 'num_hidden'?",
        f"{bad}:1:40: error: unknown layer 'swigl'",
        "  | pos -> res_nd(swiglu(num_hiden=64)) -> swigl",
        "  |                                        ^^^^^",
        "hint: did you mean 'swiglu'?",
        "2 errors in 1 file",
    ]
    bad.write_text("pos -> swiglu(d_ff=relu)\n")  # its argument types are checked too
    out = run(swiglu, "compile", "--check", str(bad))
    assert out.returncode == 1 and "argument 'num_hidden' of 'swiglu' must be" in out.stderr


def test_adl_build_uses_the_plugin_module(swiglu, tmp_path):
    (tmp_path / "t.enc.adl").write_text(ENC)
    (tmp_path / "t.dec.adl").write_text(DEC)
    code = textwrap.dedent(
        """
        import json, sys, torch, adl
        model = adl.build(sys.argv[1], sys.argv[2], src_vocab=20, tgt_vocab=20, d_model=32,
                          heads=4)
        enc, dec = adl.check_model(sys.argv[1], sys.argv[2], d_model=32, heads=4)
        kinds = sorted({type(m).__module__ + "." + type(m).__name__ for m in model.modules()
                        if type(m).__name__ == "SwiGLU"})
        src = torch.randint(1, 20, (2, 5))
        tgt = torch.randint(1, 20, (2, 4))
        logits = model(src, tgt)
        rebuilt = adl.build_from_spec(model.spec)
        print(json.dumps({
            "kinds": kinds,
            "shape": list(logits.shape),
            "layers": enc.network.params + dec.network.params,
            "module_layers": sum(p.numel() for p in model.encoder.parameters())
                             + sum(p.numel() for p in model.decoder.parameters()),
            "rebuilt": sum(p.numel() for p in rebuilt.parameters()),
            "total": sum(p.numel() for p in model.parameters()),
        }))
        """
    )
    out = run(swiglu, "-c", code, str(tmp_path / "t.enc.adl"), str(tmp_path / "t.dec.adl"))
    assert out.returncode == 0, out.stderr
    got = json.loads(out.stdout)
    assert got["kinds"] == ["adl_swiglu.modules.SwiGLU"]
    assert got["shape"] == [2, 4, 20]
    assert got["module_layers"] == got["layers"]  # the module has the rule's parameter count
    assert got["rebuilt"] == got["total"]


def test_adl_train_trains_a_model_with_a_plugin_layer(swiglu, tmp_path):
    (tmp_path / "t.enc.adl").write_text(ENC)
    (tmp_path / "t.dec.adl").write_text(DEC)
    write_reverse_pairs(tmp_path / "data", {"train": 300}, lengths=(3, 7), letters="abcdefghij")
    out = run(
        swiglu,
        "train",
        str(tmp_path / "t.enc.adl"),
        str(tmp_path / "t.dec.adl"),
        "--train",
        str(tmp_path / "data" / "train"),
        "--langs",
        "src",
        "tgt",
        "--preset",
        "tiny",
        *("--set", "d_model=32", "--set", "max_tokens=256", "--set", "max_steps=40"),
        *("--set", "log_every=10", "--set", "schedule.warmup=10", "--set", "optim.lr=3e-3"),
        "--out",
        str(tmp_path / "run"),
    )
    assert out.returncode == 0, out.stderr
    metrics = [json.loads(line) for line in (tmp_path / "run" / "metrics.jsonl").open()]
    losses = [m["loss"] for m in metrics if "loss" in m and "bleu" not in m]
    assert len(losses) == 4
    assert losses[-1] < 0.8 * losses[0], losses  # it learns, through the plugin's layer
    spec = json.loads(
        run(
            swiglu,
            "-c",
            "import json, sys; from adl import runtime; "
            "m, _ = runtime.load_for_inference(sys.argv[1]); print(json.dumps(m.spec.encoder))",
            str(tmp_path / "run"),
        ).stdout
    )
    assert "swiglu(48)" in spec


def test_the_built_in_reference_does_not_change_and_plugins_can_be_listed(swiglu, tmp_path):
    out = run(swiglu, "-c", "import adl.docgen as d; d.main(['--check', 'docs/language.md'])")
    assert out.returncode == 0, out.stderr
    ref = tmp_path / "reference.md"
    ref.write_text((ROOT / "docs" / "language.md").read_text())
    out = run(swiglu, "-c", f"import adl.docgen as d; d.main(['--plugins', {str(ref)!r}])")
    assert out.returncode == 0, out.stderr
    text = ref.read_text()
    assert "### Layers of plugin 'swiglu = adl_swiglu.rules' (adl.layers, from adl-swiglu 0.1)" in (
        text
    )
    assert "#### `swiglu`" in text and "Also spelled: `swiglu_ffl`." in text


BROKEN_PLUGINS = [
    (
        {"rules": "import adl_no_such_module\n"},
        {"adl.layers": "rules"},
        "adl compile: error: plugin 'broken = adl_broken.rules' (adl.layers, from adl-broken "
        "0.1) cannot be loaded: ModuleNotFoundError: No module named 'adl_no_such_module'",
    ),
    (
        {"rules": SWIGLU["rules"].replace("def swiglu(", "def ffl(")},
        {"adl.layers": "rules"},
        "adl compile: error: plugin 'broken = adl_broken.rules' (adl.layers, from adl-broken "
        "0.1): layer name 'ffl' is taken: 'ffl' of the built-in layers (basic) has it, choose "
        "another name",
    ),
    (
        {"rules": SWIGLU["rules"].replace('aliases=("swiglu_ffl",)', 'aliases=("mh_dot_att",)')},
        {"adl.layers": "rules"},
        "adl compile: error: plugin 'broken = adl_broken.rules' (adl.layers, from adl-broken "
        "0.1): layer name 'mh_dot_att' is taken: 'mh_dot_src_att' of the built-in layers "
        "(attention) has it, choose another name",
    ),
]


@pytest.mark.parametrize(
    "modules, groups, message", BROKEN_PLUGINS, ids=["import", "name", "alias"]
)
def test_a_broken_plugin_is_one_clear_error(tmp_path, modules, groups, message):
    site = tmp_path / "site"
    install(site, "broken", modules, groups)
    enc = tmp_path / "t.enc.adl"
    enc.write_text("pos -> ffl\n")  # any use of the registry loads the plugins
    out = run(site, "compile", "--check", str(enc))
    assert (out.returncode, out.stderr.splitlines()) == (1, [message])


BUILD = """
import sys, adl
try:
    adl.build(sys.argv[1], sys.argv[2], src_vocab=9, tgt_vocab=9, d_model=8, heads=2)
except adl.UserError as e:
    print(type(e).__name__, e)
"""


def test_a_plugin_module_clash_and_a_plugin_layer_without_a_module(tmp_path):
    site = tmp_path / "site"
    install(site, "nomodule", {"rules": SWIGLU["rules"]}, {"adl.layers": "rules"})
    install(
        site,
        "clash",
        {"modules": SWIGLU["modules"].replace('implements("swiglu")', 'implements("ffl")')},
        {"adl.nn": "modules"},
    )
    enc, dec = tmp_path / "t.enc.adl", tmp_path / "t.dec.adl"
    enc.write_text("pos -> swiglu\n")
    dec.write_text("pos -> mh_dot_src_att\n")
    assert run(site, "compile", "--check", str(enc), str(dec)).returncode == 0  # rules only
    out = run(site, "-c", BUILD, str(enc), str(dec))
    assert out.stdout.strip() == (
        "PluginError plugin 'clash = adl_clash.modules' (adl.nn, from adl-clash 0.1): layer "
        "'ffl' already has a module: adl.nn.basic.FeedForwardBlock"
    ), out.stderr
    for info in site.glob("adl_clash-*.dist-info"):  # uninstalled
        info.rename(tmp_path / info.name)
    out = run(site, "-c", BUILD, str(enc), str(dec))
    assert out.stdout.strip() == (
        "PluginError plugin 'nomodule = adl_nomodule.rules' (adl.layers, from adl-nomodule "
        "0.1): layer 'swiglu' has no module: register one with @adl.nn.implements('swiglu') "
        "in a module of the 'adl.nn' entry-point group"
    ), out.stderr
