"""Using a trained run: ``adl.load_model`` (translate, score, attention), ``adl export``
(safetensors + JSON, reloaded without pickle) and CTranslate2 (export, greedy equality)."""

import json

import pytest
import torch
from conftest import copy_of, run_cli
from runtime_helpers import translate_lines

import adl
from adl.runtime.data.tokenizer import BOS, EOS
from adl.runtime.errors import CheckpointError

SENTENCES = ["a b c d", "q r s", "", "f g h i j", "t s a"]


@pytest.fixture(scope="module")
def run(tmp_path_factory, reverse_run_once):
    """The session's reverse-task run, a copy of the module's own (its tests share it)."""
    return copy_of(reverse_run_once, tmp_path_factory.mktemp("use"))


@pytest.fixture(scope="module")
def exported(run):
    tmp, out = run
    code, stdout, err = run_cli("export", str(out), "--out", str(tmp / "export"))
    assert code == 0, err
    return tmp / "export"


def test_load_model_translates_with_beam_and_nbest(run):
    tmp, out = run
    t = adl.load_model(out)
    assert t.translate(SENTENCES, beam=4) == ["d c b a", "s r q", "", "j i h g f", "a s t"]
    assert t.translate("a b c", beam=1) == "c b a"
    best = t.translate(["a b c d", ""], beam=4, nbest=3)
    assert len(best[0]) == 3 and best[0][0][0] == "d c b a"
    scores = [score for _, score in best[0]]
    assert scores == sorted(scores, reverse=True) and all(s <= 0 for s in scores)
    assert best[1] == [("", 0.0)]


def test_score_is_the_teacher_forced_sum_of_log_softmax(run):
    tmp, out = run
    t = adl.load_model(out)
    sources, targets = ["a b c d", "q r s t a", "e"], ["d c b a", "a b c", "e"]
    got = t.score(sources, targets)
    for src, tgt, value in zip(sources, targets, got):  # one sentence at a time, by hand
        x = t.tokenizers.encode_src([src])[0] + [EOS]
        y = t.tokenizers.encode_tgt([tgt])[0]
        with torch.no_grad():
            logits = t.model(torch.tensor([x]), torch.tensor([[BOS, *y]]))[0]
        logp = logits.log_softmax(-1)
        expected = sum(float(logp[i, tok]) for i, tok in enumerate([*y, EOS]))
        assert value == pytest.approx(expected, abs=1e-4)
    assert got[0] > got[1]  # the right reversal is likelier than a wrong one
    # the beam's score of its best hypothesis is the same log-probability
    hyps = t.search(["a b c d"], t_options(beam=3))[0]
    assert t.score(["a b c d"], [hyps[0][0]])[0] == pytest.approx(hyps[0][1].score, abs=1e-3)


def t_options(**kw):
    from adl.runtime.decode.search import SearchOptions

    return SearchOptions(**kw)


def test_attention_gives_each_layer_heads_by_queries_by_keys(run):
    tmp, out = run
    att = adl.load_model(out).attention("a b c", "c b a")
    kinds = [(layer.layer.split()[0], layer.kind) for layer in att.layers]
    assert kinds.count(("encoder", "self")) == 2 and kinds.count(("decoder", "source")) == 2
    assert kinds.count(("decoder", "self")) == 2
    assert att.source[-1] == "</s>" and att.target_in[0] == "<s>"
    for layer in att.layers:
        heads, queries, keys = layer.weights.shape
        assert heads == 4
        rows = att.source if layer.layer.startswith("encoder") else att.target_in
        cols = (
            att.target_in
            if layer.kind == "self" and layer.layer.startswith("decoder")
            else att.source
        )
        assert (queries, keys) == (len(rows), len(cols))
        assert torch.allclose(layer.weights.sum(-1), torch.ones(heads, queries), atol=1e-5)


def test_export_writes_weights_spec_tokenizer_and_card_and_reloads_the_same(run, exported):
    tmp, out = run
    names = sorted(p.name for p in exported.iterdir())
    assert names == ["README.md", "joint.model", "model.json", "model.safetensors"] or names == [
        "README.md",
        "model.json",
        "model.safetensors",
        "src.model",
        "tgt.model",
    ]
    description = json.loads((exported / "model.json").read_text())
    spec = description["spec"]
    assert spec["encoder"] == adl.to_text(adl.parse(spec["encoder"]))  # canonical ADL text
    assert spec["tie_embeddings"] is True and description["parameters"] > 0
    card = (exported / "README.md").read_text()
    metrics = [json.loads(l) for l in (out / "metrics.jsonl").read_text().splitlines()]
    bleu = [m["bleu"] for m in metrics if m.get("split") == "valid" and "bleu" in m][-1]
    assert f"bleu {bleu:.2f}" in card and "mh_dot_src_att" in card
    from_run, from_export = adl.load_model(out), adl.load_model(exported)
    assert from_export.translate(SENTENCES, beam=3) == from_run.translate(SENTENCES, beam=3)
    assert from_export.score(["a b c"], ["c b a"]) == pytest.approx(
        from_run.score(["a b c"], ["c b a"]), abs=1e-6
    )
    code, stdout, err = run_cli(
        "translate", "--model", str(exported), "--input", str(tmp / "data" / "valid.src")
    )
    assert code == 0, err
    assert stdout.splitlines()[:3] == from_run.translate(
        (tmp / "data" / "valid.src").read_text().splitlines()[:3]
    )


