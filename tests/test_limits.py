"""The checker's cost is bounded: every limit of adl/limits.py stops checking with one clear
message, after work proportional to the limit (never to what a text would expand to)."""

import inspect
import sys

import pytest

import adl
from adl import limits
from adl.analysis.checker import Checker, Stop
from adl.models import build_network
from adl.source import Source


def messages(text, role="encoder", **kw):
    with pytest.raises(adl.ADLError) as info:
        adl.check(text, role=role, **kw)
    return [d.message for d in info.value.errors]


def doubling(levels: int) -> str:
    """``b_i = concat(b_{i-1}, b_{i-1}) -> linear``: 600 bytes that expand to 2^levels layers."""
    lines = ["b0 = linear"]
    lines += [f"b{i} = concat(b{i - 1}, b{i - 1}) -> linear" for i in range(1, levels + 1)]
    return "\n".join(lines) + f"\npos -> b{levels}\n"


def test_the_22_level_doubling_stops_after_the_layer_limit():
    text = doubling(22)  # 8,388,607 layers if expanded
    assert len(text) < 1000
    tree = adl.parse(text)
    checker = Checker(tree, Source(text), adl.check_hyper(d_model=64))
    with pytest.raises(Stop):
        checker.network(tree.network, "encoder")
    # the work done: one layer past the limit, and the calls and values that led there
    assert checker._count == limits.MAX_LAYERS + 1
    assert checker.budget.used < 3 * limits.MAX_LAYERS
    [error] = [d for d in checker.diagnostics if d.is_error]
    assert error.message == (
        "the network expands to more than 10,000 layers (every block use and repeat copy counted)"
    )
    assert text[error.span.start : error.span.end] == "b22"  # the use in the network chain
    assert error.hint.startswith("through the blocks 'b22', 'b21', 'b20', ...: each use")


def test_the_layer_limit_counts_what_is_checked_not_the_levels():
    # 13 levels (16,383 layers) and 22 levels stop after the same number of layers
    for levels in (13, 22):
        tree = adl.parse(doubling(levels))
        checker = Checker(tree, Source(doubling(levels)), adl.check_hyper(d_model=64))
        with pytest.raises(Stop):
            checker.network(tree.network, "encoder")
        assert checker._count == limits.MAX_LAYERS + 1
    # b_i has 3 * 2^i - 2 layers: 6,142 at 11 levels, 12,286 at 12
    assert adl.check(doubling(11), role="encoder", d_model=64).network.layers == 6142 + 1


def test_repeat_copies_count_as_layers():
    assert messages("repeat(200, repeat(200, ffl))", d_model=16) == [
        "'repeat' builds 40,201 layers, more than the limit of 10,000 (every repeat copy counted)"
    ]
    assert messages("repeat(100000000, id)") == [
        "argument 'count' of 'repeat' must be a positive integer no larger than 10,000, "
        "not the integer 100000000"
    ]
    assert adl.check("repeat(99, repeat(99, id))", role="encoder").network.layers == 1 + 99 * 100


def test_chained_blocks_stop_at_the_block_nesting_limit():
    text = "b0 = ffl\n" + "".join(f"b{i} = b{i - 1}\n" for i in range(1, 331)) + "pos -> b330"
    assert messages(text) == [
        "blocks are used inside blocks more than 64 levels deep (block 'b266' is level 65)"
    ]
    ok = "b0 = ffl\n" + "".join(f"b{i} = b{i - 1}\n" for i in range(1, 64)) + "pos -> b63"
    assert [n.name for n in adl.check(ok, role="encoder").network.chain.nodes] == ["pos", "ffl"]


def test_layers_nest_at_most_32_deep_blocks_included():
    text = "b0 = ffl\n" + "".join(f"b{i} = res(b{i - 1})\n" for i in range(1, 40)) + "b39"
    assert messages(text) == ["layers nest more than 32 levels deep here ('res' is level 33)"]
    assert adl.check("res(" * 32 + "ffl" + ")" * 32, role="encoder").network.layers == 33


