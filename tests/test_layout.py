"""The package's layering: one installed package (``adl``), the runtime as ``adl.runtime``,
and imports that only go down (nothing in the library imports the CLI)."""

import ast
import subprocess
import sys

from conftest import ROOT


def _imports(path):
    """Every module a file imports, absolute (relative imports resolved)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    rel = path.relative_to(ROOT).with_suffix("").parts
    package = ("adl", "runtime", *rel[1:-1]) if rel[0] == "runtime" else rel[:-1]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - node.level + 1]
                yield ".".join([*base, *([node.module] if node.module else [])])
            else:
                yield node.module


def _library_files():
    for top in ("adl", "runtime"):
        yield from (ROOT / top).rglob("*.py")


def test_no_top_level_runtime_module_is_imported():
    for path in [
        *_library_files(),
        *(ROOT / "tests").rglob("*.py"),
        *(ROOT / "bench").rglob("*.py"),
    ]:
        for name in _imports(path):
            assert name != "runtime" and not name.startswith("runtime."), (path, name)


def test_nothing_outside_the_cli_imports_the_cli():
    for path in _library_files():
        if path.is_relative_to(ROOT / "adl" / "cli") or path == ROOT / "adl" / "__main__.py":
            continue  # `python -m adl` is the command itself
        for name in _imports(path):
            assert not (name == "adl.cli" or name.startswith("adl.cli.")), (path, name)


def test_the_language_core_never_imports_the_runtime():
    """Only ``adl.load_model`` reaches the runtime, from inside the function (on first use);
    the tools over the language (the CLI, the language server, which reads presets and sweep
    specs) sit above both."""
    doors = []
    for path in (ROOT / "adl").rglob("*.py"):
        if path.is_relative_to(ROOT / "adl" / "cli") or path.is_relative_to(ROOT / "adl" / "lsp"):
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for function in ast.walk(tree):
            if isinstance(function, ast.FunctionDef):
                names = [
                    node.module
                    for node in ast.walk(function)
                    if isinstance(node, ast.ImportFrom) and node.module
                ]
                doors += [(path.name, function.name) for n in names if n.startswith("adl.runtime")]
        module_level = [
            node for node in tree.body if isinstance(node, (ast.Import, ast.ImportFrom))
        ]
        for node in module_level:
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module]
            assert not any((n or "").startswith("adl.runtime") for n in names), (path, names)
        dynamic = [
            node.args[0].value
            for node in ast.walk(tree)
            if isinstance(node, ast.Call)
            and getattr(node.func, "attr", getattr(node.func, "id", None)) == "import_module"
            and node.args
            and isinstance(node.args[0], ast.Constant)
        ]
        assert not any(str(n).startswith("adl.runtime") for n in dynamic), (path, dynamic)
    assert doors == [("api.py", "load_model")]


def test_import_adl_loads_neither_torch_nor_the_runtime():
    code = "import sys, adl; print('torch' in sys.modules, 'adl.runtime' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd="/")
    assert out.stdout.split() == ["False", "False"], out.stderr
