"""Text -> syntax tree, with syntax errors a person can act on.

Lark parses (LALR); this module turns its tree into :mod:`adl.syntax.ast` nodes, checks the
shape of definitions, and translates Lark's exceptions into :class:`~adl.errors.ADLError`.
"""

from __future__ import annotations

import ast as pyast
import math

from lark import Token, Tree
from lark.exceptions import LarkError, UnexpectedCharacters, UnexpectedInput, UnexpectedToken

from ..errors import ADLError, Diagnostic, error
from ..limits import MAX_EXPRESSION_DEPTH, MAX_INTEGER, MAX_NESTING, MAX_SOURCE_CHARS
from ..source import Source, Span
from . import ast
from .grammar import parser
from .printer import to_text

MAX_OPTIONS = 1024  # options of one choice ({1..1024} at most)

_TOKEN_WORDS = {
    "NAME": "a layer name",
    "INT": "a number",
    "FLOAT": "a number",
    "STRING": "a string",
    "VAR": "a $variable",
    "TRUE": "true",
    "FALSE": "false",
    "ARROW": "'->'",
    "LPAR": "'('",
    "RPAR": "')'",
    "COMMA": "','",
    "EQUAL": "'='",
    "MINUS": "'-'",
    "VBAR": "'|'",
    "LBRACE": "'{'",
    "RBRACE": "'}'",
    "RANGE": "a range",
    "PLUS": "'+'",
    "STAR": "'*'",
    "SLASH": "'/'",
    "$END": "the end of the text",
}
_VALUE_TOKENS = {"INT", "FLOAT", "STRING", "VAR", "TRUE", "FALSE", "MINUS"}


def parse(text: str, name: str = "<string>") -> ast.File:
    """Parse ADL text into a :class:`~adl.syntax.ast.File`; raises :class:`ADLError`."""
    return parse_source(Source(text, name))


def parse_source(source: Source) -> ast.File:
    if len(source.text) > MAX_SOURCE_CHARS:
        raise error(
            f"the text is {len(source.text):,} characters long, more than the limit of "
            f"{MAX_SOURCE_CHARS:,}",
            source,
            hint="an ADL file describes one architecture in a few lines",
        )
    _check_brackets(source, only_depth=True)
    try:
        tree = parser().parse(source.text)
    except UnexpectedInput as exc:
        _check_brackets(source)
        raise _syntax_error(source, exc) from None
    except LarkError as exc:  # any other Lark failure is still a user-facing syntax error
        raise error(f"cannot parse: {exc}", source, source.end) from None
    try:
        return _Builder(source).file(tree)
    except RecursionError:
        raise error(
            f"the text nests too deeply (more than {MAX_NESTING} levels)", source, Span(0, 0)
        ) from None


# --- error translation --------------------------------------------------------------------


def _check_brackets(source: Source, only_depth: bool = False) -> None:
    """Unbalanced parentheses and runaway nesting get their own, precise messages."""
    text, stack, i = source.text, [], 0
    while i < len(text):
        ch = text[i]
        if ch == "#":
            nl = text.find("\n", i)
            i = len(text) if nl < 0 else nl
            continue
        if ch in "\"'":
            j = i + 1
            while j < len(text) and text[j] not in (ch, "\n"):
                j += 2 if text[j] == "\\" else 1
            i = j + 1
            continue
        if ch == "(":
            stack.append(i)
            if len(stack) > MAX_NESTING:
                raise error(
                    f"parentheses nest more than {MAX_NESTING} levels deep", source, Span(i, i + 1)
                )
        elif ch == ")":
            if not stack:
                if not only_depth:
                    raise error(
                        "unmatched ')'",
                        source,
                        Span(i, i + 1),
                        hint="remove it, or add the '(' it should close",
                    )
            else:
                stack.pop()
        i += 1
    if stack and not only_depth:
        at = stack[-1]
        owner = _name_before(text, at)
        what = f"the arguments of '{owner}'" if owner else "it"
        raise error("unclosed '('", source, Span(at, at + 1), hint=f"add ')' to close {what}")


def _name_before(text: str, at: int) -> str | None:
    j = at
    while j > 0 and text[j - 1] in " \t":
        j -= 1
    k = j
    while k > 0 and (text[k - 1].isalnum() or text[k - 1] == "_"):
        k -= 1
    return text[k:j] or None


def _tokens(source: Source) -> list[Token]:
    out = []
    try:
        for tok in parser().lex(source.text):
            out.append(tok)
    except LarkError:
        pass
    return out


def _describe(tok: Token) -> str:
    if tok.type == "$END":
        return "the end of the text"
    if tok.type == "NAME":
        return f"'{tok.value}'"
    return f"'{tok.value}'"


