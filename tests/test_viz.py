"""``adl viz``: pattern pictures draw exactly adl.patterns' matrices; a trained model's
attention and a run's learning curves become PNG files of the size asked for; bad input gets
one message and exit status 1."""

import json
import re
import shlex
import struct
import sys

import pytest
import torch
from conftest import QUICK, ROOT, run_cli, sets

from adl import patterns, runtime
from adl.runtime.run import viz
from adl.runtime.run.figures import Heatmap, curves_size, heatmap_size, pixels

sys.path.insert(0, str(ROOT / "bench"))
from toy_task import write_reverse_pairs  # noqa: E402

SEVEN = ["cur", "prev", "next", "left", "right", "end", "start"]  # Raganato et al.'s seven
g = patterns.gaussian

PATTERNS = [
    ("gauss_att(l, r)", {}, [("offset -1 (l)", g(6, -1)), ("offset +1 (r)", g(6, 1))]),
    (
        "gauss_att(l, c, window=3)",
        {"role": "decoder"},
        [
            ("offset -1 (l)", g(6, -1, window=3, causal=True)),
            ("offset 0 (c)", g(6, 0, window=3, causal=True)),
        ],
    ),
    (
        "gauss_att(l, r, index=true)",
        {},
        [("offset -1 (l)", g(6, -1, index=True)), ("offset +1 (r)", g(6, 1, index=True))],
    ),
    ("gauss_att(2, sigma=0.5, heads=3)", {}, [("offset +2", g(6, 2, 0.5))] * 3),
    (
        "gauss_src_att(l, c, r, ratio=1.2)",
        {"source_length": 9, "ratio": 3.0},
        [
            (t, patterns.gaussian_cross(6, 9, o, 1.2))
            for t, o in (("offset -1 (l)", -1), ("offset 0 (c)", 0), ("offset +1 (r)", 1))
        ],
    ),
    ("gauss_src_att(c)", {"ratio": 1.5}, [("offset 0 (c)", patterns.gaussian_cross(6, 6, 0, 1.5))]),
    ("fixed_self_att", {}, [(p, patterns.fixed(p, 6)) for p in SEVEN]),
    (
        "fixed_self_att(cur, prev, last, learned=0)",
        {},
        [(p, patterns.fixed(p, 6)) for p in ("cur", "prev", "last")],
    ),
    ("mh_dot_self_att(window=5)", {}, [("band k=5", patterns.band(6, 5))]),
    (
        "mh_dot_self_att(window=5)",
        {"role": "decoder"},
        [("band k=5", patterns.band(6, 5, causal=True))],
    ),
    (
        "mh_dot_self_att(window=5)",
        {"role": "joint", "source_length": 4},
        [("joint band k=5", patterns.joint_band(4, 6, 5))],
    ),
]


@pytest.mark.parametrize("text, options, expected", PATTERNS, ids=[p[0] for p in PATTERNS])
def test_pattern_heads_are_the_matrices_of_adl_patterns(text, options, expected):
    heads = viz.pattern_heads(text, 6, **options)
    assert [t for t, _ in heads] == [t for t, _ in expected]
    for (_, got), (_, want) in zip(heads, expected):
        assert torch.equal(got, want)


def test_the_papers_numbers_come_through():
    ((_, left),) = viz.pattern_heads("gauss_att(l)", 5)
    assert left[2].tolist() == pytest.approx(
        [0.24197, 0.39894, 0.24197, 0.05399, 0.00443], abs=1e-5
    )
    ((_, band),) = viz.pattern_heads("mh_dot_self_att(window=3)", 5)
    assert ["".join(str(int(x)) for x in row) for row in band.tolist()] == [
        "11000",
        "11100",
        "01110",
        "00111",
        "00011",
    ]


def png_size(path) -> tuple[int, int]:
    """(width, height) from a PNG's IHDR chunk, after checking the signature."""
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and data[12:16] == b"IHDR"
    return struct.unpack(">II", data[16:24])


