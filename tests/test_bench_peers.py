"""bench/peers.py without training: the recipe each peer is given (sizes, batch, the matched
peak learning rate), the command lines, the parsers of the peers' outputs, the scores and
the table."""

import json
import math
import sys

import pytest
from conftest import ROOT

sys.path.insert(0, str(ROOT / "bench"))

import peers  # noqa: E402
from peerlib import recipe as recipe_mod  # noqa: E402
from peerlib import systems, table  # noqa: E402
from peerlib.prepare import find_files, keep_pair  # noqa: E402

from adl.runtime.config import ScheduleConfig  # noqa: E402
from adl.runtime.data import TextPairs, encode_pairs  # noqa: E402
from adl.runtime.schedule import Schedule  # noqa: E402


@pytest.fixture(scope="module")
def recipe():
    return recipe_mod.load("demo", ["train.threads=1"], root=str(ROOT))


@pytest.fixture
def data(tmp_path):
    split = lambda s: (tmp_path / f"{s}.src", tmp_path / f"{s}.tgt")
    return systems.Data(
        tmp_path,
        tmp_path / "joint.model",
        {s: split(s) for s in ("train", "valid", "test")},
        {s: split(s) for s in ("train", "valid", "test")},
        test_size=3,
    )


def value(argv, flag):
    return argv[argv.index(flag) + 1]


def test_the_recipe_is_the_demo_presets(recipe):
    assert (recipe.d_model, recipe.layers, recipe.ffn, recipe.heads) == (256, 2, 1024, 4)
    assert (recipe.vocab, recipe.max_tokens, recipe.dropout) == (2000, 2000, 0.0)
    assert (recipe.lr, recipe.warmup, recipe.betas) == (2e-3, 300, (0.9, 0.98))
    assert (recipe.label_smoothing, recipe.clip_norm, recipe.max_len) == (0.1, 1.0, 80)
    assert (recipe.valid_every, recipe.best_metric) == (200, "bleu")


def test_a_recipe_the_peers_cannot_follow_is_refused():
    with pytest.raises(ValueError, match="inverse_sqrt"):
        recipe_mod.load("demo", ["schedule.kind=plateau"], root=str(ROOT))


def sockeye_rate(base, warmup, t):
    """Sockeye 3.1.34's LearningRateSchedulerInvSqrtDecay, from its documentation:
    base * min(1, t / warmup) / sqrt(max(t, warmup))."""
    return base * min(1.0, t / warmup) / math.sqrt(max(t, warmup))


def test_sockeye_gets_the_same_peak_and_curve(recipe, data):
    argv = systems.make("sockeye", recipe, data, data.root / "s", "cpu").train(15).argv
    base = float(value(argv, "--initial-learning-rate"))
    warmup = int(value(argv, "--learning-rate-warmup"))
    assert base == pytest.approx(2e-3 * math.sqrt(300))
    ours = Schedule(ScheduleConfig(kind="inverse_sqrt", warmup=300), 2e-3)
    for t in (1, 150, 300, 301, 1000, 5000):
        assert sockeye_rate(base, warmup, t) == pytest.approx(ours.lr(t), rel=1e-9)
    assert max(sockeye_rate(base, warmup, t) for t in range(1, 2000)) == pytest.approx(2e-3)


def test_sockeye_command_line(recipe, data):
    step = systems.make("sockeye", recipe, data, data.root / "s", "cpu").train(15)
    argv = step.argv
    assert value(argv, "--num-layers") == "2:2"
    assert value(argv, "--transformer-model-size") == "256"
    assert value(argv, "--num-embed") == "256"
    assert value(argv, "--transformer-attention-heads") == "4"
    assert value(argv, "--transformer-feed-forward-num-hidden") == "1024"
    assert value(argv, "--batch-size") == "2000" and value(argv, "--batch-type") == "word"
    assert value(argv, "--label-smoothing") == "0.1"
    assert value(argv, "--optimizer-betas") == "0.9:0.98"
    assert value(argv, "--learning-rate-scheduler-type") == "inv-sqrt-decay"
    assert value(argv, "--gradient-clipping-type") == "norm"
    assert value(argv, "--max-seq-len") == "80:80"
    assert value(argv, "--checkpoint-interval") == "200"
    assert value(argv, "--optimized-metric") == "bleu"
    assert value(argv, "--peer-minutes") == "15"
    for flag in ("--transformer-dropout-attention", "--transformer-dropout-act"):
        assert value(argv, flag) == "0"
    assert "--use-cpu" in argv and "--shared-vocab" in argv
    beam = systems.make("sockeye", recipe, data, data.root / "s", "cuda").decode(4).argv
    assert value(beam, "--beam-size") == "4" and "--use-cpu" not in beam


