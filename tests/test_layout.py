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
    package = rel[:-1]
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
    yield from (ROOT / "adl").rglob("*.py")


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


def _resolved(path, node):
    """The absolute module names an import node of ``path`` reads."""
    if isinstance(node, ast.Import):
        return [a.name for a in node.names]
    package = path.relative_to(ROOT).with_suffix("").parts[:-1]
    if path.name == "__init__.py":
        package = path.relative_to(ROOT).parent.parts
    if node.level:
        base = package[: len(package) - node.level + 1]
        return [".".join([*base, *([node.module] if node.module else [])])]
    return [node.module or ""]


def test_the_language_core_never_imports_the_runtime():
    """Only ``adl.load_model`` reaches the runtime, from inside the package's ``__getattr__``
    (on first use); the tools over the language (the CLI, the language server, which reads
    presets and sweep specs) sit above both."""
    doors = []
    for path in (ROOT / "adl").rglob("*.py"):
        if any(path.is_relative_to(ROOT / "adl" / top) for top in ("cli", "lsp", "runtime")):
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for function in ast.walk(tree):
            if isinstance(function, ast.FunctionDef):
                names = [
                    name
                    for node in ast.walk(function)
                    if isinstance(node, (ast.Import, ast.ImportFrom))
                    for name in _resolved(path, node)
                ]
                doors += [(path.name, function.name) for n in names if n.startswith("adl.runtime")]
        module_level = [
            node for node in tree.body if isinstance(node, (ast.Import, ast.ImportFrom))
        ]
        for node in module_level:
            names = _resolved(path, node)
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
    assert doors == [("__init__.py", "__getattr__")]


def test_the_import_graph_has_no_circles():
    """grimp's graph of the installed package: no module reaches itself through imports
    (function-level imports count, and so do imports for type checking only)."""
    import grimp

    graph = grimp.build_graph("adl", exclude_type_checking_imports=False)
    circles = []
    for module in sorted(graph.modules):
        for imported in graph.find_modules_directly_imported_by(module):
            if graph.chain_exists(importer=imported, imported=module):
                circles.append((module, imported))
    assert not circles, circles[:10]


def test_import_adl_loads_neither_torch_nor_the_runtime():
    code = "import sys, adl; print('torch' in sys.modules, 'adl.runtime' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd="/")
    assert out.stdout.split() == ["False", "False"], out.stderr


def test_renamed_public_names_still_work_one_release_with_a_warning():
    import warnings

    import adl

    for old, new in (
        ("Network", "CheckedNetwork"),
        ("hyper", "check_hyper"),
        ("signature", "text_hash"),
    ):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            assert getattr(adl, old) is getattr(adl, new)
        assert [w.category for w in caught] == [DeprecationWarning]
        assert f"use adl.{new}" in str(caught[0].message)
