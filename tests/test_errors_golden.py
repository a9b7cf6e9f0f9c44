"""The exact rendered text of the errors a researcher meets most."""

import pytest
from conftest import run_cli

import adl

CASES = {
    "unknown layer": (
        "dec.adl",
        "decoder",
        "pos -> repeat(6, res_nd(mh_dot_src_att) -> res_nd(fft))\n",
        """\
dec.adl:1:51: error: unknown layer 'fft'
  | pos -> repeat(6, res_nd(mh_dot_src_att) -> res_nd(fft))
  |                                                   ^^^
hint: did you mean 'ffl'?""",
    ),
    "misspelled keyword": (
        "enc.adl",
        "encoder",
        "pos -> repeat(6, res_nd(mh_dot_self_att(haeds=4)) -> res_nd(ffl))\n",
        """\
enc.adl:1:41: error: 'mh_dot_self_att' has no argument 'haeds'
  | pos -> repeat(6, res_nd(mh_dot_self_att(haeds=4)) -> res_nd(ffl))
  |                                         ^^^^^
hint: did you mean 'heads'?""",
    ),
    "unclosed parenthesis": (
        "enc.adl",
        "encoder",
        "pos -> repeat(6, res_nd(mh_dot_self_att) -> res_nd(ffl) -> norm\n",
        """\
enc.adl:1:14: error: unclosed '('
  | pos -> repeat(6, res_nd(mh_dot_self_att) -> res_nd(ffl) -> norm
  |              ^
hint: add ')' to close the arguments of 'repeat'""",
    ),
    "trailing arrow": (
        "enc.adl",
        "encoder",
        "pos -> repeat(6, res_nd(mh_dot_self_att) -> res_nd(ffl)) ->\n",
        """\
enc.adl:1:58: error: trailing '->': expected a layer after it
  | pos -> repeat(6, res_nd(mh_dot_self_att) -> res_nd(ffl)) ->
  |                                                          ^^
hint: remove the '->' or add the layer it leads to""",
    ),
    "ill-typed argument": (
        "enc.adl",
        "encoder",
        "pos -> repeat(6, res_nd(cnn(k=2.5)) -> res_nd(ffl))\n",
        """\
enc.adl:1:31: error: argument 'kernel_width' of 'cnn' must be a positive integer, not the number 2.5
  | pos -> repeat(6, res_nd(cnn(k=2.5)) -> res_nd(ffl))
  |                               ^^^""",
    ),
    "size mismatch under res": (
        "enc.adl",
        "encoder",
        "pos -> repeat(6, res_nd(mh_dot_self_att) -> res(ff(2048)))\n",
        """\
enc.adl:1:49: error: 'res' adds the input to the chain's output, but the chain maps size 512 to 2048
  | pos -> repeat(6, res_nd(mh_dot_self_att) -> res(ff(2048)))
  |                                                 ^^^^^^^^
hint: end the chain with 'linear(512)' to project back to 512""",
    ),
    "source attention in an encoder": (
        "enc.adl",
        "encoder",
        "pos -> repeat(6, res_nd(mh_dot_src_att) -> res_nd(ffl)) -> norm\n",
        """\
enc.adl:1:25: error: 'mh_dot_src_att' is not allowed in an encoder: it attends to the encoder's states, and only a decoder has them
  | pos -> repeat(6, res_nd(mh_dot_src_att) -> res_nd(ffl)) -> norm
  |                         ^^^^^^^^^^^^^^
hint: use self-attention ('mh_dot_self_att') here, or move this layer to a decoder""",
    ),
    "birnn in a decoder": (
        "dec.adl",
        "decoder",
        "dropout -> res_d(birnn) -> repeat(5, res_d(rnn)) -> res_d(dot_src_att)\n",
        """\
dec.adl:1:18: error: 'birnn' is not allowed in a decoder: a bidirectional RNN reads later positions, which a causal network must not see
  | dropout -> res_d(birnn) -> repeat(5, res_d(rnn)) -> res_d(dot_src_att)
  |                  ^^^^^
hint: use 'rnn', which reads only earlier positions""",
    ),
    "unknown $var": (
        "dec.adl",
        "decoder",
        "pos -> repeat(6, res(norm -> mh_dot_att) -> res(norm -> ff($FF_NUM_HIDEN) -> linear)) -> norm\n",
        """\
dec.adl:1:60: error: unknown variable '$FF_NUM_HIDEN'
  | pos -> repeat(6, res(norm -> mh_dot_att) -> res(norm -> ff($FF_NUM_HIDEN) -> linear)) -> norm
  |                                                            ^^^^^^^^^^^^^
hint: did you mean '$FF_NUM_HIDDEN'?""",
    ),
    "recursive block": (
        "enc.adl",
        "encoder",
        "t_enc = res_nd(mh_dot_self_att) -> res_nd(ffl) -> t_enc\npos -> repeat(6, t_enc)\n",
        """\
enc.adl:1:51: error: recursive block 't_enc': t_enc -> t_enc
  | t_enc = res_nd(mh_dot_self_att) -> res_nd(ffl) -> t_enc
  |                                                   ^^^^^
hint: a block cannot contain itself; use repeat(n, ...) for copies""",
    ),
    "error inside a block": (
        "enc.adl",
        "encoder",
        "t_enc(x) = res_nd(x) -> res_nd(ffl)\npos -> repeat(6, t_enc(ff(1024))) -> norm\n",
        """\
enc.adl:1:19: error: 'res_nd' adds the input to the chain's output, but the chain maps size 512 to 1024
  | t_enc(x) = res_nd(x) -> res_nd(ffl)
  |                   ^
enc.adl:2:18: note: in block 't_enc', used here
  | pos -> repeat(6, t_enc(ff(1024))) -> norm
  |                  ^^^^^^^^^^^^^^^
hint: end the chain with 'linear(512)' to project back to 512""",
    ),
    "missing arrow": (
        "enc.adl",
        "encoder",
        "pos repeat(6, res_nd(mh_dot_self_att) -> res_nd(ffl))\n",
        """\
enc.adl:1:5: error: missing '->' before 'repeat'
  | pos repeat(6, res_nd(mh_dot_self_att) -> res_nd(ffl))
  |     ^^^^^^
hint: layers of a chain are joined with '->'""",
    ),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_rendered_text(case):
    name, role, text, expected = CASES[case]
    vars = {"FF_NUM_HIDDEN": 1024} if "FF_NUM" in text else {}
    with pytest.raises(adl.ADLError) as info:
        adl.check(text, role=role, name=name, vars=vars)
    assert str(info.value) == expected


def test_all_errors_of_a_file_together():
    text = (
        "pos -> birnn(7) -> repeat(6, res_nd(mh_dot_src_att) -> res_nd(fft))\n"
        "  -> cnn(gluu) -> ff($nope)\n"
    )
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


# --- the limits of the checker (issue 11): each stops with one message --------------------

DOUBLING = (
    "b0 = ffl\n"
    + "".join(f"b{i} = concat(b{i - 1}, b{i - 1}) -> linear\n" for i in range(1, 23))
    + "pos -> b22 -> norm\n"
)
CHAINED = "b0 = ffl\n" + "".join(f"b{i} = b{i - 1}\n" for i in range(1, 331)) + "pos -> b330\n"
LIMIT_CASES = {
    "exponential expansion": (
        DOUBLING,
        """\
enc.adl:24:8: error: the network expands to more than 10,000 layers (every block use and repeat copy counted)
  | pos -> b22 -> norm
  |        ^^^
hint: through the blocks 'b22', 'b21', 'b20', ...: each use of a block copies its layers, so a block that uses another twice doubles it""",
    ),
    "chained blocks": (
        CHAINED,
        """\
enc.adl:332:8: error: blocks are used inside blocks more than 64 levels deep (block 'b266' is level 65)
  | pos -> b330
  |        ^^^^
hint: define the network with fewer levels of blocks""",
    ),
    "integer too large": (
        "pos -> ff(" + "9" * 30 + ")\n",
        """\
enc.adl:1:11: error: integer too large: the largest is 9,223,372,036,854,775,807
  | pos -> ff(999999999999999999999999999999)
  |           ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^
hint: sizes and counts have much smaller limits (docs/language.md, Limits)""",
    ),
    "long sum": (
        "pos -> ff(" + " + ".join(["8"] * 70) + ")\n",
        """\
enc.adl:1:11: error: this expression nests more than 64 operators deep
  | pos -> ff(8 + 8 + 8 + 8 + 8 + 8 + 8 + 8 + 8 + 8 + 8 + 8 + 8 + 8 + 8 + 8 + 8 + 8 + 8 + 8 + 8 + 8 + 8 ...
  |           ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^
hint: each operator of a long sum or product adds a level; compute the value outside and pass it with --var NAME=VALUE""",
    ),
    "argument out of range": (
        "pos -> repeat(6, res_nd(gauss_att(l, r, sigma=1e-300)) -> res_nd(ffl))\n",
        """\
enc.adl:1:47: error: argument 'sigma' of 'gauss_att' must be a number in [0.01, 10000], not the number 1e-300
  | pos -> repeat(6, res_nd(gauss_att(l, r, sigma=1e-300)) -> res_nd(ffl))
  |                                               ^^^^^^""",
    ),
    "size too large": (
        "pos -> ff(99999999999) -> linear\n",
        """\
enc.adl:1:11: error: argument 'num_hidden' of 'ff' must be a size (a positive integer) no larger than 1,048,576, not the integer 99999999999
  | pos -> ff(99999999999) -> linear
  |           ^^^^^^^^^^^""",
    ),
    "window too wide": (
        "pos -> res_nd(cnn(k=64, dilation=128))\n",
        """\
enc.adl:1:34: error: the window reaches (kernel_width - 1) * dilation = 8,064 positions, more than the limit of 4,096
  | pos -> res_nd(cnn(k=64, dilation=128))
  |                                  ^^^""",
    ),
    "too much memory": (
        "pos -> repeat(6, res_nd(mh_dot_self_att) -> res_nd(ffl(1000000)))\n",
        """\
enc.adl:1:8: error: 'repeat' needs about 22.9 GiB for its 6,156,319,104 parameters (float32) and fixed tensors, more than the memory limit of 16.0 GiB
  | pos -> repeat(6, res_nd(mh_dot_self_att) -> res_nd(ffl(1000000)))
  |        ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^
hint: set ADL_MAX_MEMORY (e.g. ADL_MAX_MEMORY=64G) or pass max_memory= to allow more""",
    ),
    "repeat copies": (
        "pos -> repeat(100, repeat(200, res_nd(norm)))\n",
        """\
enc.adl:1:8: error: 'repeat' builds 40,101 layers, more than the limit of 10,000 (every repeat copy counted)
  | pos -> repeat(100, repeat(200, res_nd(norm)))
  |        ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^""",
    ),
    "variable cycle": (
        "$a = $b + 1\n$b = 2 * $a\npos -> ff($a)\n",
        """\
enc.adl:2:10: error: variable '$a' refers to itself: $a -> $b -> $a
  | $b = 2 * $a
  |          ^^
hint: give one of them a value: a number, a name or a chain""",
    ),
}


@pytest.mark.parametrize("case", sorted(LIMIT_CASES))
def test_rendered_limits(case, monkeypatch):
    monkeypatch.delenv("ADL_MAX_MEMORY", raising=False)
    text, expected = LIMIT_CASES[case]
    with pytest.raises(adl.ADLError) as info:
        adl.check(text, role="encoder", name="enc.adl")
    assert str(info.value) == expected
