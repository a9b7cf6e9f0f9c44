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


def test_the_inference_table_shows_workers_and_the_baselines_fastest_layout():
    row = lambda engine, w, speed, best: {
        "engine": engine,
        "beam": 4,
        "workers": w,
        "sentences_per_s": speed,
        "vs": {
            inference.BASE: {"median": 0.5, "min": 0.4, "max": 0.6},
            inference.ADL: {"median": 1.0, "min": 1.0, "max": 1.0},
        },
        "vs_best_base": {"workers": 2, "median": best, "min": best, "max": best},
        "bleu": 12.0,
        "length_ratio": 0.95,
        "same_as_adl": 10,
    }
    result = {
        "meta": {"sentences": 10, "max_tokens": 4096, "workers": [1, 2]},
        "rows": [row("ADL float32", 1, 30.0, 0.3), row("ADL float32", 2, 45.0, 0.45)],
    }
    lines = inference.tables(result).splitlines()
    head = [c.strip() for c in lines[2].strip("|").split("|")]
    assert head[:3] == ["engine", "workers", "sentences/s"]
    assert "vs CTranslate2 float32, its fastest (2 workers)" in head
    cells = [c.strip() for c in lines[5].strip("|").split("|")]
    assert cells[:3] == ["ADL float32", "2", "45.0"]
    assert (
        cells[head.index("vs CTranslate2 float32, its fastest (2 workers)")] == "0.45x (0.45–0.45)"
    )
    assert lines[-1] == (
        "ADL's own search at its fastest (ADL float32, 2 workers) / CTranslate2 float32 at its "
        "fastest (2 workers): 0.45x (0.45–0.45), round by round; issue 57's bar, 0.80x in the "
        "median: not met."
    )
    # the fastest of ADL's own float32 search, eager or compiled; int8 is not ADL float32
    result["rows"] += [
        row("ADL float32 compiled (default)", 2, 60.0, 0.85),
        row("ADL int8 weight (torchao)", 2, 90.0, 1.2),
    ]
    assert inference.tables(result).splitlines()[-1] == (
        "ADL's own search at its fastest (ADL float32 compiled (default), 2 workers) / "
        "CTranslate2 float32 at its fastest (2 workers): 0.85x (0.85–0.85), round by round; "
        "issue 57's bar, 0.80x in the median: met."
    )
    del result["meta"]["workers"]  # a result of one layout: the table as before, no column
    assert "workers" not in inference.tables(result).splitlines()[2]


def test_the_inference_table_with_two_batch_sizes_names_each_engines_fastest():
    def row(engine, w, tokens, speed, best):
        out = {
            "engine": engine,
            "beam": 4,
            "workers": w,
            "max_tokens": tokens,
            "sentences_per_s": speed,
            "vs": {inference.BASE: {"median": 0.5, "min": 0.4, "max": 0.6}},
            "vs_best_base": {
                "workers": 1,
                "max_tokens": 16384,
                **dict.fromkeys(("median", "min", "max"), best),
            },
            "bleu": 12.0,
            "length_ratio": 0.95,
            "same_as_adl": 10,
        }
        return out

    result = {
        "meta": {"sentences": 10, "max_tokens": [4096, 16384], "workers": [1, 2]},
        "rows": [
            row("ADL float32", 2, 4096, 30.0, 0.3),
            row("ADL float32", 1, 16384, 90.0, 0.9),
            row(inference.BASE, 1, 16384, 100.0, 1.0),
        ],
    }
    lines = inference.tables(result).splitlines()
    assert lines[0] == "beam 4 (each batch size for both engines):"
    head = [c.strip() for c in lines[2].strip("|").split("|")]
    assert head[:4] == ["engine", "workers", "batch (source tokens)", "sentences/s"]
    fastest = "vs CTranslate2 float32, its fastest (1 worker, batches of 4,096 source tokens)"
    assert fastest in head
    cells = [c.strip() for c in lines[5].strip("|").split("|")]
    assert cells[:4] == ["ADL float32", "1", "4,096", "90.0"]  # 16,384 / beam 4
    assert lines[-1] == (
        "ADL's own search at its fastest (ADL float32, 1 worker, batches of 4,096 source "
        "tokens) / CTranslate2 float32 at its fastest (1 worker, batches of 4,096 source "
        "tokens): 0.90x (0.90–0.90), round by round; issue 57's bar, 0.80x in the median: met."
    )
