"""Hypothesis strategies for ADL syntax trees (only trees the parser can produce)."""

from hypothesis import strategies as st

from adl.syntax import ast

KEYWORDS = {"true", "false", "True", "False"}
names = st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,7}", fullmatch=True).filter(
    lambda n: n not in KEYWORDS
)
text = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=8)

atoms = st.one_of(
    st.builds(ast.Int, st.integers(min_value=0, max_value=10**12)),
    st.builds(
        ast.Float, st.floats(min_value=0, max_value=1e300, allow_nan=False, allow_infinity=False)
    ),
    st.builds(ast.Bool, st.booleans()),
    st.builds(ast.String, text),
    st.builds(ast.Var, names),
)


def _operands(inner):
    return st.one_of(atoms, st.builds(ast.NameRef, names), st.builds(ast.Negate, inner), inner)


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
        st.lists(_calls(st.one_of(expressions, inner)), min_size=1, max_size=3).map(tuple),
    ),
    max_leaves=8,
)

params = st.builds(ast.Param, names, st.one_of(st.none(), expressions, chains))


@st.composite
def definitions(draw):
    ps = draw(st.lists(params, max_size=3, unique_by=lambda p: p.name))
    # parameters without a default come first
    ps = [p for p in ps if p.default is None] + [p for p in ps if p.default is not None]
    return ast.Definition(draw(names), tuple(ps), draw(chains))


variables = st.builds(
    ast.Variable,
    names.filter(lambda n: n not in ("d_model", "heads", "dropout")),
    st.one_of(expressions, chains),
)

files = st.builds(
    ast.File,
    st.lists(definitions(), max_size=3, unique_by=lambda d: d.name).map(tuple),
    st.one_of(st.none(), chains),
    variables=st.lists(variables, max_size=2, unique_by=lambda v: v.name).map(tuple),
)


# --- whole programs from the layer registry, with arguments at and beyond their limits -----

from adl.registry import REGISTRY  # noqa: E402
from adl.types import (  # noqa: E402
    BoolType,
    ChainType,
    ChoiceType,
    FloatType,
    IntType,
    OptionalType,
    UnionType,
)

EDGE_INTS = [0, 1, 2, 3, 4, 5, 8, 16, 1024, 4096, 4097, 65536, 1 << 20, (1 << 20) + 1]
EDGE_INTS += [2**31, 2**63 - 1, -1, -4097]
EDGE_FLOATS = [0.0, 1e-300, 1e-12, 0.009, 0.01, 0.1, 0.5, 0.999999, 1.0, 1.5, 1e6, 1e300]
SYMBOLS = ["l", "c", "r", "relu", "glu", "lstm", "top", "increasing", "decreasing", "prev"]


def _int(n: int) -> str:
    return str(n) if n >= 0 else f"-{-n}"


def _members(t) -> list:
    if isinstance(t, OptionalType):
        return _members(t.inner)
    if isinstance(t, UnionType):
        return [m for u in t.members for m in _members(u)]
    return [t]


@st.composite
def _typed(draw, t, depth: int) -> str:
    """A value of type ``t``: usually fitting, sometimes at or just beyond its limits, now
    and then of another kind."""
    if draw(st.integers(0, 9)) == 0:  # another kind altogether
        return draw(
            st.sampled_from([*SYMBOLS, "true", "2.5", "-1", "$d_model / 2", "4 * $d_model"])
        )
    t = draw(st.sampled_from(_members(t)))
    if isinstance(t, ChainType):
        return draw(chain_texts(depth + 1))
    if isinstance(t, BoolType):
        return draw(st.sampled_from(["true", "false"]))
    if isinstance(t, ChoiceType):
        return draw(st.sampled_from(t.choices))
    if isinstance(t, IntType):
        lo = t.lo if t.lo is not None else -3
        hi = t.hi if t.hi is not None else 64
        pick = draw(st.integers(0, 9))
        if pick < 6:
            return _int(draw(st.integers(lo, min(hi, lo + 8))))
        if pick < 9:
            return _int(draw(st.sampled_from([lo, hi, hi + 1, lo - 1])))
        return _int(draw(st.sampled_from(EDGE_INTS)))
    if isinstance(t, FloatType):
        lo = t.lo if t.lo is not None else 0.0
        hi = t.hi if t.hi is not None else 100.0
        pick = draw(st.integers(0, 9))
        if pick < 6:
            return repr(draw(st.floats(lo, min(hi, lo + 4), exclude_max=t.hi_open)))
        if pick < 9:
            return repr(draw(st.sampled_from([lo, hi, hi * 1.01 + 1e-9, lo * 0.99])))
        return repr(draw(st.sampled_from(EDGE_FLOATS)))
    return draw(st.sampled_from(SYMBOLS))


@st.composite
def layer_texts(draw, role: str, depth: int = 0) -> str:
    specs = [
        s
        for s in REGISTRY
        if (role in s.roles or draw(st.integers(0, 19)) == 0)
        and (depth < 2 or not any(p.is_chain for p in s.params))
    ]
    spec = draw(st.sampled_from(specs))
    name = draw(st.sampled_from([spec.name, *spec.aliases]))
    args = []
    variadic = any(p.variadic for p in spec.params)
    for p in spec.params:
        if p.variadic:
            count = draw(st.integers(1 if p.is_chain else 0, 3))
            args += [draw(_typed(p.type, depth)) for _ in range(count)]
            continue
        if not p.required and draw(st.integers(0, 2)) != 0:
            continue
        value = draw(_typed(p.type, depth))
        # after a variadic parameter's values, the others must be keywords
        if variadic or (not p.required and draw(st.booleans())):
            args.append(f"{draw(st.sampled_from([p.name, *p.aliases]))}={value}")
        else:
            args.append(value)
    return f"{name}({', '.join(args)})" if args else name


@st.composite
def chain_texts(draw, depth: int = 0, role: str = "encoder") -> str:
    n = draw(st.integers(1, 3 if depth == 0 else 2))
    return " -> ".join(draw(layer_texts(role, depth)) for _ in range(n))


@st.composite
def programs(draw) -> tuple[str, str]:
    """(role, text): a network chain of registry layers, sometimes through a block."""
    role = draw(st.sampled_from(["encoder", "decoder", "joint"]))
    body = draw(chain_texts(0, role))
    if draw(st.integers(0, 3)) == 0:
        return role, f"blk(x) = res_nd(x)\nblk({draw(chain_texts(1, role))}) -> {body}"
    return role, body