def test_fairseq_command_lines(recipe, data):
    f = systems.make("fairseq", recipe, data, data.root / "f", "cpu")
    argv = f.train(15).argv
    for side in ("encoder", "decoder"):
        assert value(argv, f"--{side}-layers") == "2"
        assert value(argv, f"--{side}-embed-dim") == "256"
        assert value(argv, f"--{side}-ffn-embed-dim") == "1024"
        assert value(argv, f"--{side}-attention-heads") == "4"
        assert f"--{side}-normalize-before" in argv
    assert value(argv, "--lr") == "0.002" and value(argv, "--warmup-updates") == "300"
    assert value(argv, "--lr-scheduler") == "inverse_sqrt"
    assert value(argv, "--warmup-init-lr") == "0"
    assert value(argv, "--max-tokens") == "2000"
    assert value(argv, "--adam-betas") == "(0.9, 0.98)"
    assert value(argv, "--label-smoothing") == "0.1" and value(argv, "--clip-norm") == "1"
    assert value(argv, "--dropout") == "0" and "--share-all-embeddings" in argv
    assert float(value(argv, "--stop-time-hours")) == pytest.approx(0.25)
    assert value(argv, "--best-checkpoint-metric") == "bleu"
    assert value(argv, "--num-workers") == "0" and "--cpu" in argv
    gen = f.decode(4)
    assert value(gen.argv, "--beam") == "4"
    assert value(gen.argv, "--required-batch-size-multiple") == "1"  # else a line is lost
    assert gen.env == {"TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD": "1"}
    assert "--joined-dictionary" in f.prepare()[0].argv


def test_adl_and_torch_command_lines(recipe, data):
    argv = systems.make("adl", recipe, data, data.root / "a", "cpu").train(15).argv
    sets = [argv[i + 1] for i, a in enumerate(argv) if a == "--set"]
    assert value(argv, "--preset") == "demo"
    assert f"data.spm_model={data.spm}" in sets and "train.max_minutes=15" in sets
    assert "train.threads=1" in sets
    argv = systems.make("torch", recipe, data, data.root / "t", "cpu").train(15).argv
    given = json.loads(value(argv, "--recipe"))
    assert (given["d_model"], given["layers"], given["ffn"], given["lr"]) == (256, 2, 1024, 2e-3)


def test_rounds_never_run_more_processes_than_slots():
    assert peers.plan_rounds(["sockeye", "fairseq"], 2) == [
        ["adl", "sockeye"],
        ["adl", "fairseq"],
    ]
    assert peers.plan_rounds(["sockeye", "fairseq"], 16) == [["adl", "sockeye", "fairseq"]]
    assert peers.plan_rounds(["sockeye"], 1) == [["adl"], ["sockeye"]]
    for slots in range(1, 6):
        for names in peers.plan_rounds(["sockeye", "fairseq", "torch"], slots):
            assert len(names) <= slots


def test_the_length_filter_is_adls(tmp_path):
    import random

    rng = random.Random(3)
    lengths = [(rng.randint(1, 120), rng.randint(1, 120)) for _ in range(500)]
    text = TextPairs([str(a) for a, _ in lengths], [str(b) for _, b in lengths], "s", "t", 500, 0)
    encode = lambda lines: [[5] * int(x) for x in lines]
    kept = encode_pairs(text, encode, encode, 80, 2.0).stats.kept
    assert kept == sum(keep_pair(a, b, 80, 2.0) for a, b in lengths)
    assert 0 < kept < 500


def test_corpus_folders(tmp_path):
    for split in ("train", "valid", "test"):
        for lang in ("en", "fr"):
            (tmp_path / f"{split}.{lang}").write_text("a\n")
    assert find_files(tmp_path)["valid"] == (tmp_path / "valid.en", tmp_path / "valid.fr")
    (tmp_path / "train.de").write_text("a\n")
    with pytest.raises(SystemExit, match="--langs"):
        find_files(tmp_path)


@pytest.fixture(scope="module")
def spm_model(tmp_path_factory):
    from adl.runtime.config import DataConfig
    from adl.runtime.tokenizer import train_sentencepiece

    d = tmp_path_factory.mktemp("spm")
    words = "the cat sat on a mat and the dog ran to the red house by the sea".split()
    text = [" ".join(words[i:] + words[:i]) for i in range(len(words))]
    model = d / "joint.model"
    model.write_bytes(train_sentencepiece([text], DataConfig(vocab_size=60)))
    return model


