"""Completion from the text before the cursor (a half-typed file)."""

from adl import REGISTRY
from adl.lsp.completion import complete, definition_heads


def labels(text: str, offset: int | None = None, variables=()) -> dict[str, str]:
    """label -> kind of the items at ``offset`` (default: the end)."""
    _, items = complete(text, len(text) if offset is None else offset, variables)
    return {i.label: i.kind for i in items}


def test_layer_names_and_blocks_everywhere_a_layer_goes():
    got = labels("t_enc = res_nd(ffl)\nencoder = pos\npos -> repeat(6, res_nd(")
    assert set(REGISTRY.names()) <= set(got)
    assert got["t_enc"] == "block" and got["mh_dot_self_att"] == "layer"
    assert "encoder" not in got  # a network, not a block to use


def test_items_carry_the_registry_summary_and_usage():
    _, items = complete("pos -> ", 7)
    ffl = next(i for i in items if i.label == "ffl")
    spec = REGISTRY.get("ffl")
    assert spec is not None and (ffl.detail, ffl.documentation) == (spec.usage(), spec.summary)


def test_keyword_arguments_of_the_call_not_given_yet():
    got = labels("pos -> mh_dot_self_att(h=4, ")
    spec = REGISTRY.get("mh_dot_self_att")
    assert spec is not None
    wanted = {f"{p.name}=" for p in spec.params if p.name != "heads" and not p.variadic}
    assert {k for k, kind in got.items() if kind == "keyword"} == wanted  # h is heads' alias
    assert labels("pos -> mh_dot_self_att(heads=")["ffl"] == "layer"  # a value goes here
    assert "dropout=" not in labels("pos -> mh_dot_self_att(heads=")


def test_a_block_offers_its_parameters_as_keywords_and_inside_its_body():
    text = "sub(f, n=2) = repeat(n, res_nd(f))\npos -> sub(ffl, "
    assert {k for k, kind in labels(text).items() if kind == "keyword"} == {"f=", "n="}
    body = text.index("res_nd(") + len("res_nd(")
    got = labels(text, body)
    assert got["f"] == "param" and got["n"] == "param"
    assert "f" not in labels(text)  # outside the block's body


def test_closed_calls_comments_and_strings_do_not_count():
    text = 'pos -> cnn(glu) # ffl(\n-> mh_dot_self_att(heads=")(", '
    keywords = {k for k, kind in labels(text).items() if kind == "keyword"}
    assert "dropout=" in keywords and "heads=" not in keywords  # inside mh_dot_self_att(
    assert labels("pos -> ffl(2048) -> ")["ffl"] == "layer"
    assert not any(kind == "keyword" for kind in labels("pos -> ffl(2048) -> ").values())


def test_variables_after_a_dollar():
    text = "$ff = 2048\npos -> ffl($"
    start, items = complete(text, len(text), ["layers"])
    assert start == len(text) - 1  # the '$' is replaced too
    assert {i.label for i in items} == {"$d_model", "$heads", "$dropout", "$ff", "$layers"}


def test_definition_heads_read_line_by_line():
    heads = definition_heads("a = ffl\nb(x, n=res(ffl)) = x\n  c = no\npos -> a\nd(x\n")
    assert [(h.name, h.params) for h in heads] == [("a", ()), ("b", ("x", "n"))]
