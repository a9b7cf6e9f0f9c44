"""bench/cuda_check.py, the check to run where a GPU is, runs on the CPU too: a family
decodes the same incrementally and in full, and the search as the reference search."""

import sys

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
