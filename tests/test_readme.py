"""The README's commands and example stay true."""

import re
import subprocess

from conftest import ROOT, run_cli

README = (ROOT / "README.md").read_text(encoding="utf-8")


def test_the_two_setup_commands_are_documented_and_ci_uses_the_second():
    assert "make demo" in README and "make test" in README
    ci = (ROOT / ".ci" / "run").read_text()
    assert re.search(r"^make test$", ci, re.M)
    assert re.search(r"^make test-slow$", ci, re.M)  # what make test leaves out
    dry = subprocess.run(["make", "-n", "test"], cwd=ROOT, capture_output=True, text=True)
    assert "pytest" in dry.stdout
    dry = subprocess.run(["make", "-n", "-B", "test"], cwd=ROOT, capture_output=True, text=True)
    assert "torch==2.13.0" in dry.stdout  # the install step pins the CPU wheel


def test_console_example():
    block = re.search(r"```console\n\$ (adl [^\n]+)\n(.*?)```", README, re.S)
    argv, expected = block.group(1).split()[1:], block.group(2)
    code, out, err = run_cli(*argv)
    assert code == 0, err
    assert out == expected


def test_python_example(capsys):
    code = re.search(r"```python\n(.*?)```", README, re.S).group(1)
    exec(compile(code, "README.md", "exec"), {})
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "17,333,248"
    assert out[1].split() == ["1", "pos", "512", "->", "512"]
