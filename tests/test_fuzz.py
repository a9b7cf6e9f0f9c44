"""Random text and random mutations of valid programs: only ADLError ever escapes."""
import random

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import adl
from test_paper_strings import PAPER, SOCKEYE

VALID = [text for _, text, _ in PAPER + SOCKEYE]
TOKENS = ["->", "→", "(", ")", ",", "=", "$", "#", "\n", " ", "-", "+", "*", "/", "1", "0",
          "2.5", "'", '"', "x", "res", "repeat", "ffl", "cnn", "glu", "$d_model", "e9",
          "true", "concat(", "mh_dot_src_att", "birnn", "-1", "1e999", "(((", ")))", "@"]
ROLES = ["encoder", "decoder", "joint"]


def check_only_adl_errors(text: str, role: str) -> None:
    try:
        adl.check(text, role=role, vars={"n": 3, "FF_NUM_HIDDEN": 64})
    except adl.ADLError as exc:
        assert exc.diagnostics, "an ADLError always carries a diagnostic"
        str(exc)  # rendering never fails either


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.text(max_size=60), st.sampled_from(ROLES))
def test_random_text(text, role):
    check_only_adl_errors(text, role)


@settings(max_examples=400, deadline=None)
@given(st.sampled_from(VALID), st.randoms(use_true_random=False), st.sampled_from(ROLES),
       st.integers(min_value=1, max_value=4))
def test_mutations_of_valid_programs(text, rnd: random.Random, role, edits):
    chars = list(text)
    for _ in range(edits):
        op = rnd.randrange(3)
        i = rnd.randrange(len(chars) + 1)
        if op == 0 and chars:
            del chars[min(i, len(chars) - 1)]
        elif op == 1:
            chars[i:i] = list(rnd.choice(TOKENS))
        else:
            j = rnd.randrange(len(chars) + 1)
            chars[min(i, j):max(i, j)] = chars[min(i, j):max(i, j)][::-1]
    check_only_adl_errors("".join(chars), role)


def test_pathological_inputs():
    for text in ["(" * 5000, "-" * 5000 + "1", "a -> " * 20000 + "a", "f(" + "1+" * 5000 + "1)",
                 "a = b -> b\nb = c -> c\nc = d -> d\nd = e -> e\ne = f -> f\nf = g -> g\n"
                 "g = h -> h\nh = i -> i\ni = j -> j\nj = k -> k\nk = l -> l\nl = m -> m\n"
                 "m = o -> o\no = p -> p\np = q -> q\nq = r -> r\nr = ffl -> ffl\na",
                 "\x00", "\ufeffpos", "pos -> ff(99999999999999999999999999 * 1e308)"]:
        check_only_adl_errors(text, "encoder")