def test_adl_viz_pattern_writes_the_png_asked_for(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, out, err = run_cli("viz", "pattern", "gauss_att(l, r)", "--length", "5")
    assert code == 0, err
    assert out.strip() == "pattern.png"
    panels = [Heatmap(t, m) for t, m in viz.pattern_heads("gauss_att(l, r)", 5)]
    assert png_size(tmp_path / "pattern.png") == pixels(heatmap_size(panels, 4)) == (640, 340)


@pytest.mark.parametrize(
    "argv, message",
    [
        (["ffl"], "adl viz pattern: error: 'ffl' has no hard-coded attention pattern"),
        (["mh_dot_self_att"], "adl viz pattern: error: mh_dot_self_att has no hard-coded pattern"),
        (["gauss_att(l, r) -> ffl"], "adl viz pattern: error: give one layer"),
        (["foo"], "LAYER:1:1: error: unknown layer 'foo'"),
        (["gauss_att(l"], "LAYER:1:10: error: unclosed '('"),
        (["gauss_src_att(l)", "--role", "encoder"], "LAYER:1:1: error:"),
        (["gauss_att(l)", "--length", "0"], "adl viz pattern: error: lengths must be at least 1"),
    ],
)
def test_a_layer_without_a_pattern_or_bad_text_is_one_message(argv, message, tmp_path):
    length = [] if "--length" in argv else ["--length", "4"]
    code, out, err = run_cli("viz", "pattern", *argv, *length, "--out", str(tmp_path / "p.png"))
    assert code == 1 and out == ""
    assert err.startswith(message) and "Traceback" not in err
    assert not (tmp_path / "p.png").exists()


# --- a tiny trained run ---------------------------------------------------------------------
MODEL = (
    "encoder = pos -> res_nd(gauss_att(l, r)) -> res_nd(ffl) -> norm\n"
    "decoder = pos -> res_nd(mh_dot_self_att) -> res_nd(mh_dot_src_att) -> norm\n"
)


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """6 updates of a small model on reversing letter sentences, validated at steps 3 and 6."""
    tmp = tmp_path_factory.mktemp("viz")
    write_reverse_pairs(tmp, {"train": 200, "valid": 20}, letters="abcdefghij")
    (tmp / "model.adl").write_text(MODEL)
    code, _, err = run_cli(
        "train",
        str(tmp / "model.adl"),
        "--train",
        str(tmp / "train"),
        "--valid",
        str(tmp / "valid"),
        "--langs",
        "src",
        "tgt",
        *QUICK,
        *sets("max_steps=6", "valid_every=3", "log_every=2"),
        "--out",
        str(tmp / "run"),
    )
    assert code == 0, err
    return tmp / "run"


def test_attention_panels_are_the_models_weights_with_pieces_on_the_axes(run):
    model, tokenizers = runtime.load_for_inference(run, "best")
    panels, target = viz.attention_panels(model, tokenizers, "a b c", "c b a")
    assert target == "c b a"
    src = tokenizers.encode_src(["a b c"])[0]
    tgt = tokenizers.encode_tgt(["c b a"])[0]
    source = [tokenizers.src.id_to_piece(i) for i in src] + ["</s>"]
    target_in = ["<s>"] + [tokenizers.tgt.id_to_piece(i) for i in tgt]
    predicted = target_in[1:] + ["</s>"]
    titles = [p.title for p in panels]
    assert titles == (
        [f"encoder 2.1 gauss_att\nhead {h}" for h in (1, 2)]
        + [f"decoder 2.1 mh_dot_self_att\nhead {h}" for h in (1, 2, 3, 4)]
        + [f"decoder 3.1 mh_dot_src_att\nhead {h}" for h in (1, 2, 3, 4)]
    )
    enc, dec_self, dec_src = panels[0], panels[2], panels[6]
    # the encoder's hard-coded heads are adl.patterns' Gaussians over source + eos
    assert torch.equal(enc.matrix, patterns.gaussian(len(source), -1))
    assert torch.equal(panels[1].matrix, patterns.gaussian(len(source), 1))
    assert enc.rows == enc.cols == source
    assert dec_self.rows == dec_self.cols == target_in
    assert dec_src.rows == predicted and dec_src.cols == source
    assert dec_src.matrix.shape == (len(predicted), len(source))
    assert torch.allclose(dec_src.matrix.sum(-1), torch.ones(len(predicted)))
    only, _ = viz.attention_panels(model, tokenizers, "a b c", "c b a", layer="src_att")
    assert [p.title for p in only] == titles[6:]


def test_adl_viz_attention_writes_the_png_asked_for(run):
    code, out, err = run_cli(
        "viz",
        "attention",
        "--model",
        str(run),
        "--src",
        "a b c d",
        "--tgt",
        "d c b a",
        "--max-panels",
        "3",
    )
    assert code == 0, err
    assert out.splitlines() == [
        str(run / "pictures" / "attention.png"),
        "3 panels drawn, 7 left out (--layer picks layers, --max-panels raises the cap)",
    ]
    model, tokenizers = runtime.load_for_inference(run, "best")
    panels, _ = viz.attention_panels(model, tokenizers, "a b c d", "d c b a")
    # two columns: the most heads of one layer among the three panels drawn
    assert png_size(run / "pictures" / "attention.png") == pixels(heatmap_size(panels[:3], 2))


def test_without_a_reference_the_decoder_reads_its_greedy_translation(run, tmp_path):
    picture = viz.draw_attention(run, "a b c d", which="last", out=tmp_path / "a.png")
    model, tokenizers = runtime.load_for_inference(run, "last")
    assert picture.target == runtime.translate(model, tokenizers, ["a b c d"], beam=1)[0]
    assert picture.drawn == 10 and picture.left_out == 0
    assert png_size(tmp_path / "a.png") == pixels(picture.size)


@pytest.mark.parametrize(
    "argv, message",
    [
        (
            ["--model", "no/such/run", "--src", "a"],
            "adl viz attention: error: no/such/run: no such run directory or checkpoint file",
        ),
        (
            ["--src", "a", "--layer", "nothing"],
            "adl viz attention: error: no attention layer's position contains 'nothing'; the "
            "model's: encoder 2.1 gauss_att, decoder 2.1 mh_dot_self_att, decoder 3.1 mh_dot_src_att",
        ),
        (["--src", "  "], "adl viz attention: error: the source sentence is empty"),
    ],
)
def test_adl_viz_attention_bad_input(run, argv, message):
    if "--model" not in argv:
        argv = ["--model", str(run), *argv]
    code, out, err = run_cli("viz", "attention", *argv)
    assert code == 1 and out == ""
    assert err.strip() == message


def test_curves_are_the_runs_metrics(run):
    records = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    charts = viz.curve_charts(viz.read_metrics(run))
    assert [c.title for c in charts] == [
        "training loss",
        "validation perplexity",
        "validation BLEU",
        "validation chrF",
    ]
    assert charts[0].x == [2, 4, 6] and charts[1].x == charts[2].x == [3, 6]
    assert charts[0].y == [r["loss"] for r in records if r["split"] == "train"]
    assert charts[3].y == [r["chrf"] for r in records if r["split"] == "valid"]


def test_adl_viz_curves_writes_the_png_asked_for(run, tmp_path):
    code, out, err = run_cli("viz", "curves", str(run))
    assert code == 0, err
    assert out.strip() == str(run / "pictures" / "curves.png")
    assert png_size(run / "pictures" / "curves.png") == pixels(curves_size(4)) == (1000, 690)


def test_adl_viz_curves_bad_input(tmp_path):
    code, _, err = run_cli("viz", "curves", str(tmp_path / "none"))
    assert code == 1
    assert err.strip() == f"adl viz curves: error: {tmp_path / 'none'}: no such run directory"
    code, _, err = run_cli("viz", "curves", str(tmp_path))
    assert code == 1
    assert err.strip().startswith(f"adl viz curves: error: {tmp_path}: no metrics.jsonl")
    (tmp_path / "metrics.jsonl").write_text('{"split": "train", "st')  # cut by a kill
    code, _, err = run_cli("viz", "curves", str(tmp_path))
    assert code == 1 and "has no training loss or validation scores yet" in err


def test_the_pattern_commands_of_the_docs_run_as_written(tmp_path, monkeypatch):
    doc = (ROOT / "docs" / "runtime.md").read_text(encoding="utf-8")
    block = re.search(r"## Pictures\n.*?```\n(.*?)```", doc, re.S).group(1)
    lines = [
        line.split("  #")[0] for line in block.splitlines() if line.startswith("adl viz pattern")
    ]
    assert len(lines) == 3
    monkeypatch.chdir(tmp_path)
    for line in lines:
        code, out, err = run_cli(*shlex.split(line)[1:])
        assert code == 0, (line, err)
        assert png_size(tmp_path / out.strip())
