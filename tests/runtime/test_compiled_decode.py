"""A decoding step over a static cache, eager and compiled (adl.runtime.decode.compiled):
the same translations as the model's own step, one graph for every step, the layers it
cannot take refused by name."""

import pytest
import torch
from test_runtime_beam import FAMILIES, build, sources

import adl
from adl.errors import InputError
from adl.runtime.decode.compiled import BUCKET, CompiledStep, unsupported
from adl.runtime.decode.search import beam, greedy, pad_batch
from adl.runtime.errors import ConfigError

LEARNED = (
    "learn_pos(max_seq_len=40) -> repeat(2, res_nd(mh_dot_self_att) -> res_nd(mh_dot_src_att) "
    "-> res_nd(ffl)) -> norm"
)
MLP = "pos -> res_d(mh_dot_self_att) -> concat(id, mlp_src_att) -> ff"


def static(model, len_a=1.0, len_b=12, mode="default"):
    """The step over a static cache, run eagerly (``compiled`` is the uncompiled step): the
    cache and masks without torch.compile. ``mode`` reduce-overhead: the whole buffers read
    (CUDA graphs' shapes), default: the positions written so far."""
    steps = CompiledStep(model, mode)
    steps.compiled = steps.next_logp
    steps.plan(len_a, len_b, None)
    return steps


def tokens(hypotheses):
    return [[h.tokens for h in hyps] for hyps in hypotheses]


def build_decoder(dec, seed=0, vocab=30):
    torch.manual_seed(seed)
    enc = FAMILIES["transformer"][0]
    kw = dict(src_vocab=vocab, tgt_vocab=vocab, d_model=32, heads=4, dropout=0.0)
    return adl.build(enc, dec, length_ratio=1.0, **kw).eval()


MODELS = {
    "transformer": lambda: build("transformer"),
    "hard retrieval": lambda: build("hard retrieval"),
    "learned positions": lambda: build_decoder(LEARNED),
    "mlp source attention": lambda: build_decoder(MLP),
}


@pytest.mark.parametrize("mode", ["default", "reduce-overhead"])
@pytest.mark.parametrize("name", MODELS)
def test_a_static_cache_finds_the_translations_of_the_growing_one(name, mode):
    """Greedy and beam search (nbest 3) over two batches, reading the positions written so
    far (default) or the whole buffers (reduce-overhead's CUDA graphs): the tokens of every
    hypothesis and their scores (to float32 rounding: the masked keys change the order of no
    sum, but the fused attention may block them otherwise)."""
    model = MODELS[name]()
    steps = static(model, mode=mode)
    assert steps.whole == (mode == "reduce-overhead")
    for seed, n in ((1, 5), (4, 9)):
        src = sources(n, seed)
        assert greedy(steps, src, None, 12) == greedy(model, src, None, 12)
        found, eager = (
            beam(steps, src, 3, None, 12, nbest=3),
            beam(model, src, 3, None, 12, nbest=3),
        )
        assert tokens(found) == tokens(eager)
        for a, b in zip(found, eager):
            for x, y in zip(a, b):
                assert x.score == pytest.approx(y.score, abs=1e-4)


def test_the_cache_holds_the_search_s_longest_translation_rounded_up():
    steps = static(build("transformer"), len_a=1.5, len_b=10)
    # sources of 7 tokens + eos: at most int(7 x 1.5 + 10) = 20 tokens and the eos step: 21
    # steps with one spare -> 22 positions, rounded up to the bucket
    assert steps.capacity(8) == 32 == 2 * BUCKET
    steps.plan(1.5, 10, 12)  # a cap (the model's target positions) bounds it
    assert steps.capacity(8) == BUCKET
    memory, state = steps.start(pad_batch([[5, 6, 7]]))
    assert state.static and state.capacity == BUCKET


@torch.no_grad()
def test_a_step_reads_the_positions_written_and_a_reorder_copies_only_those():
    """Reading the written positions: each step's keys are the growing cache's (the same
    values, as long as the positions decoded), a sinusoid is its table's row (the eager
    step's value, bit for bit), and a reorder that drops a row and one that keeps every row
    (a beam's, in place) leave the written positions as the growing cache's reorders do."""
    model = build("transformer")
    steps = static(model)
    src = sources(3, 0)
    memory, state = steps.start(src)
    memory_eager, eager = model.start(src)
    token = torch.tensor([5, 6, 7])
    for t in range(4):
        steps.step(token, memory, state)
        model.step(token, memory_eager, eager)
        if t == 1:
            state.reorder(torch.tensor([1, 1, 0]), in_place=True)
            eager.reorder(torch.tensor([1, 1, 0]), in_place=True)
        if t == 2:
            keep = torch.tensor([2, 0])
            state.reorder(keep)
            eager.reorder(keep)
            memory, memory_eager = memory.reorder(keep), memory_eager.reorder(keep)
            token = token[:2]
    assert state.offset == eager.offset == 4 and not state.whole
    for key, entry in state.cache.items():
        prefix, grown = entry["prefix"], eager.cache[key]["prefix"]
        assert prefix.k.size(2) == state.capacity > 4
        assert torch.equal(prefix.k[:, :, :4], grown.k[:, :, :4])
        assert torch.equal(prefix.v[:, :, :4], grown.v[:, :, :4])
    positions = model.decoder.chain.layers[0]
    table = next(iter(positions.tables.values()))
    assert table.size(0) >= state.capacity
    assert torch.equal(table[3], positions.made[(3, 1, torch.device("cpu"), torch.float32)][0, 0])


