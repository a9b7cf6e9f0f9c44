"""Names of a file (definitions, references), hover texts and the outline."""

import adl
from adl.docgen import layer_section
from adl.lsp.hover import Declared, hover
from adl.lsp.occurrences import at, declaration, occurrences, references
from adl.lsp.settings import Settings
from adl.lsp.symbols import outline

TEXT = (
    "$n = 2\n"
    "sub(f, k=3) = res_nd(f) -> cnn(kernel_width=k)\n"
    "t_enc = sub(mh_dot_self_att, k=5) -> sub(ffl)\n"
    "pos -> repeat($n, t_enc) -> norm\n"
)


def names():
    return occurrences(adl.parse(TEXT))


def name_at(needle: str, nth: int = 0):
    offset = -1
    for _ in range(nth + 1):
        offset = TEXT.index(needle, offset + 1)
    found = at(names(), offset)
    assert found is not None
    return found


def spans(found) -> list[str]:
    return [f"{TEXT[o.span.start : o.span.end]}@{o.span.start}" for o in found]


def test_a_block_use_goes_to_its_definition_and_finds_its_uses():
    use = name_at("sub(mh")
    assert use.kind == "block"
    target = declaration(names(), use)
    assert target is not None and target.span.start == TEXT.index("sub(f")
    refs = references(names(), use, with_declaration=True)
    assert [o.span.start for o in refs] == [
        TEXT.index("sub(f"),
        TEXT.index("sub(mh"),
        TEXT.index("sub(ffl"),
    ]
    assert len(references(names(), use, with_declaration=False)) == 2


def test_parameters_resolve_inside_their_block_and_as_keywords_of_its_uses():
    k = name_at("k)")  # cnn(k) in the body
    assert (k.kind, k.owner) == ("param", "sub")
    assert spans(references(names(), k, with_declaration=True)) == [
        f"k@{TEXT.index('k=3')}",
        f"k@{TEXT.index('k)')}",
        f"k@{TEXT.index('k=5')}",
    ]
    keyword = name_at("k=5")
    decl = declaration(names(), keyword)
    assert decl is not None and decl.span.start == TEXT.index("k=3")


def test_variables_and_layers():
    n = name_at("$n", 1)
    decl = declaration(names(), n)
    assert decl is not None and decl.span.start == 0
    ffl = name_at("ffl")
    assert ffl.kind == "layer" and declaration(names(), ffl) is None
    assert at(names(), TEXT.index("2\n")) is None  # a number is no name


def test_hover_shows_the_reference_section_and_the_sizes_here():
    tree = adl.parse(TEXT)
    program = adl.check(TEXT, role="encoder")
    offset = TEXT.index("mh_dot_self_att") + 4
    shown, span = hover(Declared.of(tree), names(), offset, program, Settings())
    spec = adl.REGISTRY.get("mh_dot_self_att")
    assert spec is not None
    assert shown.startswith("\n".join(layer_section(spec)))
    (node,) = program.network.chain.find("mh_dot_self_att")
    assert f"encoder: 512 → 512, {node.params:,} parameters" in shown
    assert TEXT[span.start : span.end] == "mh_dot_self_att"
    ffl = hover(Declared.of(tree), names(), TEXT.index("ffl"), None, Settings())
    assert ffl is not None and "not known while the file has errors" in ffl[0]


def test_hover_on_keywords_blocks_and_variables():
    declared = Declared.of(adl.parse(TEXT))
    default = Settings()
    shown = lambda needle, s=default: hover(declared, names(), TEXT.index(needle), None, s)[0]
    assert "parameter `k` of block `sub(f, k=3)`" == shown("k=5")
    assert "```adl\nsub(f, k=3) = res_nd(f) -> cnn(kernel_width=k)\n```" in shown("sub(mh")
    assert shown("$n,").startswith("`$n` = `2`: the file's default")
    given = Settings(vars=(("n", 4),), origin="preset p")
    assert shown("$n,", given).startswith("`$n` = 4 (preset p)")
    cnn_heads = hover(
        Declared.of(adl.parse("pos -> cnn(num_hidden=8)")),
        occurrences(adl.parse("pos -> cnn(num_hidden=8)")),
        12,
        None,
        Settings(),
    )
    assert cnn_heads is not None and "| `num_hidden` |" in cnn_heads[0]


def _doc(layer: str, argument: str) -> str:
    spec = adl.REGISTRY.get(layer)
    param = spec.param(argument) if spec is not None else None
    assert param is not None
    return param.doc


def test_outline():
    symbols = outline(adl.parse(TEXT), "/x/t.enc.adl")
    assert [(s.name, s.kind, s.detail) for s in symbols] == [
        ("$n", "variable", "2"),
        ("sub", "block", "sub(f, k=3)"),
        ("t_enc", "block", "t_enc"),
        ("encoder", "network", ""),
    ]
    both = outline(adl.parse("encoder = pos\ndecoder = pos -> mh_dot_src_att"), "m.adl")
    assert [(s.name, s.kind) for s in both] == [("encoder", "network"), ("decoder", "network")]
