"""bench/peers.py without training: the recipe each peer is given (sizes, batch, the matched
peak learning rate), each peer's own practice (checkpoint averaging, cheap validation, full
batches), the length limits all systems share, the data, the parsers of the peers' outputs."""

import json
import math
import sys

import pytest
from conftest import ROOT

sys.path.insert(0, str(ROOT / "bench"))

import peers  # noqa: E402
from peerlib import recipe as recipe_mod  # noqa: E402
from peerlib import systems  # noqa: E402
from peerlib.base import Data  # noqa: E402
from peerlib.prepare import find_files, keep_pair, prepare  # noqa: E402

from adl.runtime.config import ScheduleConfig  # noqa: E402
from adl.runtime.data.parallel import TextPairs, encode_pairs  # noqa: E402
from adl.runtime.training.schedule import Schedule  # noqa: E402


@pytest.fixture(scope="module")
def recipe():
    return recipe_mod.load("small_cpu", ["train.threads=1"], root=str(ROOT))


@pytest.fixture
def data(tmp_path):
    split = lambda s: (tmp_path / f"{s}.src", tmp_path / f"{s}.tgt")
    splits = ("train", "valid", "test", "sample")
    counts = {"train": 10, "valid": 5, "test": 3, "sample": 4}
    return Data(
        tmp_path,
        tmp_path / "joint.model",
        {s: split(s) for s in splits},
        {s: split(s) for s in splits},
        counts,
        longest_source=300,
    )


def value(argv, flag):
    return argv[argv.index(flag) + 1]


def make(name, recipe, data, device="cpu"):
    return systems.make(name, recipe, data, data.root / name, device)


def test_the_recipe_is_the_small_cpu_presets(recipe):
    assert (recipe.d_model, recipe.layers, recipe.ffn, recipe.heads) == (256, 2, 1024, 4)
    assert (recipe.vocab, recipe.max_tokens, recipe.dropout) == (2000, 1000, 0.0)
    assert (recipe.lr, recipe.warmup, recipe.betas) == (2e-3, 300, (0.9, 0.98))
    assert (recipe.label_smoothing, recipe.clip_norm, recipe.max_len) == (0.1, 1.0, 256)
    assert (recipe.valid_every, recipe.best_metric, recipe.average_last) == (200, "bleu", 4)
    assert (recipe.valid_max, recipe.valid_sample) == (500, 300)
    assert (recipe.len_a, recipe.len_b) == (1.5, 10)


def test_a_recipe_the_peers_cannot_follow_is_refused():
    with pytest.raises(ValueError, match="inverse_sqrt"):
        recipe_mod.load("small_cpu", ["schedule.kind=plateau"], root=str(ROOT))
    with pytest.raises(ValueError, match="best_metric=ppl"):
        recipe_mod.load("small_cpu", ["train.best_metric=ppl"], root=str(ROOT))


def test_a_recipe_search_changes_only_what_every_system_takes(recipe):
    r = recipe_mod.with_settings(recipe, {"dropout": 0.3, "lr": 1e-3, "warmup": 400.0})
    assert (r.dropout, r.lr, r.warmup, r.d_model) == (0.3, 1e-3, 400, 256)
    assert isinstance(r.warmup, int)
    with pytest.raises(ValueError, match="cannot tune d_model"):
        recipe_mod.with_settings(recipe, {"d_model": 512})


def sockeye_rate(base, warmup, t):
    """Sockeye 3.1.34's LearningRateSchedulerInvSqrtDecay, from its documentation:
    base * min(1, t / warmup) / sqrt(max(t, warmup))."""
    return base * min(1.0, t / warmup) / math.sqrt(max(t, warmup))


