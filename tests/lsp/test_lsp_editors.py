"""The VS Code extension's files: the manifest starts ``adl lsp`` for .adl files, and the
TextMate grammar knows the registry's layers."""

import json
import re

from conftest import ROOT

import adl

VSCODE = ROOT / "editors" / "vscode"


def grammar() -> dict:
    return json.loads((VSCODE / "syntaxes" / "adl.tmLanguage.json").read_text())


def patterns(node):
    """Every pattern of the grammar with a 'match', 'begin' or 'end' regex."""
    if isinstance(node, dict):
        if any(k in node for k in ("match", "begin", "end")):
            yield node
        for value in node.values():
            yield from patterns(value)
    elif isinstance(node, list):
        for value in node:
            yield from patterns(value)


def rules() -> list[dict]:
    """The top-level rules in order, includes resolved."""
    g = grammar()

    def expand(node: dict) -> list[dict]:
        if "include" in node:
            return expand(g["repository"][node["include"][1:]])
        if "patterns" in node and not any(k in node for k in ("match", "begin")):
            return [r for child in node["patterns"] for r in expand(child)]
        return [node]

    return [r for node in g["patterns"] for r in expand(node)]


def tokens(line: str) -> list[tuple[str, str]]:
    """(text, scope) of one line as a TextMate tokenizer scopes it: at each point the rule
    that matches earliest wins (the first listed on a tie); a begin/end rule is read as one
    regex (Python's re reads these regexes as Oniguruma does)."""
    compiled = [
        (re.compile(r["match"] if "match" in r else f"{r['begin']}(?:\\\\.|.)*?(?:{r['end']})"), r)
        for r in rules()
    ]
    found, at = [], 0
    while at < len(line):
        hits = [(m, r) for rx, r in compiled if (m := rx.search(line, at)) and m.end() > m.start()]
        if not hits:
            break
        m, rule = min(hits, key=lambda hit: hit[0].start())
        if "name" in rule:
            found.append((m.group(), rule["name"]))
        for group, capture in sorted(rule.get("captures", {}).items()):
            found.append((m.group(int(group)), capture["name"]))
        at = m.end()
    return found


def test_the_grammar_highlights_exactly_the_built_in_layers():
    layer = next(p for p in patterns(grammar()) if p.get("name") == "support.function.layer.adl")
    listed = set(re.fullmatch(r"\\b\(\?:(.*)\)\\b", layer["match"]).group(1).split("|"))
    assert listed == {n for s in adl.REGISTRY if not s.plugin for n in (s.name, *s.aliases)}


def test_the_grammar_scopes_an_adl_text():
    assert tokens("$ff = 4 * $d_model  # size") == [
        ("$ff", "variable.other.definition.adl"),
        ("=", "keyword.operator.assignment.adl"),
        ("4", "constant.numeric.integer.adl"),
        ("*", "keyword.operator.arithmetic.adl"),
        ("$d_model", "variable.other.adl"),
        ("# size", "comment.line.number-sign.adl"),
    ]
    line = 'sub(f, k=3) = res_nd(f) → cnn(act_type="g\\"lu", dropout=0.1) -> t'
    assert [t for t in tokens(line) if not t[1].startswith("punctuation")] == [
        ("sub", "entity.name.function.block.adl"),
        ("k", "variable.parameter.adl"),
        ("=", "keyword.operator.assignment.adl"),
        ("3", "constant.numeric.integer.adl"),
        ("=", "keyword.operator.assignment.adl"),
        ("res_nd", "support.function.layer.adl"),
        ("→", "keyword.operator.arrow.adl"),
        ("cnn", "support.function.layer.adl"),
        ("act_type", "variable.parameter.adl"),
        ("=", "keyword.operator.assignment.adl"),
        ('"g\\"lu"', "string.quoted.double.adl"),
        ("dropout", "variable.parameter.adl"),
        ("=", "keyword.operator.assignment.adl"),
        ("0.1", "constant.numeric.float.adl"),
        ("->", "keyword.operator.arrow.adl"),
    ]
    assert tokens("encoder = pos -> my_block(x) -> 1e-3")[:1] + tokens("pos -> b(x)")[2:3] == [
        ("encoder", "storage.type.network.adl"),
        ("b", "entity.name.function.call.adl"),
    ]


def test_the_extension_starts_adl_lsp_for_adl_files():
    manifest = json.loads((VSCODE / "package.json").read_text())
    [language] = manifest["contributes"]["languages"]
    assert language["extensions"] == [".adl"]
    [grammar_entry] = manifest["contributes"]["grammars"]
    assert (VSCODE / grammar_entry["path"]).is_file()
    command = manifest["contributes"]["configuration"]["properties"]["adl.server.command"]
    assert command["default"] == ["adl", "lsp"]
    assert "adl.server.command" in (VSCODE / manifest["main"]).read_text()
    json.loads((VSCODE / language["configuration"]).read_text())
