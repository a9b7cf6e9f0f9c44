"""The printer: canonical text, parse(print(tree)) == tree, and the signature."""

from hypothesis import given, settings
from strategies import files

import adl
from adl.syntax import ast


@settings(max_examples=150, deadline=None)
@given(files)
def test_parse_of_print_is_identity(tree):
    text = adl.to_text(tree)
    assert adl.parse(text) == tree
    assert adl.to_text(adl.parse(text)) == text  # printing is a fixed point


def test_canonical_text_drops_comments_and_layout():
    a = adl.parse(
        "# Transformer\nt = res_nd(mh_dot_self_att)->res_nd( ffl )\n\npos→repeat( 6 ,t )\n->norm"
    )
    b = adl.parse("t = res_nd(mh_dot_self_att) -> res_nd(ffl)\npos -> repeat(6, t) -> norm\n")
    assert a == b
    assert (
        adl.to_text(a)
        == "t = res_nd(mh_dot_self_att) -> res_nd(ffl)\npos -> repeat(6, t) -> norm\n"
    )
    assert adl.text_hash(a) == adl.text_hash(b)


def test_signature_differs_with_the_architecture():
    a = adl.parse("pos -> repeat(6, res_nd(mh_dot_self_att) -> res_nd(ffl)) -> norm")
    b = adl.parse("pos -> repeat(6, res_nd(cnn) -> res_nd(ffl)) -> norm")
    assert adl.text_hash(a) != adl.text_hash(b)
    assert len(adl.text_hash(a)) == 16


def test_expressions_print_with_the_parentheses_they_need():
    tree = adl.parse("f(4 * ($d_model + 1), (n - 1) - 2, n - (1 - 2), -(n * 2), 2 * -n, 1 / 2 / 3)")
    assert (
        adl.to_text(tree)
        == "f(4 * ($d_model + 1), n - 1 - 2, n - (1 - 2), -(n * 2), 2 * -n, 1 / 2 / 3)\n"
    )


def test_spans_point_into_the_text():
    text = "blk(x) = res_nd(x)\npos -> blk(ffl)"
    tree = adl.parse(text)
    call = tree.network.layers[1]
    assert text[call.span.start : call.span.end] == "blk(ffl)"
    assert text[call.name_span.start : call.name_span.end] == "blk"
    d = tree.definitions[0]
    assert text[d.name_span.start : d.name_span.end] == "blk"


def test_values():
    tree = adl.parse("f(1, 2.5, 1e-4, true, False, 'a\\'b', \"c\", $v, -3, x, a -> b(k=1))")
    values = [a.value for a in tree.network.layers[0].args]
    assert values[:9] == [
        ast.Int(1),
        ast.Float(2.5),
        ast.Float(1e-4),
        ast.Bool(True),
        ast.Bool(False),
        ast.String("a'b"),
        ast.String("c"),
        ast.Var("v"),
        ast.Negate(ast.Int(3)),
    ]
    assert values[9].bare_name() == "x"
    assert [c.name for c in values[10].layers] == ["a", "b"]