def test_sockeye_gets_the_same_peak_and_curve(recipe, data):
    argv = make("sockeye", recipe, data).train(15).argv
    base = float(value(argv, "--initial-learning-rate"))
    warmup = int(value(argv, "--learning-rate-warmup"))
    assert base == pytest.approx(2e-3 * math.sqrt(300))
    ours = Schedule(ScheduleConfig(kind="inverse_sqrt", warmup=300), 2e-3)
    for t in (1, 150, 300, 301, 1000, 5000):
        assert sockeye_rate(base, warmup, t) == pytest.approx(ours.lr(t), rel=1e-9)
    assert max(sockeye_rate(base, warmup, t) for t in range(1, 2000)) == pytest.approx(2e-3)


def test_sockeye_command_line(recipe, data):
    argv = make("sockeye", recipe, data).train(15).argv
    assert value(argv, "--num-layers") == "2:2"
    assert value(argv, "--transformer-model-size") == "256"
    assert value(argv, "--num-embed") == "256"
    assert value(argv, "--transformer-attention-heads") == "4"
    assert value(argv, "--transformer-feed-forward-num-hidden") == "1024"
    assert value(argv, "--label-smoothing") == "0.1"
    assert value(argv, "--optimizer-betas") == "0.9:0.98"
    assert value(argv, "--learning-rate-scheduler-type") == "inv-sqrt-decay"
    assert value(argv, "--gradient-clipping-type") == "norm"
    assert value(argv, "--checkpoint-interval") == "200"
    assert value(argv, "--peer-minutes") == "15"
    for flag in ("--transformer-dropout-attention", "--transformer-dropout-act"):
        assert value(argv, flag) == "0"
    assert "--use-cpu" in argv and "--shared-vocab" in argv
    beam = make("sockeye", recipe, data, "cuda").translate("params.00003", 4, "test", data.root)
    assert value(beam.argv, "--beam-size") == "4" and "--use-cpu" not in beam.argv


def test_sockeye_validates_cheaply_and_keeps_its_checkpoints(recipe, data):
    argv = make("sockeye", recipe, data).train(15).argv
    # perplexity, its default, and no checkpoint decoder (default: 500 sentences, beam 5)
    assert value(argv, "--optimized-metric") == "perplexity"
    assert value(argv, "--decode-and-evaluate") == "0"
    assert value(argv, "--keep-last-params") == "-1"  # all kept, for averaging


def test_sockeye_batches_are_not_rounded_to_multiples_of_8(recipe, data):
    argv = make("sockeye", recipe, data).train(15).argv
    assert value(argv, "--batch-type") == "word" and value(argv, "--batch-size") == "1000"
    assert value(argv, "--batch-sentences-multiple-of") == "1"


def test_fairseq_command_lines(recipe, data):
    f = make("fairseq", recipe, data)
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
    assert value(argv, "--adam-betas") == "(0.9, 0.98)"
    assert value(argv, "--label-smoothing") == "0.1" and value(argv, "--clip-norm") == "1"
    assert value(argv, "--dropout") == "0" and "--share-all-embeddings" in argv
    assert float(value(argv, "--stop-time-hours")) == pytest.approx(0.25)
    assert "--cpu" in argv
    gen = f.translate("checkpoint_1_200.pt", 4, "test", data.root / "out")
    assert value(gen.argv, "--beam") == "4" and value(gen.argv, "--gen-subset") == "test"
    assert value(gen.argv, "--required-batch-size-multiple") == "1"  # else a line is lost
    assert gen.env == {"TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD": "1"}
    sample = f.translate("checkpoint_1_200.pt", 1, "sample", data.root / "out")
    assert value(sample.argv, "--gen-subset") == "valid1"
    prep = f.prepare()[0].argv
    assert "--joined-dictionary" in prep and value(prep, "--validpref").endswith("/sample")


def test_fairseq_fills_its_batches_and_loads_data_beside_training(recipe, data):
    argv = make("fairseq", recipe, data).train(15).argv
    assert value(argv, "--max-tokens") == "1000"
    assert value(argv, "--required-batch-size-multiple") == "1"
    assert value(argv, "--num-workers") == "1"


