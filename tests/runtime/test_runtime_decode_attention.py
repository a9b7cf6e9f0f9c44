"""``adl translate`` / ``adl eval`` ``--decode-attention``: a run's model decoded with hard
retrieval or standard attention (runtime.load_for_inference(decode_attention=...))."""

import pytest
from conftest import run_cli
from runtime_helpers import reverse_task, train_cli, translate_lines

from adl import runtime
from adl.nn.attention import DotAttention
from adl.runtime.decode.search import SearchOptions
from adl.runtime.decode.translator import Translator


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """A soft-attention reverse-task run of 80 steps."""
    tmp = tmp_path_factory.mktemp("decode_attention")
    paths = reverse_task(tmp / "data", train=400, valid=20)
    train_cli(tmp, paths, "max_steps=80", "valid_every=80")
    return tmp, tmp / "run"


def test_loading_sets_the_decoder_attention(run):
    _, out = run
    for mode, expected in (("hard", {True}), ("soft", {False}), (None, {None})):
        model, _ = runtime.load_for_inference(out, decode_attention=mode)
        decoder = {m.decode_hard for m in model.decoder.modules() if isinstance(m, DotAttention)}
        encoder = {m.decode_hard for m in model.encoder.modules() if isinstance(m, DotAttention)}
        assert decoder == expected and encoder == {None}


def test_translate_with_hard_retrieval(run, tmp_path):
    tmp, out = run
    lines = ["a b c d", "q r s", "f g h i j"]
    code, stdout, err = translate_lines(
        out, lines, tmp_path, "--beam", "2", "--decode-attention", "hard"
    )
    assert code == 0, err
    model, tokenizers = runtime.load_for_inference(out, decode_attention="hard")
    expected = Translator(model, tokenizers).search(lines, SearchOptions(beam=2))
    assert stdout.splitlines() == [hyps[0][0] for hyps in expected]


def test_eval_takes_the_switch_and_refuses_other_modes(run, tmp_path):
    tmp, out = run
    (tmp_path / "src").write_text("a b c\n")
    (tmp_path / "ref").write_text("c b a\n")
    code, stdout, err = run_cli(
        "eval", "--model", str(out), "--src", str(tmp_path / "src"), "--ref",
        str(tmp_path / "ref"), "--decode-attention", "soft",
    )  # fmt: skip
    assert code == 0 and "BLEU" in stdout, err
    code, _, err = run_cli("translate", "--model", str(out), "--decode-attention", "argmax")
    assert code == 2 and "invalid choice: 'argmax'" in err