_OPERATORS = {"PLUS", "MINUS", "STAR", "SLASH"}
_ORDER = ["NAME", "value", "ARROW", "COMMA", "RPAR", "LPAR", "EQUAL", "operator"]


def _expected(expected: set[str]) -> str:
    """Lark's expected terminals, said in words: 'a layer, a value or ')''."""
    names = set(expected)
    if names & _OPERATORS - {"MINUS"}:
        names = (names - _OPERATORS) | {"operator"}
    if names & _VALUE_TOKENS:
        names = (names - _VALUE_TOKENS - {"LPAR"}) | {"value"}
    words = {"NAME": "a layer", "value": "a value", "operator": "an operator"}
    ordered = sorted(names, key=lambda n: (_ORDER.index(n) if n in _ORDER else len(_ORDER), n))
    said = [words.get(n) or _TOKEN_WORDS.get(n, n.lower()) for n in ordered]
    if len(said) <= 1:
        return said[0] if said else "something else"
    return ", ".join(said[:-1]) + " or " + said[-1]


def _syntax_error(source: Source, exc: UnexpectedInput) -> ADLError:
    if isinstance(exc, UnexpectedCharacters):
        pos = exc.pos_in_stream
        assert pos is not None  # lark gives the position in a text it lexes
        ch = source.text[pos]
        hint = "did you mean '->'?" if ch == ">" else None
        return error(f"unexpected character {ch!r}", source, Span(pos, pos + 1), hint=hint)
    assert isinstance(exc, UnexpectedToken)
    tok = exc.token
    expected = set(exc.expected)
    toks = _tokens(source)
    at_end = tok.type == "$END"
    if at_end:
        prev = toks[-1] if toks else None
        span = _span(prev) if prev is not None else source.end
    else:
        span = _span(tok)
        prev = None
        for t in toks:
            if t.start_pos is not None and t.start_pos < tok.start_pos:
                prev = t
    if prev is not None and prev.type == "ARROW" and (at_end or "NAME" in expected):
        where = _span(prev)
        if at_end:
            return error(
                "trailing '->': expected a layer after it",
                source,
                where,
                hint="remove the '->' or add the layer it leads to",
            )
        return error(f"expected a layer after '->', found {_describe(tok)}", source, span)
    found = _describe(tok)
    if at_end:
        return error(f"unexpected end of the text: expected {_expected(expected)}", source, span)
    if tok.type == "NAME" and "ARROW" in expected:
        return error(
            f"missing '->' before '{tok.value}'",
            source,
            span,
            hint="layers of a chain are joined with '->'; arguments with ','",
        )
    return error(f"expected {_expected(expected)}, found {found}", source, span)


# --- lark tree -> syntax tree -------------------------------------------------------------


def _span(node: Tree | Token) -> Span:
    if isinstance(node, Token):  # lexed tokens have positions (only made-up ones lack them)
        return Span(node.start_pos or 0, node.end_pos or 0)
    return Span(node.meta.start_pos, node.meta.end_pos)


_PRECEDENCE = {"+": 1, "-": 1, "*": 2, "/": 2}


