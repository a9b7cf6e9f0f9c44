"""docs/language.md carries the layer reference generated from the registry."""

from conftest import ROOT

from adl import docgen


def test_layer_reference_is_up_to_date():
    text = (ROOT / "docs" / "language.md").read_text(encoding="utf-8")
    assert docgen.splice(text, docgen.render()) == text, (
        "docs/language.md is out of date: run `python -m adl.docgen docs/language.md`"
    )


def test_every_layer_and_alias_is_documented():
    from adl.registry import REGISTRY

    text = (ROOT / "docs" / "language.md").read_text(encoding="utf-8")
    for name in REGISTRY.names():
        assert f"`{name}`" in text


def test_architecture_list_is_up_to_date():
    text = (ROOT / "docs" / "architectures.md").read_text(encoding="utf-8")
    assert docgen.regenerate(text, ROOT) == text, (
        "docs/architectures.md is out of date: run `python -m adl.docgen docs/architectures.md`"
    )
    for path in (ROOT / "architectures").rglob("*.adl"):
        assert f"`{path.relative_to(ROOT).as_posix()}`" in text


def test_limits_table_is_up_to_date():
    text = (ROOT / "docs" / "language.md").read_text(encoding="utf-8")
    assert docgen.splice(text, docgen.render_limits(), docgen.LIMITS_BEGIN, docgen.LIMITS_END) == (
        text
    ), "docs/language.md is out of date: run `python -m adl.docgen docs/language.md`"
    assert "| layers | 10,000 |" in text and "`ADL_MAX_MEMORY`" in text
