from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def root() -> Path:
    return ROOT


def run_cli(*argv: str) -> tuple[int, str, str]:
    """Run ``adl`` in-process; returns (exit code, stdout, stderr)."""
    import contextlib
    import io

    from adl.cli import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(argv))
    return code, out.getvalue(), err.getvalue()