def test_a_step_past_the_cache_is_refused():
    steps = static(build("transformer"), len_a=0.0, len_b=1)
    memory, state = steps.start(pad_batch([[5, 6, 7]]))
    token = torch.tensor([5])
    for _ in range(state.capacity):
        steps.step(token, memory, state)
    with pytest.raises(InputError, match=f"holds {BUCKET} positions"):
        steps.step(token, memory, state)


def test_a_state_turns_static_before_its_first_step_only():
    model = build("transformer")
    memory, state = model.start(pad_batch([[5, 6]]))
    model.step(torch.tensor([5]), memory, state)
    with pytest.raises(RuntimeError, match="before its first step"):
        state.make_static(16, "cpu")


@pytest.mark.parametrize(
    "model, why",
    [
        (lambda: build("rnn"), "rnn: its decoding step keeps state of its own"),
        (lambda: build("cnn"), "cnn: its decoding step keeps state of its own"),
        (lambda: build("gaussian"), "gauss_att: its decoding step keeps state of its own"),
        (lambda: build("joint"), "a JointModel"),
        (
            lambda: build_decoder("pos -> res_nd(mh_dot_self_att(window=3)) -> norm"),
            "mh_dot_self_att: a window keeps only its last keys",
        ),
    ],
)
def test_a_layer_the_static_cache_cannot_take_is_refused_by_name(model, why):
    m = model()
    assert any(why in line for line in unsupported(m))
    with pytest.raises(ConfigError, match="cannot decode through a compiled step"):
        CompiledStep(m)


def test_an_unknown_mode_and_an_ensemble_are_refused():
    with pytest.raises(ConfigError, match="compiled must be one of"):
        CompiledStep(build("transformer"), "fast")


@pytest.mark.slow
def test_the_compiled_step_is_one_graph_and_translates_as_the_eager_search():
    """torch.compile over the static cache: batches of other sizes (rows, source widths,
    cache positions), greedy and beams of 2 to 4; the same tokens as the model's own step;
    no graph break, and at most two graphs in all whatever the batch (the rows and the
    positions written so far are dynamic sizes from the first graph, each a symbol of its
    own: the first batch's cache rows equal its tokens' and its positions a table's, which
    torch's "duck" sizing made one symbol, and three more graphs; a beam's shared source is
    the second; torch would give a size of 1 a graph of its own: a step of one sentence
    runs eagerly)."""
    from torch._dynamo.utils import counters

    torch._dynamo.reset()
    counters.clear()
    model = build("transformer")
    steps = CompiledStep(model)
    batches = ((8, 1, 20), (6, 2, 20), (11, 4, 8), (4, 1, 12), (3, 4, 12), (5, 3, 12))
    for seed, (n, k, len_b) in enumerate(batches):
        steps.plan(1.0, len_b, None)
        src = sources(n, seed)
        try:
            if k == 1:
                compiled, eager = greedy(steps, src, None, len_b), greedy(model, src, None, len_b)
            else:
                found = beam(steps, src, k, None, len_b)
                compiled, eager = tokens(found), tokens(beam(model, src, k, None, len_b))
        except ConfigError as exc:  # e.g. inductor's code under ATEN_CPU_CAPABILITY=default
            pytest.skip(f"torch.compile cannot build a step here: {exc}")
        assert compiled == eager
    # limits that leave one sentence running at the end (greedy: one row; beam: one
    # sentence's rows around its one source row): its steps run eagerly, not as a graph
    # made for a size of 1
    src, limits = sources(6, 3), torch.tensor([2, 2, 3, 3, 2, 14])
    steps.plan(1.0, 14, None)
    assert greedy(steps, src, None, limits) == greedy(model, src, None, limits)
    found, eager = beam(steps, src, 3, None, limits), beam(model, src, 3, None, limits)
    assert tokens(found) == tokens(eager)
    assert not counters["graph_break"]
    assert counters["stats"]["unique_graphs"] <= 2


def test_a_step_torch_compile_cannot_build_is_a_clear_error(monkeypatch):
    """Where torch.compile's C++ compiler fails (inductor's code does not compile for
    ATEN_CPU_CAPABILITY=default in torch 2.13, a machine may have no compiler), the search
    fails with a ConfigError that names the compiler's error and says what to do, not with
    the compiler's trace; any other error passes through as it is."""
    from torch._dynamo.exc import BackendCompilerFailed
    from torch._inductor.exc import CppCompileError

    model = build("transformer")
    steps = CompiledStep(model)
    steps.plan(1.0, 12, None)
    said = "/tmp/k.cpp:96:37: error: 'at::vec' has not been declared"

    def fails(*args):
        cpp = CppCompileError(["g++", "/tmp/k.cpp"], said)
        raise BackendCompilerFailed(fails, cpp, None) from cpp

    monkeypatch.setattr(steps, "compiled", fails)
    with pytest.raises(ConfigError) as caught:
        greedy(steps, sources(3, 0), None, 12)
    message = str(caught.value)
    assert "could not build the decoding step" in message
    assert "CppCompileError: C++ compile error: 'at::vec' has not been declared" in message
    assert "decode without --compiled" in message

    def other(*args):
        raise ValueError("not a compile failure")

    monkeypatch.setattr(steps, "compiled", other)
    with pytest.raises(ValueError, match="not a compile failure"):
        greedy(steps, sources(3, 0), None, 12)