def test_fairseq_validates_its_loss_and_keeps_its_checkpoints(recipe, data):
    argv = make("fairseq", recipe, data).train(15).argv
    assert "--eval-bleu" not in argv and "--best-checkpoint-metric" not in argv
    assert value(argv, "--validate-interval-updates") == "200"
    assert "--ignore-unused-valid-subsets" in argv  # the sample is not validated on
    assert value(argv, "--save-interval-updates") == "200"
    assert value(argv, "--keep-interval-updates") == "-1"


def test_both_peers_average_checkpoints(recipe, data):
    s = make("sockeye", recipe, data).average(["params.00003", "params.00004"], "average-2.pt")
    assert s.argv[1:3] == ["-m", "sockeye.average"]
    assert s.argv[3:5] == [str(data.root / "sockeye" / "model" / f"params.0000{i}") for i in (3, 4)]
    assert value(s.argv, "--output") == str(data.root / "sockeye" / "model" / "average-2.pt")
    names = ["checkpoint_1_200.pt", "checkpoint_1_400.pt", "checkpoint_2_431.pt"]
    f = make("fairseq", recipe, data).average(names, "average-3.pt")
    assert f.argv[1].endswith("launch/fairseq_average.py")
    folder = data.root / "fairseq" / "checkpoints"
    assert f.argv[f.argv.index("--inputs") + 1 : f.argv.index("--output")] == [
        str(folder / n) for n in names
    ]
    t = make("torch", recipe, data).average(["step-10.pt", "step-20.pt"], "average-2.pt")
    assert value(t.argv, "--output").endswith("checkpoints/average-2.pt")
    # a Sockeye average (or checkpoint) is translated by loading its file into the model
    tr = make("sockeye", recipe, data).translate("average-2.pt", 4, "test", data.root / "o")
    assert value(tr.argv, "--peer-params") == str(data.root / "sockeye" / "model" / "average-2.pt")


def test_every_system_has_the_same_length_limits(recipe, data):
    out = data.root / "out"
    adl = make("adl", recipe, data).translate("best", 4, "test", out).argv
    assert (value(adl, "--len-a"), value(adl, "--len-b")) == ("1.5", "10")
    sockeye = make("sockeye", recipe, data).translate("params.00001", 4, "test", out).argv
    assert (value(sockeye, "--peer-len-a"), value(sockeye, "--peer-len-b")) == ("1.5", "10")
    torch_ = make("torch", recipe, data).translate("step-10.pt", 4, "test", out).argv
    assert (value(torch_, "--len-a"), value(torch_, "--len-b")) == ("1.5", "10")
    # fairseq limits a batch by its longest source with eos: int(1.5 (L + 1) + 9) >= ADL's
    fairseq = make("fairseq", recipe, data).translate("c.pt", 4, "test", out).argv
    assert (value(fairseq, "--max-len-a"), value(fairseq, "--max-len-b")) == ("1.5", "9")
    for length in range(1, 300):
        ours = int(1.5 * length + 10)
        assert ours <= int(1.5 * (length + 1) + 9) <= ours + 1
    # no input is cut: the peers' models take the longest validation or test source (300
    # pieces here, over max_len 256) and its longest output
    assert data.positions(recipe) == (300, 461)
    sockeye = make("sockeye", recipe, data)
    assert value(sockeye.train(15).argv, "--max-seq-len") == "256:256"  # what it trains on
    argv = sockeye.translate("params.00001", 4, "test", out).argv
    assert value(argv, "--peer-max-seq-len") == "301:462"  # and translates for, with eos
    train = make("fairseq", recipe, data).train(15).argv
    assert value(train, "--max-source-positions") == "301"
    assert value(train, "--max-target-positions") == "462"
    assert value(fairseq, "--max-source-positions") == "301"  # generate: the same numbers
    assert value(fairseq, "--max-target-positions") == "462"
    # a reference longer than any output allowed: fairseq-generate reads it with its input
    # and would stop at it, so its positions cover the reference too (the others' do not)
    data.longest_target = 600
    f = make("fairseq", recipe, data)
    for argv in (f.train(15).argv, f.translate("c.pt", 1, "test", out).argv):
        assert value(argv, "--max-target-positions") == "601"


