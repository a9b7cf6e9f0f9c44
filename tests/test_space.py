"""Spaces of programs: the choice construct, its exact count, and a space checked as a
program is (adl/analysis/space.py, spacecheck.py)."""

import random

import pytest
from conftest import run_cli

import adl
from adl.analysis import space
from adl.lsp.checking import check_text
from adl.lsp.formatting import format_text
from adl.lsp.hover import hover
from adl.lsp.settings import Settings
from adl.source import Source
from adl.syntax.printer import to_text

ENC_SPACE = (
    "$layers = {2..6}\n"
    "t_enc = res_nd({mh_dot_self_att | gauss_att(l, r) | cnn | rnn}) -> res_nd(ffl)\n"
    "pos -> repeat($layers, t_enc) -> norm\n"
)


def members_of(text: str) -> list[str]:
    tree = adl.parse(text)
    return [to_text(space.picked(tree, p)) for p in space.members(tree)]


@pytest.mark.parametrize(
    "text, size",
    [
        (ENC_SPACE, 5 * 4),  # a depth and a layer kind, the same in every copy
        ("pos -> {rnn | {cnn(relu) | cnn(glu)} | id} -> {norm | id}", (1 + 2 + 1) * 2),
        ("b = {x | y}\npos -> {b | c}", 2 + 1),  # b's choice only where b is used
        ("u = {a | b}\nv = u -> {c | d}\npos -> {u | v | w}", 2 + 2 * 2 + 1),  # shared u
        ("$x = {1 | 2}\nb = ff($x)\npos -> {b | id} -> repeat($x, z)", 2 + 2),  # one $x
        ("pos -> repeat({1..3}, {a | b}) -> repeat({1..3}, {a | b})", (3 * 2) ** 2),
        ("pos -> ffl", 1),
    ],
)
def test_a_space_is_counted_exactly(text, size):
    tree = adl.parse(text)
    listed = members_of(text)
    assert space.count(tree) == size == len(listed) == len(set(listed))


def test_members_keep_only_what_they_use_and_variables_set_outside_are_no_choice():
    assert members_of("b = {x | y}\npos -> {b | c}") == [
        "b = x\npos -> b\n",
        "b = y\npos -> b\n",
        "pos -> c\n",
    ]
    tree = adl.parse(ENC_SPACE)
    assert space.count(tree, given={"layers"}) == 4
    assert not space.is_space(adl.parse("pos -> ffl"))


def test_choices_print_and_parse_back():
    text = "$n = {-1..2}\nb = cnn({3 | 5}, glu)\npos -> {b | res(norm -> {rnn | id})} -> repeat($n, x)\n"
    tree = adl.parse(text)
    assert to_text(tree) == text
    assert adl.parse(to_text(tree)) == tree
    assert format_text("pos->{rnn|cnn}->norm\n") == "pos -> {rnn | cnn} -> norm\n"


@pytest.mark.parametrize(
    "text, message, column",
    [
        ("pos -> {rnn | 3}", "an option of a choice in a chain is a layer or a chain", 15),
        ("pos -> {rnn | rnn}", "the option 'rnn' is listed twice", 15),
        ("pos -> repeat({6..2}, x)", "the range {6..2} is empty", 15),
        ("pos -> {2..6}", "a range of numbers stands for a value, not for a layer", 8),
        ("b(n={1 | 2}) = x\nb", "the default of parameter 'n' cannot be a choice", 5),
        ("pos -> repeat({1..5000}, x)", "a choice has at most 1,024 options", 15),
    ],
)
def test_choice_syntax_errors_are_located(text, message, column):
    with pytest.raises(adl.ADLError) as caught:
        adl.parse(text)
    d = caught.value.diagnostics[0]
    assert message in d.message
    assert d.source is not None and d.span is not None
    assert d.source.line_col(d.span.start)[1] == column


def test_a_program_check_refuses_a_space_with_its_size():
    with pytest.raises(adl.ADLError) as caught:
        adl.check(ENC_SPACE, role="encoder")
    assert "this text is a space of 20 programs" in str(caught.value)
    with pytest.raises(adl.ADLError, match="one value, not a choice"):
        adl.check_hyper(vars={"layers": "{2..3}"})


def test_an_option_no_member_can_take_is_located_and_refuses_the_space():
    text = "pos -> repeat({1..2}, res_nd({mh_dot_self_att | birnn}) -> res_nd(mh_dot_src_att))"
    with pytest.raises(adl.ADLError) as caught:
        adl.check_space(text, role="decoder")
    (d,) = caught.value.errors
    assert "no program of the space that takes the option 'birnn' here is valid" in d.message
    assert "'birnn' is not allowed in a decoder" in d.message
    assert d.span is not None and text[d.span.start : d.span.end] == "birnn"
    assert "<string>:1:49: error:" in d.render()


def test_members_invalid_only_with_other_picks_are_excluded_and_counted():
    text = "pos -> {ff(256) | id} -> res({linear(256) | ffl}) -> norm"
    checked = adl.check_space(text, role="encoder")
    assert (checked.size, checked.checked, checked.valid) == (4, 4, 3)
    (excluded,) = checked.excluded
    assert excluded.members == 1 and excluded.example == "pos -> id -> res(linear(256)) -> norm\n"
    (warning,) = checked.diagnostics()
    assert (
        warning.severity == "warning" and "1 of the 4 programs checked excluded" in warning.message
    )
    assert checked.describe() == "a space of 4 programs (all 4 checked: 3 valid, 1 excluded)"


def test_a_large_space_is_checked_through_every_option_and_a_sample():
    checked = adl.check_space(ENC_SPACE, role="encoder", limit=10)
    assert checked.size == 20 and checked.checked == 10 and not checked.exhaustive
    tree = adl.parse(ENC_SPACE)
    found = space.covering(tree, random.Random(0))
    taken = {(k, v) for p in found for k, v in p.items()}
    for choice, _ in space.choices(tree):
        assert {(choice.span.start, i) for i in range(len(choice.options))} <= taken


def test_adl_compile_check_prints_the_count(tmp_path):
    path = tmp_path / "enc.space.adl"
    path.write_text(ENC_SPACE)
    code, out, err = run_cli("compile", "--check", str(path))
    assert code == 0, err
    assert out.strip() == f"{path}: a space of 20 programs (all 20 checked: 20 valid)"
    bad = tmp_path / "x.dec.space.adl"
    bad.write_text("pos -> {rnn | birnn} -> res_nd(mh_dot_src_att)\n")
    code, out, err = run_cli("compile", "--check", str(bad))
    assert code == 1 and f"{bad}:1:15: error: no program of the space" in err


def test_the_language_server_checks_a_space_and_hover_shows_its_size():
    checked = check_text(Source(ENC_SPACE, "s.enc.adl"), Settings())
    assert checked.space is not None and checked.diagnostics == []
    offset = ENC_SPACE.index("{mh_dot")
    shown = hover(checked.declared, checked.names, offset, None, Settings(), checked.space)
    assert shown is not None and "a space of 20 programs (all 20 checked: 20 valid)" in shown[0]
    broken = check_text(Source("pos -> {rnn | birnn}\n", "s.dec.adl"), Settings())
    assert broken.space is None and "'birnn'" in broken.diagnostics[0].message
