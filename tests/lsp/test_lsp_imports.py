"""Who imports the language server: ``import adl`` needs no pygls, the language core never
imports adl.lsp, and ``adl lsp`` without pygls says what to install."""

import re
import subprocess
import sys

from conftest import ROOT, run_cli


def test_import_adl_and_its_cli_load_no_pygls():
    code = (
        "import sys, adl, adl.cli\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('pygls', 'lsprotocol')"
        " or m == 'adl.lsp.server'))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_the_language_core_does_not_import_the_server():
    core = [*(ROOT / "adl" / "analysis").glob("*.py"), *(ROOT / "adl" / "syntax").glob("*.py")]
    assert core
    for path in core:
        assert not re.search(r"^\s*(from|import)\s+(adl\.lsp|\.\.lsp)", path.read_text(), re.M), (
            path
        )


def test_adl_lsp_without_pygls_says_what_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "pygls.lsp.server", None)  # as if pygls were missing
    monkeypatch.delitem(sys.modules, "adl.lsp.server", raising=False)
    code, out, err = run_cli("lsp")
    assert (code, out) == (1, "")
    assert err == (
        "adl lsp: error: the language server needs pygls (pygls.lsp.server is missing): "
        "pip install 'adl[lsp]'\n"
    )
