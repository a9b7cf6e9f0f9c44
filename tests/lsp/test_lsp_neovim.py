"""A real editor: Neovim (Debian's ``neovim``), headless, opens a bad file with ``adl lsp``
as its language server; the diagnostics it received are those of ``adl compile --check``."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import run_cli
from lsp_helpers import as_printed, printed

SCRIPT = Path(__file__).with_name("nvim_diagnostics.lua")


@pytest.mark.slow
def test_neovim_shows_the_diagnostics_of_adl_compile_check(tmp_path: Path):
    nvim = shutil.which("nvim")
    if nvim is None:
        pytest.skip("Neovim is not installed (apt-get install neovim; .ci/run installs it)")
    bad = tmp_path / "t.enc.adl"
    bad.write_text("pos -> repeat(6, res_nd(mh_dot_self_att(heads=7)) -> res_nd(fft)) -> norm\n")
    code, _, err = run_cli("compile", "--check", str(bad))
    assert code == 1
    out = tmp_path / "diagnostics.json"
    env = {**os.environ, "ADL_NVIM_PYTHON": sys.executable, "ADL_NVIM_OUT": str(out)}
    subprocess.run(
        [nvim, "--headless", "--clean", str(bad), "-c", f"luafile {SCRIPT}"],
        env=env,
        cwd=tmp_path,
        timeout=300,
        check=True,
        capture_output=True,
    )
    result = json.loads(out.read_text())
    assert result["waited"] is True
    errors = {1: "error", 2: "warning"}  # vim.diagnostic.severity
    seen = [
        as_printed(errors[d["severity"]], d["lnum"], d["col"], d["end_col"], d["message"])
        for d in sorted(result["diagnostics"], key=lambda d: (d["lnum"], d["col"]))
    ]
    expected = printed(err)
    assert len(expected) == 2 and seen == expected
