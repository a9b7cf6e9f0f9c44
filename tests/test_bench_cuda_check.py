"""bench/cuda_check.py, the check to run where a GPU is, runs on the CPU too: a family
decodes the same incrementally and in full, and the search as the reference search."""

import sys

import pytest
from conftest import ROOT

sys.path.insert(0, str(ROOT / "bench"))

import cuda_check  # noqa: E402


def test_the_check_holds_on_the_cpu_for_a_joint_and_a_word_pattern_family():
    for name in ("joint", "raganato_word"):
        result = cuda_check.check(name, cuda_check.FAMILIES[name], "cpu")
        assert result == {
            "incremental = full": True,
            "search = reference": True,
            "device = cpu": True,
        }


@pytest.mark.slow
def test_the_compiled_step_check_holds_on_the_cpu():
    """--compiled: the step compiled over a static cache finds the eager search's beam-4
    translations for the families whose layers it takes, and is left out for the others."""
    for name in ("transformer", "hard_all"):
        result = cuda_check.check(name, cuda_check.FAMILIES[name], "cpu", "default")
        assert result["compiled = eager"] is True, name
    assert "compiled = eager" not in cuda_check.check(
        "hc_all", cuda_check.FAMILIES["hc_all"], "cpu", "default"
    )