class _Builder:
    def __init__(self, source: Source):
        self.source = source
        self.problems: list[Diagnostic] = []

    def fail(self, message: str, span: Span, hint: str | None = None) -> None:
        self.problems.append(Diagnostic("error", message, self.source, span, hint))

    # statements
    def file(self, tree: Tree) -> ast.File:
        definitions: list[ast.Definition] = []
        networks: list[ast.Chain] = []
        variables: dict[str, ast.Variable] = {}
        for stmt in tree.children:
            if stmt.data == "variable":
                tok, value = stmt.children
                var = ast.Variable(str(tok)[1:], self.value(value), _span(stmt), _span(tok))
                if var.name in variables:
                    self.fail(f"'${var.name}' is given a default twice", var.name_span)
                elif var.name in ("d_model", "heads", "dropout"):
                    self.fail(
                        f"'${var.name}' is a model setting, not a file's variable",
                        var.name_span,
                        hint="set it with --d-model / --heads / --dropout",
                    )
                variables[var.name] = var
                continue
            chains = [self.chain(c) for c in stmt.children]
            if len(chains) == 1:
                networks.append(chains[0])
            else:
                d = self.definition(chains[0], chains[1], _span(stmt))
                if d is not None:
                    definitions.append(d)
        seen: dict[str, ast.Definition] = {}
        for d in definitions:
            if d.name in seen:
                self.fail(
                    f"'{d.name}' is defined twice",
                    d.name_span,
                    hint=f"the first definition is on line "
                    f"{self.source.line_col(seen[d.name].span.start)[0]}",
                )
            else:
                seen[d.name] = d
        for prev, extra in zip(networks, networks[1:]):
            same_line = (
                self.source.line_col(prev.span.end)[0] == self.source.line_col(extra.span.start)[0]
            )
            first = extra.layers[0]
            if same_line:
                self.fail(
                    f"missing '->' before '{first.name}'",
                    first.name_span,
                    hint="layers of a chain are joined with '->'",
                )
            else:
                self.fail(
                    "a second network chain: a file holds one network",
                    extra.span,
                    hint="name the extra chain as a block ('name = ...'), or define "
                    "'encoder = ...' and 'decoder = ...'",
                )
        if self.problems:
            raise ADLError(self.problems)
        network = networks[0] if networks else None
        return ast.File(
            tuple(definitions), network, Span(0, len(self.source.text)), tuple(variables.values())
        )

    def definition(self, lhs: ast.Chain, body: ast.Chain, span: Span) -> ast.Definition | None:
        if len(lhs.layers) != 1:
            self.fail(
                "the left side of '=' must be a block name, like 'name' or 'name(x, y)'", lhs.span
            )
            return None
        head = lhs.layers[0]
        if not isinstance(head, ast.Call):
            self.fail("the left side of '=' must be a block name, not a choice", head.span)
            return None
        params: list[ast.Param] = []
        names: set[str] = set()
        for arg in head.args:
            if arg.key is None:
                pname = arg.value.bare_name() if isinstance(arg.value, ast.Chain) else None
                if pname is None:
                    self.fail(
                        "a block parameter must be a plain name",
                        arg.span,
                        hint=f"write '{head.name}(x) = ...' and pass the value where "
                        f"'{head.name}' is used",
                    )
                    continue
                if params and params[-1].default is not None:
                    self.fail(
                        f"parameter '{pname}' without a default follows one with a default",
                        arg.span,
                    )
                param = ast.Param(pname, None, arg.span)
            else:
                pname = arg.key
                param = ast.Param(pname, arg.value, arg.span)
                if ast.holds_choice(arg.value):
                    self.fail(
                        f"the default of parameter '{pname}' cannot be a choice",
                        arg.value.span,
                        hint=f"put the choice where '{head.name}' is used, or in a $variable",
                    )
            if pname in names:
                self.fail(f"parameter '{pname}' is listed twice", arg.span)
            names.add(pname)
            params.append(param)
        return ast.Definition(head.name, tuple(params), body, span, head.name_span)

    # chains and calls
    def chain(self, tree: Tree, value: bool = False) -> ast.Chain:
        """A chain; ``value``: in a value's place (an argument, a variable's default), where
        a choice standing alone may hold numbers and other values, not only layers."""
        children = [c for c in tree.children if isinstance(c, Tree)]
        layers: list[ast.Layer] = []
        for c in children:
            if c.data in ("choice", "range"):
                layers.append(self.choice(c, value and len(children) == 1))
            else:
                layers.append(self.call(c))
        return ast.Chain(tuple(layers), _span(tree))

    def choice(self, tree: Tree, values: bool) -> ast.Choice:
        span = _span(tree)
        if tree.data == "range":
            tok = tree.children[0]
            low, high = (int(part) for part in str(tok).replace(" ", "").split(".."))
            if low > high:
                self.fail(
                    f"the range {{{low}..{high}}} is empty: write the smaller end first", span
                )
            elif high - low >= MAX_OPTIONS:
                self.fail(f"a choice has at most {MAX_OPTIONS:,} options", span)
            elif not values:
                self.fail("a range of numbers stands for a value, not for a layer", span)
            ints: tuple[ast.Value, ...] = ()
            if low <= high < low + MAX_OPTIONS:
                ints = tuple(ast.Int(i, _span(tok)) for i in range(low, high + 1))
            return ast.Choice(ints, span, (low, high))
        options = tuple(self.value(c) for c in tree.children)
        if len(options) > MAX_OPTIONS:
            self.fail(f"a choice has at most {MAX_OPTIONS:,} options", span)
        seen: dict[str, ast.Value] = {}
        for option in options:
            if not values and not isinstance(option, ast.Chain):
                self.fail(
                    "a value stands where a layer is expected: an option of a choice in a "
                    "chain is a layer or a chain",
                    option.span,
                )
            text = to_text(option)
            if text in seen:
                self.fail(f"the option '{text}' is listed twice in this choice", option.span)
            seen[text] = option
        return ast.Choice(options, span)

    def call(self, tree: Tree) -> ast.Call:
        name_tok = tree.children[0]
        args: tuple[ast.Argument, ...] = ()
        if len(tree.children) > 1:
            args = tuple(self.argument(a) for a in tree.children[1].children)
        return ast.Call(str(name_tok), args, _span(tree), _span(name_tok))

    def argument(self, tree: Tree) -> ast.Argument:
        if tree.data == "keyword":
            key, value = tree.children
            return ast.Argument(self.value(value), str(key), _span(tree), _span(key))
        return ast.Argument(self.value(tree.children[0]), None, _span(tree))

    def value(self, node: Tree | Token) -> ast.Value:
        if isinstance(node, Tree) and node.data == "chain":
            return self.chain(node, value=True)
        return self.expr(node)

    # expressions
    def expr(self, node: Tree | Token) -> ast.Expr:
        return self._expr(node, 0, node)[0]

    def _expr(self, node: Tree | Token, level: int, top: Tree | Token) -> tuple[ast.Expr, int]:
        """The expression and the depth of its operator tree; ``level`` counts the operators
        above this node, so a runaway expression stops before Python's recursion does."""
        kind = node.data if isinstance(node, Tree) else node.type
        children = node.children if isinstance(node, Tree) else []
        span = _span(node)
        if kind in ("binary", "group", "negate") and level > MAX_EXPRESSION_DEPTH:
            self._too_deep(top)
        if kind in ("binary", "group"):
            items = list(children)
            ops = [str(op.children[0]) for op in items[1::2]]
            inner = level + (1 if ops else 0)
            parts = [self._expr(c, inner, top) for c in items[0::2]]
            result, depth = _by_precedence([e for e, _ in parts], [d for _, d in parts], ops)
            if depth > MAX_EXPRESSION_DEPTH:
                self._too_deep(top)
            if kind == "group":  # keep the parentheses' span for messages
                result = _with_span(result, span)
            return result, depth
        if kind == "negate":
            operand, depth = self._expr(children[-1], level + 1, top)
            return ast.Negate(operand, span), depth + 1
        if kind == "name_ref":
            return ast.NameRef(str(children[0]), span), 0
        tok = node.children[0] if isinstance(node, Tree) else node
        text = str(tok)
        if kind == "int":
            digits = text.lstrip("0")
            if len(digits) > len(str(MAX_INTEGER)) or (digits and int(digits) > MAX_INTEGER):
                self.fail(
                    f"integer too large: the largest is {MAX_INTEGER:,}",
                    span,
                    hint="sizes and counts have much smaller limits (docs/language.md, Limits)",
                )
                raise ADLError(self.problems)
            return ast.Int(int(text), span), 0
        if kind == "float":
            value = float(text)
            if math.isinf(value):
                self.fail("number too large", span)
                raise ADLError(self.problems)
            return ast.Float(value, span), 0
        if kind == "string":
            try:
                return ast.String(pyast.literal_eval(text), span), 0
            except (SyntaxError, ValueError):
                self.fail("invalid escape sequence in string", span)
                raise ADLError(self.problems) from None
        if kind == "var":
            return ast.Var(text[1:], span), 0
        if kind == "true":
            return ast.Bool(True, span), 0
        if kind == "false":
            return ast.Bool(False, span), 0
        raise AssertionError(f"unknown expression node {kind}")

    def _too_deep(self, top: Tree | Token) -> None:
        self.fail(
            f"this expression nests more than {MAX_EXPRESSION_DEPTH} operators deep",
            _span(top),
            hint="each operator of a long sum or product adds a level; "
            "compute the value outside and pass it with --var NAME=VALUE",
        )
        raise ADLError(self.problems)


def _with_span(e: ast.Expr, span: Span) -> ast.Expr:
    return type(e)(**{**e.__dict__, "span": span})


def _by_precedence(
    operands: list[ast.Expr], depths: list[int], ops: list[str]
) -> tuple[ast.Expr, int]:
    """Left-associative precedence climbing over a flat ``a op b op c`` list; the tree and
    its depth (operands come with theirs)."""
    out: list[tuple[ast.Expr, int]] = [(operands[0], depths[0])]
    pending: list[str] = []

    def reduce() -> None:
        (right, dr), (left, dl) = out.pop(), out.pop()
        node = ast.BinOp(pending.pop(), left, right, left.span.to(right.span))
        out.append((node, 1 + max(dl, dr)))

    for op, operand, depth in zip(ops, operands[1:], depths[1:]):
        while pending and _PRECEDENCE[pending[-1]] >= _PRECEDENCE[op]:
            reduce()
        pending.append(op)
        out.append((operand, depth))
    while pending:
        reduce()
    return out[0]