def test_numbers_and_expressions():
    assert messages("ff(" + "9" * 4301 + ")") == [
        "integer too large: the largest is 9,223,372,036,854,775,807"
    ]
    assert messages("ff(" + " + ".join(["1"] * 250) + ")") == [
        "this expression nests more than 64 operators deep"
    ]
    n = adl.check("ff(" + " + ".join(["2"] * 65) + ")", role="encoder").network
    assert n.chain.nodes[0].d_out == 130  # 64 operators are fine
    assert messages("ff(" + "-" * 70 + "1)") == [
        "this expression nests more than 64 operators deep"
    ]
    assert messages("ff(3037000500 * 3037000500)") == ["number too large"]
    assert messages("norm(eps=1e300 * 1e300)") == ["number too large"]


def test_values_that_refer_to_values():
    assert messages("$a = $b\n$b = $c\n$c = $a\npos -> ff($a)") == [
        "variable '$a' refers to itself: $a -> $b -> $c -> $a"
    ]
    chain = "$v0 = 1\n" + "".join(f"$v{i} = $v{i - 1} + 1\n" for i in range(1, 300))
    assert messages(chain + "ff($v299)") == [
        "values refer to values more than 200 levels deep here ($variables and block parameters)"
    ]
    assert adl.check(chain + "ff($v90)", role="encoder").network.d_out == 91


def test_checking_steps_are_bounded():
    # a 1,024-term value used by 4,096 layers: about 8 million evaluations if unbounded
    value = "1"
    for _ in range(10):
        value = f"({value} + {value})"
    text = f"$v = {value} - 1023\nb0 = ff($v)\n"
    text += "".join(f"b{i} = b{i - 1} -> b{i - 1}\n" for i in range(1, 13)) + "pos -> b12"
    assert messages(text, d_model=8) == [
        "checking this text takes more than 1,000,000 steps (layers, block uses and values "
        "evaluated)"
    ]


def test_checking_stops_after_100_errors():
    errors = messages(" -> ".join(["nope"] * 500))
    assert errors == ["unknown layer 'nope'"] * 100 + ["checking stopped after 100 errors"]


def test_sizes_and_memory():
    assert messages("concat(ff(1048576), ff(1048576))", d_model=8, max_memory=1 << 40) == [
        "'concat' makes the size 2,097,152, more than the largest size 1,048,576"
    ]
    assert messages("ff(100000) -> linear(100000)", d_model=8) == [
        "'linear' needs about 37.3 GiB for its 10,000,100,000 parameters (float32) and fixed "
        "tensors, more than the memory limit of 16.0 GiB"
    ]
    net = adl.check("ff(1000)", role="encoder", d_model=100).network
    assert net.bytes == 4 * (100 * 1000 + 1000)
    with pytest.raises(adl.ADLError, match="more than the memory limit of 390.6 KiB"):
        adl.check("ff(1000)", role="encoder", d_model=100, max_memory=400_000)
    adl.check("ff(1000)", role="encoder", d_model=100, max_memory=404_000)


def test_the_memory_limit_comes_from_the_environment(monkeypatch):
    monkeypatch.setenv("ADL_MAX_MEMORY", "300K")
    assert limits.memory_limit() == 300 << 10
    with pytest.raises(adl.ADLError, match="more than the memory limit of 300.0 KiB"):
        adl.check("ff(1000)", role="encoder", d_model=100)
    adl.check("ff(1000)", role="encoder", d_model=100, max_memory=10**6)  # the keyword wins
    monkeypatch.setenv("ADL_MAX_MEMORY", "lots")
    with pytest.raises(adl.ADLError, match="ADL_MAX_MEMORY='lots' is not an amount of memory"):
        adl.check("ff", role="encoder")
    assert [limits.parse_bytes(t) for t in ("64G", "512MiB", "1000", "2t", "1.5k")] == [
        64 << 30,
        512 << 20,
        1000,
        2 << 40,
        1536,
    ]


