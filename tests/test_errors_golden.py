"""The exact rendered text of the errors a researcher meets most."""
import pytest

import adl
from conftest import run_cli

CASES = {
    "unknown layer": ("dec.adl", "decoder",
        "pos -> repeat(6, res_nd(mh_dot_src_att) -> res_nd(fft))\n",
        """\
dec.adl:1:51: error: unknown layer 'fft'
  | pos -> repeat(6, res_nd(mh_dot_src_att) -> res_nd(fft))
  |                                                   ^^^
hint: did you mean 'ffl'?"""),
    "misspelled keyword": ("enc.adl", "encoder",
        "pos -> repeat(6, res_nd(mh_dot_self_att(haeds=4)) -> res_nd(ffl))\n",
        """\
enc.adl:1:41: error: 'mh_dot_self_att' has no argument 'haeds'
  | pos -> repeat(6, res_nd(mh_dot_self_att(haeds=4)) -> res_nd(ffl))
  |                                         ^^^^^
hint: did you mean 'heads'?"""),
    "unclosed parenthesis": ("enc.adl", "encoder",
        "pos -> repeat(6, res_nd(mh_dot_self_att) -> res_nd(ffl) -> norm\n",
        """\
enc.adl:1:14: error: unclosed '('
  | pos -> repeat(6, res_nd(mh_dot_self_att) -> res_nd(ffl) -> norm
  |              ^
hint: add ')' to close the arguments of 'repeat'"""),
    "trailing arrow": ("enc.adl", "encoder",
        "pos -> repeat(6, res_nd(mh_dot_self_att) -> res_nd(ffl)) ->\n",
        """\
enc.adl:1:58: error: trailing '->': expected a layer after it
  | pos -> repeat(6, res_nd(mh_dot_self_att) -> res_nd(ffl)) ->
  |                                                          ^^
hint: remove the '->' or add the layer it leads to"""),
    "ill-typed argument": ("enc.adl", "encoder",
        "pos -> repeat(6, res_nd(cnn(k=2.5)) -> res_nd(ffl))\n",
        """\
enc.adl:1:31: error: argument 'kernel_width' of 'cnn' must be a positive integer, not the number 2.5
  | pos -> repeat(6, res_nd(cnn(k=2.5)) -> res_nd(ffl))
  |                               ^^^"""),
    "size mismatch under res": ("enc.adl", "encoder",
        "pos -> repeat(6, res_nd(mh_dot_self_att) -> res(ff(2048)))\n",
        """\
enc.adl:1:49: error: 'res' adds the input to the chain's output, but the chain maps size 512 to 2048
  | pos -> repeat(6, res_nd(mh_dot_self_att) -> res(ff(2048)))
  |                                                 ^^^^^^^^
hint: end the chain with 'linear(512)' to project back to 512"""),
    "source attention in an encoder": ("enc.adl", "encoder",
        "pos -> repeat(6, res_nd(mh_dot_src_att) -> res_nd(ffl)) -> norm\n",
        """\
enc.adl:1:25: error: 'mh_dot_src_att' is not allowed in an encoder: it attends to the encoder's states, and only a decoder has them
  | pos -> repeat(6, res_nd(mh_dot_src_att) -> res_nd(ffl)) -> norm
  |                         ^^^^^^^^^^^^^^
hint: use self-attention ('mh_dot_self_att') here, or move this layer to a decoder"""),
    "birnn in a decoder": ("dec.adl", "decoder",
        "dropout -> res_d(birnn) -> repeat(5, res_d(rnn)) -> res_d(dot_src_att)\n",
        """\
dec.adl:1:18: error: 'birnn' is not allowed in a decoder: a bidirectional RNN reads later positions, which a causal network must not see
  | dropout -> res_d(birnn) -> repeat(5, res_d(rnn)) -> res_d(dot_src_att)
  |                  ^^^^^
hint: use 'rnn', which reads only earlier positions"""),
    "unknown $var": ("dec.adl", "decoder",
        "pos -> repeat(6, res(norm -> mh_dot_att) -> res(norm -> ff($FF_NUM_HIDEN) -> linear)) -> norm\n",
        """\
dec.adl:1:60: error: unknown variable '$FF_NUM_HIDEN'
  | pos -> repeat(6, res(norm -> mh_dot_att) -> res(norm -> ff($FF_NUM_HIDEN) -> linear)) -> norm
  |                                                            ^^^^^^^^^^^^^
hint: did you mean '$FF_NUM_HIDDEN'?"""),
    "recursive block": ("enc.adl", "encoder",
        "t_enc = res_nd(mh_dot_self_att) -> res_nd(ffl) -> t_enc\npos -> repeat(6, t_enc)\n",
        """\
enc.adl:1:51: error: recursive block 't_enc': t_enc -> t_enc
  | t_enc = res_nd(mh_dot_self_att) -> res_nd(ffl) -> t_enc
  |                                                   ^^^^^
hint: a block cannot contain itself; use repeat(n, ...) for copies"""),
    "error inside a block": ("enc.adl", "encoder",
        "t_enc(x) = res_nd(x) -> res_nd(ffl)\npos -> repeat(6, t_enc(ff(1024))) -> norm\n",
        """\
enc.adl:1:19: error: 'res_nd' adds the input to the chain's output, but the chain maps size 512 to 1024
  | t_enc(x) = res_nd(x) -> res_nd(ffl)
  |                   ^
enc.adl:2:18: note: in block 't_enc', used here
  | pos -> repeat(6, t_enc(ff(1024))) -> norm
  |                  ^^^^^^^^^^^^^^^
hint: end the chain with 'linear(512)' to project back to 512"""),
    "missing arrow": ("enc.adl", "encoder",
        "pos repeat(6, res_nd(mh_dot_self_att) -> res_nd(ffl))\n",
        """\
enc.adl:1:5: error: missing '->' before 'repeat'
  | pos repeat(6, res_nd(mh_dot_self_att) -> res_nd(ffl))
  |     ^^^^^^
hint: layers of a chain are joined with '->'"""),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_rendered_text(case):
    name, role, text, expected = CASES[case]
    vars = {"FF_NUM_HIDDEN": 1024} if "FF_NUM" in text else {}
    with pytest.raises(adl.ADLError) as info:
        adl.check(text, role=role, name=name, vars=vars)
    assert str(info.value) == expected


def test_all_errors_of_a_file_together():
    text = ("pos -> birnn(7) -> repeat(6, res_nd(mh_dot_src_att) -> res_nd(fft))\n"
            "  -> cnn(gluu) -> ff($nope)\n")
    with pytest.raises(adl.ADLError) as info:
        adl.check(text, role="encoder", name="enc.adl")
    messages = [d.message for d in info.value.errors]
    assert messages == [
        "a bidirectional RNN splits its size between two directions; 7 is odd",
        "'mh_dot_src_att' is not allowed in an encoder: it attends to the encoder's states, "
        "and only a decoder has them",
        "unknown layer 'fft'",
        "argument 'act_type' of 'cnn' must be one of 'relu' or 'glu', not 'gluu'",
        "unknown variable '$nope'",
    ]


def test_no_size_errors_that_follow_from_an_earlier_error():
    # 'fff' is unknown, so nothing can be said about the sizes after it: no second error.
    with pytest.raises(adl.ADLError) as info:
        adl.check("pos -> fff(1024) -> res(ff(1024) -> linear) -> res(ffl)", role="encoder")
    assert [d.message for d in info.value.errors] == ["unknown layer 'fff'"]


def test_cli_prints_the_same_text(tmp_path):
    f = tmp_path / "dec.adl"
    name, role, text, expected = CASES["unknown layer"]
    f.write_text(text)
    code, out, err = run_cli("compile", "--check", "--role", role, str(f))
    assert code == 1
    assert expected.replace("dec.adl", str(f)) in err
    assert "Traceback" not in err
