from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def root() -> Path:
    return ROOT


@pytest.fixture(scope="module")
def one_thread():
    """Torch on one thread for a module (``pytestmark = pytest.mark.usefixtures("one_thread")``):
    with tiny matrices, one thread is much faster than several on a busy machine."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def run_cli(*argv: str) -> tuple[int, str, str]:
    """Run ``adl`` in-process; returns (exit code, stdout, stderr)."""
    import contextlib
    import io

    from adl.cli import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(argv))
    return code, out.getvalue(), err.getvalue()


def sets(*settings: str) -> list[str]:
    """Command-line arguments: ``--set`` before each ``KEY=VALUE`` of ``settings``."""
    return [arg for setting in settings for arg in ("--set", setting)]


# settings that make a CLI run short; tests add their own --set items after these
QUICK = ["--preset", "tiny", *sets("d_model=32", "max_tokens=256", "log_every=5")]


@pytest.fixture(scope="session")
def project_wheel(tmp_path_factory) -> Path:
    """The project's wheel, built once per test session (``pip wheel``, no dependencies)."""
    import subprocess
    import sys

    out = tmp_path_factory.mktemp("wheel")
    command = [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation"]
    r = subprocess.run([*command, "-w", str(out), str(ROOT)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return next(out.glob("adl-*.whl"))


@pytest.fixture(scope="session")
def reverse_run_once(tmp_path_factory) -> Path:
    """A folder with a reverse-task run of 300 steps (``run``, tied embeddings) and its data
    (``data``), trained once for the whole session: the runtime's modules that decode a
    trained model take a copy each (:func:`copy_of`), not a training run each."""
    from runtime_helpers import train_reverse_run  # tests/runtime, on the path by then

    tmp = tmp_path_factory.mktemp("reverse")
    train_reverse_run(tmp, "tie_embeddings=true")
    return tmp


def copy_of(once: Path, tmp: Path) -> tuple[Path, Path]:
    """(``tmp``, its run): a copy of :func:`reverse_run_once`'s folder in ``tmp``, so that
    what one module writes beside the run no other sees."""
    import shutil

    shutil.copytree(once, tmp, dirs_exist_ok=True)
    return tmp, tmp / "run"
