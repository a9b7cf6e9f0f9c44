"""The names of a file with a syntax error, read from its tokens: the same occurrences as
the syntax tree gives while the file parses, and hover and go to definition on them once a
parenthesis is left open."""

import dataclasses

import adl
from adl.docgen import layer_section
from adl.lsp import tokens
from adl.lsp.checking import check_text
from adl.lsp.hover import Declared, hover
from adl.lsp.occurrences import at, declaration, occurrences, references
from adl.lsp.settings import Settings
from adl.source import Source

TEXT = (
    "# a comment: res_nd(ffl)\n"
    "$n = 2\n"
    "sub(f, k=3) = res_nd(f) -> cnn(kernel_width=k)\n"
    "t_enc = sub(mh_dot_self_att, k=5)\n"
    "    -> sub(ffl) -> dropout(p=0.1)\n"
    "pos -> repeat($n, t_enc) -> norm\n"
)
BROKEN = TEXT.replace("repeat($n, t_enc) -> norm", "repeat($n, t_enc -> norm")


def _plain(found):
    """Occurrences without the syntax tree's call (the tokens do not know it)."""
    return [dataclasses.replace(o, call=None) for o in found]


def test_the_tokens_give_the_names_the_syntax_tree_gives():
    assert tokens.occurrences(TEXT) == _plain(occurrences(adl.parse(TEXT)))
    tree = adl.parse(TEXT)
    declared = tokens.declared(TEXT)
    assert declared.heads == Declared.of(tree).heads
    assert declared.defaults == Declared.of(tree).defaults == {"n": "2"}
    assert (
        declared.blocks["t_enc"]
        == "t_enc = sub(mh_dot_self_att, k=5)\n    -> sub(ffl) -> dropout(p=0.1)"
    )


def test_a_file_with_an_unclosed_parenthesis_keeps_hover_and_definitions():
    checked = check_text(Source(BROKEN, "b.enc.adl"), Settings())
    assert checked.tree is None and checked.diagnostics  # a syntax error
    names = checked.names
    shown = hover(checked.declared, names, BROKEN.index("mh_dot_self_att") + 2, None, Settings())
    spec = adl.REGISTRY.get("mh_dot_self_att")
    assert spec is not None and shown is not None
    assert shown[0].startswith("\n".join(layer_section(spec)))
    assert "not known while the file has errors" in shown[0]

    use = at(names, BROKEN.index("t_enc -> norm"))
    assert use is not None and use.kind == "block"
    target = declaration(names, use)
    assert target is not None and target.span.start == BROKEN.index("t_enc =")
    k = at(names, BROKEN.index("k=5"))
    assert k is not None and (k.kind, k.owner) == ("keyword", "sub")
    assert [o.span.start for o in references(names, k, with_declaration=True)] == [
        BROKEN.index("k=3"),
        BROKEN.index("k)"),
        BROKEN.index("k=5"),
    ]
    shown_k = hover(checked.declared, names, BROKEN.index("k=5"), None, Settings())
    assert shown_k is not None and shown_k[0] == "parameter `k` of block `sub(f, k=3)`"
    p = hover(checked.declared, names, BROKEN.index("p=0.1"), None, Settings())
    assert p is not None and "| `dropout` | `p`, `rate` |" in p[0]  # dropout's keyword
    n = hover(checked.declared, names, BROKEN.index("$n,"), None, Settings())
    assert n is not None and n[0].startswith("`$n` = `2`: the file's default")
