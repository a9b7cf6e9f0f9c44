"""The benchmarks' blocks of docs/performance.md are their committed results, and the one
helper that rewrites every generated block of the docs does what it says."""

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

import beam_lengths  # noqa: E402
import inference  # noqa: E402

from adl.runtime.docblocks import pattern, rewrite  # noqa: E402


@pytest.mark.parametrize(
    "module, result", [(inference, "inference_demo.json"), (beam_lengths, "beam_lengths.json")]
)
def test_the_benchmark_tables_are_the_committed_results(module, result):
    doc = ROOT / "docs" / "performance.md"
    assert f"docs/results/bench/{result} -->" in doc.read_text(encoding="utf-8")
    assert module.update_doc(doc, ROOT, write=False) == [], (
        f"run python bench/{module.__name__}.py --update-doc docs/performance.md"
    )


def test_a_block_is_rewritten_from_its_arguments_and_checked_without_writing(tmp_path):
    doc = tmp_path / "doc.md"
    text = "before\n<!-- sum 2 3 -->\nold\n<!-- end of sum -->\n<!-- sum 1 1 -->\n2\n<!-- end of sum -->\n"
    doc.write_text(text)
    blocks = pattern("sum", r"[\d ]+?")
    fill = lambda m: f"{sum(int(x) for x in m['args'].split())}\n"
    assert rewrite(doc, blocks, fill, write=False) == ["2 3"]
    assert doc.read_text() == text  # a check writes nothing
    assert rewrite(doc, blocks, fill) == ["2 3"]
    assert doc.read_text() == text.replace("old", "5")
    assert rewrite(doc, blocks, fill) == []
