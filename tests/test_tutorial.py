"""docs/tutorial.md stays true: its ADL files check, the files it quotes match architectures/,
its quick commands print exactly what it shows, and every `adl` command it shows parses."""

import re
import shlex
import subprocess
import sys

import pytest
from conftest import ROOT

from adl.cli import parser

DOC = (ROOT / "docs" / "tutorial.md").read_text(encoding="utf-8")
ADL_BLOCKS = re.findall(r"```adl\n(.*?)```", DOC, re.S)
CONSOLE_BLOCKS = re.findall(r"```console\n(.*?)```", DOC, re.S)
QUICK = ("adl compile ", "sed ")  # commands cheap enough to rerun here


def commands(block: str) -> list[tuple[str, str]]:
    """(command, its output) pairs of a console block."""
    parts = re.split(r"^\$ (.*)\n", block, flags=re.M)
    return [(parts[i], parts[i + 1]) for i in range(1, len(parts), 2)]


def write_my_files(where):
    written = []
    for block in ADL_BLOCKS:
        first = block.splitlines()[0]
        if first.startswith("# my/"):
            path = where / first[2:].strip()
            path.parent.mkdir(exist_ok=True)
            path.write_text(block, encoding="utf-8")
            written.append(path)
    return written


def test_the_files_it_writes_check(tmp_path):
    import adl

    written = write_my_files(tmp_path)
    assert len(written) == 3
    for path in written:
        adl.check(path)  # raises on an error


def test_the_files_it_quotes_match_architectures():
    quoted = [b for b in ADL_BLOCKS if b.startswith("# architectures/")]
    assert quoted
    for block in quoted:
        name = block.splitlines()[0][2:].split()[0]
        real = [
            line
            for line in (ROOT / name).read_text().splitlines()
            if line.strip() and not line.startswith("#")
        ]
        assert block.splitlines()[1:] == real, name


@pytest.mark.parametrize(
    "block",
    [b for b in CONSOLE_BLOCKS if commands(b) and all(c.startswith(QUICK) for c, _ in commands(b))],
)
def test_quick_commands_print_what_it_shows(tmp_path, block):
    write_my_files(tmp_path)
    for command, shown in commands(block):
        if command.startswith("adl "):
            command = f"{shlex.quote(sys.executable)} -m adl {command[4:]}"
        r = subprocess.run(
            ["bash", "-c", command], cwd=tmp_path, capture_output=True, text=True, timeout=120
        )
        assert (r.stdout + r.stderr).rstrip("\n") == shown.rstrip("\n"), command


def test_every_adl_command_it_shows_parses():
    shown = [c for block in CONSOLE_BLOCKS for c, _ in commands(block)]
    shown += re.findall(r"^(adl [^\n]*)$", DOC, re.M)
    last = [c.split("|")[-1].strip() for c in shown]  # the command after any pipe
    adl_commands = [c for c in last if c.startswith("adl ")]
    assert len(adl_commands) >= 15
    for command in adl_commands:
        argv = shlex.split(command.split(" > ")[0])
        parser().parse_args(argv[1:])  # exits (SystemExit) on an unknown option