def test_fairseq_outputs_are_read_in_order_with_left_out_lines(recipe, data, spm_model):
    import sentencepiece as spm

    data.spm = spm_model
    sp = spm.SentencePieceProcessor(model_file=str(spm_model))
    f = systems.make("fairseq", recipe, data, data.root / "f", "cpu")
    out = data.root / "f" / "generate.beam4"
    out.mkdir(parents=True)
    lines = [
        "S-2\tthe dog",
        f"H-2\t-0.5\t{' '.join(sp.encode('the dog ran', out_type=str))}",
        "D-2\t-0.5\tthe dog ran",
        f"H-0\t-0.1\t{' '.join(sp.encode('a red cat', out_type=str))}",
    ]
    (out / "generate-test.txt").write_text("\n".join(lines) + "\n")
    assert f.hypotheses(4) == ["a red cat", None, "the dog ran"]
    log = [
        'INFO | train_inner | {"epoch": 1, "num_updates": "50", "wpb": "1700"}',
        'INFO | valid | {"epoch": 1, "valid_bleu": "3.1", "valid_num_updates": "200"}',
        'INFO | valid | {"epoch": 1, "valid_bleu": "2.0", "valid_num_updates": "300", '
        '"valid_best_bleu": "3.1"}',
        'INFO | train | {"epoch": 1, "train_wpb": "1500.5", "train_num_updates": "300"}',
        'INFO | train | {"epoch": 2, "train_wpb": "1400", "train_num_updates": "350"}',
    ]
    (data.root / "f" / "train.log").write_text("\n".join(log) + "\n")
    st = f.stats()
    assert st["updates"] == 350 and st["best_update"] == 200
    assert st["tokens"] == round(1500.5 * 300) + 1400 * 50


def test_scores_count_left_out_lines_as_empty():
    from sacrebleu.metrics import BLEU, CHRF

    refs = ["the cat sat on the mat", "a dog ran", "it is red today"]
    hyps = ["the cat sat on mat", None, "it is red"]
    s = table.score(hyps, refs, seconds=2.5)
    text = ["the cat sat on mat", "", "it is red"]
    assert s.bleu == pytest.approx(BLEU().corpus_score(text, [refs]).score)
    assert s.chrf == pytest.approx(CHRF().corpus_score(text, [refs]).score)
    assert s.ratio == pytest.approx(8 / 13)  # 5 + 0 + 3 words against 6 + 3 + 4
    assert s.bp == pytest.approx(math.exp(1 - 13 / 8))
    assert s.left_out == [1] and s.seconds == 2.5
    with pytest.raises(ValueError):
        table.score(["a"], refs)


def test_the_table():
    good = table.Row("ADL", 1, updates=1200, tokens=2_345_678, best_update=1200, train_seconds=900)
    good.scores = {
        1: table.Score(20.5, 45.25, 0.9, 0.95, [], 12.0),
        4: table.Score(21.0, 46.0, 1.0, 1.01, [], 30.0),
    }
    peer = table.Row("fairseq 0.12.3", 1, updates=1100, tokens=2_000_000)
    peer.scores = {4: table.Score(19.0, 44.0, 0.8, 0.82, [4, 9], 25.0)}
    md = table.markdown([good, peer], [1, 4], "Peers on bible", ["a note"])
    lines = md.splitlines()
    assert lines[0] == "### Peers on bible"
    assert "greedy BLEU / chrF" in lines[2] and "beam 4 BP / ratio" in lines[2]
    assert lines[4].startswith("| ADL | 1 | 1,200 | 2,345,678 | 1,200 | 900 s | 20.50 / 45.25")
    assert "| 21.00 / 46.00 | 1.000 / 1.010 | 30 s | none |" in lines[4]
    assert lines[5].endswith("| 19.00 / 44.00 | 0.800 / 0.820 | 25 s | 2 (lines 5, 10) |")
    assert "| – | – | – |" in lines[5]  # no greedy result
    assert lines[-1] == "- a note"


def test_small_cpu_differs_from_demo_only_where_it_says():
    from adl.runtime.config import load_config

    demo, small = load_config("demo").to_dict(), load_config("small_cpu").to_dict()
    changed = {
        f"{section}.{key}"
        for section in demo
        for key in demo[section]
        if demo[section][key] != small[section][key]
    }
    assert changed == {
        "data.max_len",
        "data.valid_max",
        "train.max_steps",
        "train.max_minutes",
        "train.keep_last",
        "train.average_last",
    }
    assert (small["data"]["max_len"], small["data"]["valid_max"]) == (256, 500)
    assert (small["train"]["keep_last"], small["train"]["average_last"]) == (4, 4)
    recipe = recipe_mod.load("small_cpu", root=str(ROOT))
    assert recipe.max_len == 256 and recipe.valid_max == 500


@pytest.mark.filterwarnings("ignore:enable_nested_tensor")  # torch, for norm_first
def test_the_plain_torch_baseline_is_causal_and_ignores_padding():
    import torch

    sys.path.insert(0, str(ROOT / "bench" / "peerlib"))
    from torch_loop import Seq2Seq

    torch.manual_seed(0)
    model = Seq2Seq(50, 32, 4, 1, 64, 0.0).eval()
    src = torch.tensor([[5, 6, 7, 2], [8, 9, 2, 0]])
    tgt = torch.tensor([[1, 5, 6], [1, 7, 9]])
    out = model(src, tgt)  # (B, T, V)
    later = tgt.clone()
    later[:, 2] = 11
    assert torch.allclose(out[:, :2], model(src, later)[:, :2], atol=1e-6)
    assert not torch.allclose(out[:, 2], model(src, later)[:, 2])
    alone = model(src[1:, :3], tgt[1:])  # the second sentence without its padding
    assert torch.allclose(out[1:], alone, atol=1e-5)