def test_gaussian_kernels_count_as_memory():
    # index mode, offset 4096: a kernel of 4,097 taps (positions i .. i + 4096) for each of
    # 512 value channels, as the built layer holds it
    net = adl.check("gauss_att(4096, index=true)", role="encoder").network
    params = 2 * (512 * 512 + 512)
    assert net.bytes == 4 * params + 4 * 512 * (4096 + 1)
    layers = [("gauss_att(4096, index=true)", "encoder"), ("gauss_att(l, r)", "encoder")]
    layers += [
        ("gauss_att(-3, c, window=4)", "decoder"),
        ("gauss_src_att(l, sigma=3, ratio=1)", "decoder"),
    ]
    for text, role in layers:
        program = adl.check(text, role=role, d_model=16, heads=2, source_d=16)
        module = build_network(program, program.network)[0]
        held = sum(b.numel() * b.element_size() for b in module.buffers())
        assert held == program.network.bytes - 4 * program.network.params


def test_hyper_parameters_and_python_variables_are_bounded():
    assert messages("pos", d_model=1 << 21) == ["d_model must be at most 1,048,576, not 2,097,152"]
    assert messages("pos", heads=5000) == ["heads must be at most 1,024, not 5,000"]
    assert messages("ff($x)", vars={"x": 10**40}) == [
        "$x must be a number, true/false, or ADL text (a str), not a huge integer"
    ]
    assert messages("ff($x)", vars={"x": [1, 2]}) == [
        "$x must be a number, true/false, or ADL text (a str), not [1, 2]"
    ]


def test_the_checker_needs_few_python_frames():
    """The worst programs the limits allow check within 500 frames of the caller's, so
    checking never meets Python's recursion limit (1000 by default)."""
    worst = [
        # a parameter passed as a layer through 63 blocks, each adding a layer around it
        "p0(x) = x\n"
        + "".join(f"p{i}(x) = p{i - 1}(x -> id)\n" for i in range(1, 64))
        + "p63(ffl)",
        # 63 blocks passing a number on, into 31 nested layers
        "b0(x, n) = res(x -> ff($d_model * n / n))\n"
        + "".join(f"b{i}(x, n) = b{i - 1}(x, n)\n" for i in range(1, 64))
        + "b63("
        + "res(" * 31
        + "ffl"
        + ")" * 31
        + ", "
        + " + ".join(["1"] * 60)
        + ")",
        "$v0 = 1\n" + "".join(f"$v{i} = $v{i - 1} + 1\n" for i in range(1, 300)) + "ff($v299)",
        "f(" + "res(" * 62 + "x" + ")" * 62 + ")",
    ]
    old = sys.getrecursionlimit()
    sys.setrecursionlimit(len(inspect.stack()) + 500)
    try:
        for text in worst:
            try:
                adl.check(text, role="encoder")
            except adl.ADLError:
                pass
    finally:
        sys.setrecursionlimit(old)


def test_the_deepest_network_builds_and_runs_within_the_recursion_limit():
    """32 layers inside layers (the limit) build, run, decode and save within 600 frames."""
    import torch

    deepest = "res(" * 31 + "res_nd(mh_dot_self_att)" + ")" * 31
    decoder = "res(" * 31 + "res_nd(mh_dot_src_att)" + ")" * 31
    old = sys.getrecursionlimit()
    sys.setrecursionlimit(len(inspect.stack()) + 600)
    try:
        model = adl.build(deepest, decoder, src_vocab=7, tgt_vocab=7, d_model=8, heads=2)
        src, tgt = torch.tensor([[3, 4, 5]]), torch.tensor([[1, 2]])
        assert model(src, tgt).shape == (1, 2, 7)
        memory, state = model.start(src)
        model.step(torch.tensor([1]), memory, state)
        assert len(model.state_dict()) > 0
        model.to(torch.float64)
    finally:
        sys.setrecursionlimit(old)