def test_adl_and_torch_command_lines(recipe, data):
    r = recipe_mod.with_settings(recipe, {"dropout": 0.3, "lr": 1e-3})
    step = systems.make("adl", r, data, data.root / "a", "cpu").train(15)
    argv = step.argv
    assert argv[1].endswith("launch/adl_train.py")
    sets = [argv[i + 1] for i, a in enumerate(argv) if a == "--set"]
    assert value(argv, "--preset") == "small_cpu"
    assert f"data.spm_model={data.spm}" in sets and "train.max_minutes=15" in sets
    assert "train.threads=1" in sets and "train.seed=1" in sets
    assert "model.dropout=0.3" in sets and "optim.lr=0.001" in sets
    # on the clock ADL validates as the peers do: its loss, no translation; every checkpoint
    # kept for the choice after the clock (selection.py)
    assert {"train.bleu=false", "train.best_metric=loss", "train.average_last=0"} <= set(sets)
    assert "train.keep_last=0" in sets
    adl = systems.make("adl", r, data, data.root / "a", "cpu")
    avg = adl.average(["step-0000200.pt", "step-0000400.pt"], "average-2.pt").argv
    assert avg[1:5] == ["-m", "adl", "average", str(data.root / "a" / "run")]
    assert value(avg, "--steps") == "200,400"
    assert value(avg, "--out") == str(data.root / "a" / "run" / "checkpoints" / "average-2.pt")
    tr = adl.translate("average-2.pt", 4, "test", data.root / "o").argv
    assert value(tr, "--checkpoint") == "average-2.pt"  # a file of RUN/checkpoints
    argv = make("torch", recipe, data).train(15).argv
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


def test_a_benchmark_folder_continues_only_with_its_settings(tmp_path):
    peers.check_settings(tmp_path, {"minutes": 15, "peers": ["sockeye"]})
    peers.check_settings(tmp_path, {"minutes": 15, "peers": ["sockeye"]})  # the same: fine
    with pytest.raises(SystemExit, match="minutes"):
        peers.check_settings(tmp_path, {"minutes": 5, "peers": ["sockeye"]})


def test_a_benchmark_records_its_corpus_as_the_repository_names_it(tmp_path):
    inside = peers.ROOT / "data" / "corpora" / "x-en-fr"
    assert peers.shown(inside) == "data/corpora/x-en-fr"
    assert peers.shown(tmp_path) == str(tmp_path)  # outside the repository: as given
    # a folder whose settings hold the absolute path (as recorded before) continues
    (tmp_path / peers.SETTINGS).write_text(json.dumps({"corpus": str(inside)}), encoding="utf-8")
    peers.check_settings(tmp_path, {"corpus": "data/corpora/x-en-fr"})
    with pytest.raises(SystemExit, match="corpus"):
        peers.check_settings(tmp_path, {"corpus": "data/corpora/y-en-fr"})


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


WORDS = "the cat sat on a mat and the dog ran to the red house by the sea".split()


@pytest.fixture(scope="module")
def spm_model(tmp_path_factory):
    from adl.runtime.config import DataConfig
    from adl.runtime.data.tokenizer import train_sentencepiece

    d = tmp_path_factory.mktemp("spm")
    text = [" ".join(WORDS[i:] + WORDS[:i]) for i in range(len(WORDS))]
    model = d / "joint.model"
    model.write_bytes(train_sentencepiece([text], DataConfig(vocab_size=60)))
    return model


