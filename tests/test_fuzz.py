"""Random text, random mutations of valid programs, and random programs of registry layers
with arguments at and beyond their limits.

Whatever the checker says of a text, only ADLError may escape it; and whatever it accepts
must build, run a forward pass (training and inference mode) and decode step by step at a
small model size, where only the project's own errors (``adl.UserError``) may escape."""

import random

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from models import words_of
from strategies import programs
from test_paper_strings import PAPER, SOCKEYE

import adl

VALID = [text for _, text, _ in PAPER + SOCKEYE]

TOKENS = [
    "->",
    "→",
    "(",
    ")",
    ",",
    "=",
    "$",
    "#",
    "\n",
    " ",
    "-",
    "+",
    "*",
    "/",
    "1",
    "0",
    "2.5",
    "'",
    '"',
    "x",
    "res",
    "repeat",
    "ffl",
    "cnn",
    "glu",
    "$d_model",
    "e9",
    "true",
    "concat(",
    "mh_dot_src_att",
    "birnn",
    "-1",
    "1e999",
    "(((",
    ")))",
    "@",
]
ROLES = ["encoder", "decoder", "joint"]


SMALL = dict(d_model=16, heads=2, dropout=0.1)
VARS = {"n": 3, "FF_NUM_HIDDEN": 64}
MEMORY = 64 << 20  # bytes: larger models are refused (an ADLError), which keeps this quick
# The partner of a network under test: a decoder reads this encoder (two blocks, so that
# encoder_block=1/2/increasing can work), an encoder is read by this decoder.
ENCODER = "pos -> repeat(2, res_nd(mh_dot_self_att) -> res_nd(ffl)) -> norm"
DECODER = "pos -> res_nd(mh_dot_self_att) -> res_nd(mh_dot_src_att) -> norm"
VOCAB = 11


def check_only_adl_errors(text: str, role: str) -> adl.Program | None:
    try:
        return adl.check(text, role=role, vars=VARS, **SMALL, max_memory=MEMORY)
    except adl.ADLError as exc:
        assert exc.diagnostics, "an ADLError always carries a diagnostic"
        str(exc)  # rendering never fails either
        return None


def build_run_decode(text: str, role: str) -> None:
    """Build what checks clean, run it forward and decode three steps; only the project's
    own errors may escape (e.g. an encoder_block the partner encoder cannot serve, or a
    learn_pos shorter than the batch)."""
    if check_only_adl_errors(text, role) is None:
        return
    options = dict(
        src_vocab=VOCAB, tgt_vocab=VOCAB, vars=VARS, length_ratio=1.2, max_memory=MEMORY, **SMALL
    )
    torch.manual_seed(0)
    try:
        if role == "joint":
            model = adl.build(joint=text, **options)
        elif role == "encoder":
            model = adl.build(text, DECODER, **options)
        else:
            model = adl.build(ENCODER, text, **options)
        src = torch.tensor([[3, 4, 5, 6, 7], [8, 9, 2, 0, 0]])
        tgt = torch.tensor([[1, 5, 6, 7], [1, 2, 3, 0]])
        words = words_of(src) if model.needs_src_words else None
        for training in (True, False):
            model.train(training)
            logits = model(src, tgt, words)
            assert logits.shape == (2, 4, VOCAB)
            if not training:
                assert torch.isfinite(logits).all(), "an accepted model computes NaN or inf"
        with torch.no_grad():
            memory, state = model.start(src, words)
            tokens = torch.ones(2, dtype=torch.long)
            for _ in range(3):
                logp = model.step(tokens, memory, state)
                assert logp.shape == (2, VOCAB) and torch.isfinite(logp).all()
                tokens = logp.argmax(-1)
    except adl.UserError as exc:
        assert str(exc)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.text(max_size=60), st.sampled_from(ROLES))
def test_random_text(text, role):
    build_run_decode(text, role)


def mutate(text: str, rnd: random.Random, edits: int) -> str:
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
            chars[min(i, j) : max(i, j)] = chars[min(i, j) : max(i, j)][::-1]
    return "".join(chars)


MUTATIONS = (
    st.sampled_from(VALID),
    st.randoms(use_true_random=False),
    st.sampled_from(ROLES),
    st.integers(min_value=0, max_value=4),
)
QUICK = settings(
    max_examples=120, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck)
)
LONG = settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))


@QUICK
@given(*MUTATIONS)
def test_mutations_of_valid_programs(text, rnd: random.Random, role, edits):
    build_run_decode(mutate(text, rnd, edits), role)


@QUICK
@given(programs())
def test_programs_of_registry_layers(program):
    role, text = program
    build_run_decode(text, role)


@pytest.mark.slow
@LONG
@given(*MUTATIONS)
def test_many_mutations_of_valid_programs(text, rnd: random.Random, role, edits):
    build_run_decode(mutate(text, rnd, edits), role)


@pytest.mark.slow
@LONG
@given(programs())
def test_many_programs_of_registry_layers(program):
    role, text = program
    build_run_decode(text, role)


def test_pathological_inputs():
    for text in [
        "(" * 5000,
        "-" * 5000 + "1",
        "a -> " * 20000 + "a",
        "f(" + "1+" * 5000 + "1)",
        "a = b -> b\nb = c -> c\nc = d -> d\nd = e -> e\ne = f -> f\nf = g -> g\n"
        "g = h -> h\nh = i -> i\ni = j -> j\nj = k -> k\nk = l -> l\nl = m -> m\n"
        "m = o -> o\no = p -> p\np = q -> q\nq = r -> r\nr = ffl -> ffl\na",
        "\x00",
        "\ufeffpos",
        "pos -> ff(99999999999999999999999999 * 1e308)",
    ]:
        build_run_decode(text, "encoder")
