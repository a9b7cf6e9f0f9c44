"""Tiny data and models for the runtime's tests (written by the tests, d_model 32-64)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from conftest import QUICK, ROOT, sets

sys.path.insert(0, str(ROOT / "bench"))
from toy_task import LETTERS, write_reverse_pairs  # noqa: E402

if TYPE_CHECKING:
    from adl.runtime.rundir import RunDir

WORDS = list(LETTERS)  # each letter becomes one sentencepiece piece

ENC = "pos -> repeat(2, res_nd(mh_dot_self_att) -> res_nd(ffl)) -> norm\n"
DEC = "pos -> repeat(2, res_nd(mh_dot_self_att) -> res_nd(mh_dot_src_att) -> res_nd(ffl)) -> norm\n"
MODEL = (
    "encoder = pos -> res_nd(cnn) -> res_nd(ffl) -> norm\n"
    "decoder = pos -> res_nd(rnn) -> res_nd(mh_dot_src_att) -> norm\n"
)
JOINT = "joint = pos -> repeat(2, res_nd(mh_dot_self_att) -> res_nd(ffl)) -> norm\n"


def reverse_task(
    directory: Path,
    train: int = 1000,
    valid: int = 100,
    seed: int = 0,
    lengths: tuple[int, int] = (3, 8),
) -> dict[str, str]:
    """``train.src``/``train.tgt`` (and valid): random letter sentences and their reversal."""
    write_reverse_pairs(directory, {"train": train, "valid": valid}, seed, lengths)
    return {"train": str(directory / "train"), "valid": str(directory / "valid")}


def model_files(directory: Path) -> list[str]:
    enc, dec = directory / "tiny.enc.adl", directory / "tiny.dec.adl"
    enc.write_text(ENC)
    dec.write_text(DEC)
    return [str(enc), str(dec)]


def reverse_config(tmp: Path, *sets: str, train: int = 100, valid: int = 5):
    """The configuration of a small reverse-task run (preset tiny, d_model 32, batches of 256
    tokens) on data written to ``tmp/data``; ``sets``: further ``KEY=VALUE`` settings (a
    later one wins, so they may change d_model and max_tokens too)."""
    from adl import runtime

    paths = reverse_task(tmp / "data", train=train, valid=valid)
    return runtime.configure(
        model_files(tmp),
        preset="tiny",
        train=(paths["train"] + ".src", paths["train"] + ".tgt"),
        valid=(paths["valid"] + ".src", paths["valid"] + ".tgt"),
        sets=["d_model=32", "max_tokens=256", *sets],
    )


def data_args(paths: dict[str, str], valid: bool = True) -> list[str]:
    args = ["--train", paths["train"], "--langs", "src", "tgt"]
    return args + (["--valid", paths["valid"]] if valid else [])


def train_cli(
    tmp: Path,
    paths: dict[str, str],
    *settings: str,
    files: list[str] | None = None,
    valid: bool = True,
    options=QUICK,
) -> str:
    """``adl train`` of ``files`` (by default the tiny model files, written to ``tmp``) on
    the reverse task at ``paths`` (``valid``: with its validation set) into ``tmp/run``, with
    ``options`` and then ``settings`` (``KEY=VALUE`` items), which must succeed; its
    standard output."""
    from conftest import run_cli

    code, stdout, err = run_cli(
        "train",
        *(model_files(tmp) if files is None else files),
        *data_args(paths, valid=valid),
        *options,
        *sets(*settings),
        "--out",
        str(tmp / "run"),
    )
    assert code == 0, err
    return stdout


def translate_lines(
    model: Path | str, lines: list[str], folder: Path, *options: str
) -> tuple[int, str, str]:
    """``adl translate --model MODEL --input FOLDER/in.txt OPTIONS`` with ``lines`` written to
    that file: the exit code, standard output and standard error."""
    from conftest import run_cli

    src = folder / "in.txt"
    src.write_text("".join(line + "\n" for line in lines))
    return run_cli("translate", "--model", str(model), "--input", str(src), *options)


def train_reverse_run(tmp: Path, *settings: str) -> Path:
    """A reverse-task run of 300 steps (d_model 48) in ``tmp/run``, for a test module to
    share; ``settings``: further ``KEY=VALUE`` settings."""
    paths = reverse_task(tmp / "data", train=2000, valid=40)
    options = ["d_model=48", "max_tokens=1024", "max_steps=300", "valid_every=300"]
    train_cli(tmp, paths, *options, *settings)
    return tmp / "run"


def last_reaches(run: RunDir, step: int) -> bool:
    """Whether last.pt is (a hard link to) the checkpoint of ``step`` or a later one: the
    step file appears a moment before last.pt is relinked to it."""
    try:
        inode = run.last.stat().st_ino
        return any(s >= step and p.stat().st_ino == inode for s, p in run.step_files().items())
    except FileNotFoundError:
        return False


def env() -> dict[str, str]:
    """The environment of a child ``adl`` process (this checkout first on the path)."""
    e = dict(os.environ)
    e["PYTHONPATH"] = str(ROOT) + os.pathsep + e.get("PYTHONPATH", "")
    e.pop("WORLD_SIZE", None)
    return e


def _sigint_default() -> None:
    """A child's ``preexec_fn``: Ctrl-C back to its default. A shell without job control
    starts a background job (``bash .ci/run &``) with SIGINT ignored, every process under it
    inherits that, and Python then never raises KeyboardInterrupt."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_DFL)


def start_adl(*argv: str, stdin: int | None = None) -> subprocess.Popen:
    """``adl ARGV`` as a child with its output in text pipes, to signal or feed while it
    runs; Ctrl-C (SIGINT) works in it even when the tests run as a background job."""
    return subprocess.Popen(
        adl_command(*argv),
        stdin=stdin,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env(),
        preexec_fn=_sigint_default,
    )


def adl_command(*argv: str) -> list[str]:
    return [
        sys.executable,
        "-c",
        "import sys; from adl.cli import main; sys.exit(main(sys.argv[1:]))",
        *argv,
    ]


def run_adl(*argv: str, timeout: float = 300) -> subprocess.CompletedProcess:
    """``adl ARGV`` in a child process."""
    return subprocess.run(
        adl_command(*argv), capture_output=True, text=True, env=env(), timeout=timeout
    )


KEPT: list = []  # what translate_with_kept_workers keeps alive to its process's end


def translate_with_kept_workers(run: str) -> str:
    """In a process of multiprocessing's own (a pool's worker): 'a b c d' translated by two
    forked workers (two torch threads: one a worker), the model and its kept workers left
    alive as the process ends."""
    import torch

    from adl.runtime.decode.translator import load_model

    torch.set_num_threads(2)
    KEPT.append(load_model(run))
    return KEPT[-1].translate("a b c d", beam=4, workers=2)
