"""Hypothesis strategies for ADL syntax trees (only trees the parser can produce)."""
from hypothesis import strategies as st

from adl.syntax import ast

KEYWORDS = {"true", "false", "True", "False"}
names = st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,7}", fullmatch=True).filter(
    lambda n: n not in KEYWORDS)
text = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=8)

atoms = st.one_of(
    st.builds(ast.Int, st.integers(min_value=0, max_value=10**12)),
    st.builds(ast.Float, st.floats(min_value=0, max_value=1e300, allow_nan=False,
                                   allow_infinity=False)),
    st.builds(ast.Bool, st.booleans()),
    st.builds(ast.String, text),
    st.builds(ast.Var, names),
)


def _operands(inner):
    return st.one_of(atoms, st.builds(ast.NameRef, names), st.builds(ast.Negate, inner),
                     inner)


expressions = st.recursive(
    atoms,
    lambda inner: st.one_of(
        st.builds(ast.Negate, _operands(inner)),
        st.builds(ast.BinOp, st.sampled_from("+-*/"), _operands(inner), _operands(inner)),
    ),
    max_leaves=6,
)


def _calls(values):
    args = st.lists(st.builds(ast.Argument, values, st.one_of(st.none(), names)), max_size=3)
    # positional arguments first is not required by the grammar, any order parses
    return st.builds(ast.Call, names, args.map(tuple))


chains = st.recursive(
    st.builds(ast.Chain, st.lists(st.builds(ast.Call, names), min_size=1, max_size=3).map(tuple)),
    lambda inner: st.builds(
        ast.Chain,
        st.lists(_calls(st.one_of(expressions, inner)), min_size=1, max_size=3).map(tuple)),
    max_leaves=8,
)

params = st.builds(ast.Param, names, st.one_of(st.none(), expressions, chains))


@st.composite
def definitions(draw):
    ps = draw(st.lists(params, max_size=3, unique_by=lambda p: p.name))
    # parameters without a default come first
    ps = [p for p in ps if p.default is None] + [p for p in ps if p.default is not None]
    return ast.Definition(draw(names), tuple(ps), draw(chains))


variables = st.builds(ast.Variable, names.filter(lambda n: n not in ("d_model", "heads", "dropout")),
                      st.one_of(expressions, chains))

files = st.builds(
    ast.File,
    st.lists(definitions(), max_size=3, unique_by=lambda d: d.name).map(tuple),
    st.one_of(st.none(), chains),
    variables=st.lists(variables, max_size=2, unique_by=lambda v: v.name).map(tuple),
)