def test_a_tampered_export_gets_one_clear_message(exported, tmp_path):
    import shutil

    bad = tmp_path / "bad"
    shutil.copytree(exported, bad)
    description = json.loads((bad / "model.json").read_text())
    description["spec"]["encoder"] = "pos -> repeat(2, res_nd(rnn)) -> norm\n"
    (bad / "model.json").write_text(json.dumps(description))
    with pytest.raises(CheckpointError, match="weights do not fit the model"):
        adl.load_model(bad)
    # a description that the bounded checker refuses before building anything
    levels = "".join(f"b{i} = concat(b{i - 1}, b{i - 1}) -> linear\n" for i in range(1, 23))
    description["spec"]["encoder"] = "b0 = linear\n" + levels + "pos -> b22\n"
    (bad / "model.json").write_text(json.dumps(description))
    with pytest.raises(CheckpointError, match="model description does not build"):
        adl.load_model(bad)
    (bad / "model.json").write_text('{"format": "adl-export/1", "spec": ')
    code, _, err = run_cli("translate", "--model", str(bad))
    assert code == 1 and "model.json: not valid JSON" in err and "Traceback" not in err
    (bad / "model.json").write_text(json.dumps({"spec": description["spec"]}))
    with pytest.raises(CheckpointError, match="not an ADL export"):
        adl.load_model(bad)


def test_the_ctranslate2_export_decodes_like_adl(run, exported):
    pytest.importorskip("ctranslate2")
    tmp, out = run
    code, stdout, err = run_cli("export", str(out), "--out", str(exported), "--ctranslate2")
    assert code == 0, err
    assert (exported / "ctranslate2" / "model.bin").is_file()
    lines = (tmp / "data" / "valid.src").read_text().splitlines()[:20] + ["", "a"]
    expected = adl.load_model(out).translate(lines, beam=1)
    code, stdout, err = run_cli(
        "translate",
        "--model",
        str(exported),
        "--engine",
        "ctranslate2",
        "--beam",
        "1",
        "--input",
        str(tmp / "data" / "valid.src"),
    )
    assert code == 0, err
    got = stdout.splitlines()
    assert got[:20] == expected[:20]
    from adl.runtime.decode.ct2_translator import Ct2Translator

    ct2 = Ct2Translator.load(exported)
    assert ct2.translate(lines, beam=1) == expected
    # the same log-probabilities, token by token: the conversion is exact, not just close
    adl_model = adl.load_model(out)
    pairs = [("a b c d", "d c b a"), ("q r s", "s q r"), ("f g h i j", "j i h")]
    sp_src, sp_tgt = ct2.tokenizers.src, ct2.tokenizers.tgt
    scored = ct2.engine.score_batch(
        [sp_src.encode(s, out_type=str) for s, _ in pairs],
        [sp_tgt.encode(t, out_type=str) for _, t in pairs],
    )
    expected = adl_model.score([s for s, _ in pairs], [t for _, t in pairs])
    assert [sum(r.log_probs) for r in scored] == pytest.approx(expected, abs=1e-3)
    # one CTranslate2 call for sentences of different limits, and the ones cut at their own
    # limit (len_a 0.5: 2 to 3 tokens of a 4- to 6-token reversal) still match ADL's
    mixed = ["a b c d", "q r s", "f g h i j", "t s a", "a", "j i h g f e"]
    short = adl.load_model(out).translate(mixed, beam=1, len_a=0.5, len_b=0)
    assert ct2.translate(mixed, beam=1, len_a=0.5, len_b=0) == short
    assert max(len(t.split()) for t in short) < 4  # the limits did cut


def test_ctranslate2_refuses_other_layers_naming_them_and_where(run, tmp_path):
    pytest.importorskip("ctranslate2")
    tmp, out = run
    from adl.runtime.model import checkpoint as ckpt

    state = ckpt.load(out / "checkpoints" / "last.pt")
    spec = dict(state["spec"])
    spec["encoder"] = "pos -> res_nd(mh_dot_self_att) -> res_nd(cnn) -> norm\n"
    torch.manual_seed(0)
    model = adl.build_from_spec(spec)
    state["spec"], state["model"] = model.spec.to_dict(), model.state_dict()
    path = tmp_path / "cnn.pt"
    torch.save(state, path)
    code, _, err = run_cli("export", str(path), "--out", str(tmp_path / "x"), "--ctranslate2")
    assert code == 1 and "Traceback" not in err
    assert "layer 'cnn' (encoder layer 3.1)" in err and ":1:" in err
    assert not (tmp_path / "x").exists()  # refused before anything was written


def test_the_cli_the_python_door_and_validation_translate_byte_for_byte_alike(run, tmp_path):
    """One door to translation: the same checkpoint and options give the same bytes through
    ``adl translate``, ``adl.load_model(...).translate`` and validation during training."""
    from adl.runtime.data.corpus import TextPairs
    from adl.runtime.data.parallel import encode_pairs
    from adl.runtime.training.validate import validate

    tmp, out = run
    sources = ["a b c d", "q r s", "f g h i j", "t s a", "e", "b b c d e f"]
    t = adl.load_model(out)
    python = t.translate(sources, beam=1, max_tokens=64)
    code, cli, err = translate_lines(out, sources, tmp_path, "--beam", "1", "--max-tokens", "64")
    assert code == 0, err
    tok = t.tokenizers
    data = encode_pairs(
        TextPairs(sources, sources, "v", "v", len(sources), 0),
        tok.encode_src,
        tok.encode_tgt,
        keep_text=True,
    )
    seen: list[list[str]] = []
    validate(t.model, data, tok, torch.device("cpu"), max_tokens=64, smoothing=0.0,
             translations=seen.append)  # fmt: skip
    assert cli.encode() == "".join(line + "\n" for line in python).encode()
    assert [line.encode() for line in seen[0]] == [line.encode() for line in python]