def test_the_validation_sample_is_adls(tmp_path, recipe, spm_model):
    """Of the first valid_max pairs, those within max_len pieces, ADL's fixed sample."""
    import dataclasses

    from adl.runtime.training.validate import bleu_sample

    corpus = tmp_path / "corpus"
    corpus.mkdir()
    line = lambda i: " ".join(WORDS[: 1 + i % 8])
    long = " ".join(WORDS * 3)  # over max_len 20 below
    valid = [long if i % 5 == 0 else line(i) for i in range(40)]
    for split, lines in (
        ("train", [line(i) for i in range(30)]),
        ("valid", valid),
        ("test", [line(i) for i in range(7)]),
    ):
        (corpus / f"{split}.src").write_text("".join(x + "\n" for x in lines))
        (corpus / f"{split}.tgt").write_text("".join(x.upper() + "\n" for x in lines))
    r = dataclasses.replace(recipe, max_len=20, valid_max=30, valid_sample=10)
    out = tmp_path / "out"
    (out / "spm").mkdir(parents=True)
    (out / "spm" / "joint.model").write_bytes(spm_model.read_bytes())
    from adl.runtime.config import DataConfig

    data = prepare(find_files(corpus), out, r, DataConfig())
    within = [v for v in valid[:30] if v != long]  # 24 of the first 30
    expected = [within[i] for i in bleu_sample(len(within), 10)]
    assert data.raw["sample"][0].read_text().splitlines() == expected
    assert data.raw["sample"][1].read_text().splitlines() == [x.upper() for x in expected]
    assert data.counts["sample"] == 10 and data.counts["valid"] == 30
    assert data.longest_source == max(
        len(x.split()) for x in data.pieces["valid"][0].read_text().splitlines()
    )
    assert data.longest_target == max(
        len(x.split()) for x in data.pieces["valid"][1].read_text().splitlines()
    )
    assert data.pieces["sample"][0].is_file()


def test_fairseq_outputs_are_read_in_order_with_left_out_lines(recipe, data, spm_model):
    import sentencepiece as spm

    data.spm = spm_model
    sp = spm.SentencePieceProcessor(model_file=str(spm_model))
    f = make("fairseq", recipe, data)
    out = data.root / "test.beam4.out"
    folder = f.results(out)
    folder.mkdir(parents=True)
    lines = [
        "S-2\tthe dog",
        f"H-2\t-0.5\t{' '.join(sp.encode('the dog ran', out_type=str))}",
        "D-2\t-0.5\tthe dog ran",
        f"H-0\t-0.1\t{' '.join(sp.encode('a red cat', out_type=str))}",
    ]
    (folder / "generate-test.txt").write_text("\n".join(lines) + "\n")
    assert f.hypotheses(out, "test") == ["a red cat", None, "the dog ran"]


def test_sockeye_outputs_are_detokenised(recipe, data, spm_model):
    import sentencepiece as spm

    data.spm = spm_model
    sp = spm.SentencePieceProcessor(model_file=str(spm_model))
    out = data.root / "valid.hyp"
    out.write_text(" ".join(sp.encode("the red house", out_type=str)) + "\n\n")
    assert make("sockeye", recipe, data).hypotheses(out, "sample") == ["the red house", ""]


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
        "train.max_tokens",
        "train.max_steps",
        "train.max_minutes",
        "train.keep_last",
        "train.average_last",
    }
    assert (small["data"]["max_len"], small["data"]["valid_max"]) == (256, 500)
    assert (small["train"]["keep_last"], small["train"]["average_last"]) == (4, 4)
    assert (demo["train"]["max_tokens"], small["train"]["max_tokens"]) == (2000, 1000)


@pytest.mark.filterwarnings("ignore:enable_nested_tensor")  # torch, for norm_first
def test_the_plain_torch_baseline_is_causal_and_ignores_padding():
    import torch

    sys.path.insert(0, str(ROOT / "bench" / "peerlib" / "launch"))
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
