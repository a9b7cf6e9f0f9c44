"""Issue 25: attention that is not learned costs what it should. A decoding step of the
hard-coded layers does the same work whatever came before it; the fixed and Gaussian forms
equal the papers' matrices (adl.patterns) at any length and padding; their training passes
keep no (batch x queries x keys) tensor for the backward pass."""

import pytest
import torch
from models import identity
from torch.utils._python_dispatch import TorchDispatchMode

import adl
from adl import patterns as P
from adl.models import build_network
from adl.nn import Context, DecodeState, Memory
from adl.nn.fixed import FixedSelfAttention
from adl.nn.gaussian import DENSE_UNTIL


class Work(TorchDispatchMode):
    """Counts the elements every operation writes: the work of what runs inside."""

    def __init__(self):
        super().__init__()
        self.elements = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        for t in out if isinstance(out, (tuple, list)) else [out]:
            if isinstance(t, torch.Tensor):
                self.elements += t.numel()
        return out


def layer(text, role, d=16, **kw):
    program = adl.check(text, role=role, d_model=d, heads=2, dropout=0.0, **kw)
    return build_network(program, program.network)[0].chain.layers[0].eval()


def step_work(module, before: int, S: int = 30) -> int:
    """Elements written by one decoding step after ``before`` earlier steps."""
    torch.manual_seed(0)
    memory = Memory(torch.randn(2, S, 16), None)
    state = DecodeState()
    with torch.no_grad():
        for _ in range(before):
            module(torch.randn(2, 1, 16), Context("decoder", memory=memory, state=state))
            state.offset += 1
        with Work() as work:
            module(torch.randn(2, 1, 16), Context("decoder", memory=memory, state=state))
    return work.elements


@pytest.mark.parametrize(
    "text",
    [
        "gauss_src_att(l, r, ratio=1.0)",
        "gauss_src_att(c, ratio=0.5, sigma=2.0)",
        "gauss_att(l, c)",
        "gauss_att(-3, c, window=3)",
    ],
)
def test_a_decoding_step_does_the_same_work_after_10_and_200_tokens(text):
    module = layer(text, "decoder", source_d=16)
    assert step_work(module, 10) == step_work(module, 200) > 0


def test_learned_self_attention_step_grows_with_the_prefix():
    """The counter sees the growth it is there to catch: a learned self-attention step reads
    every earlier key."""
    module = layer("mh_dot_self_att", "decoder")
    assert step_work(module, 200) > step_work(module, 10)


@pytest.mark.parametrize(
    "text",
    [
        "gauss_att(l, r)",
        "gauss_att(l, c)",
        "gauss_att(-2, 1, sigma=1.5)",
        "gauss_att(r, window=3)",
        "gauss_att(l, index=true)",
    ],
)
@pytest.mark.parametrize("role", ["encoder", "decoder"])
def test_gaussian_self_attention_every_form_equals_the_matrices(text, role):
    """Short (dense) and long (banded) full passes, with padding, against adl.patterns."""
    module = identity(layer(text, role, d=8))
    offsets = module.offsets
    for T in (20, DENSE_UNTIL + 37):
        lengths = torch.tensor([T, T - 7, 3])
        pad = torch.arange(T) >= lengths.unsqueeze(1)
        x = torch.randn(3, T, 8)
        got = module(x, Context(role, pad=pad))
        for b, n in enumerate(lengths.tolist()):
            w = [
                P.gaussian(
                    n,
                    o,
                    module.sigma,
                    window=module.window,
                    index=module.index,
                    causal=role == "decoder",
                )
                for o in offsets
            ]
            want = torch.cat(
                [w[h] @ x[b, :n, lo:hi] for h, (lo, hi) in enumerate(module.blocks)], -1
            )
            torch.testing.assert_close(got[b, :n], want, rtol=1e-5, atol=1e-5)


def test_gaussian_cross_attention_forms_and_steps_agree():
    torch.manual_seed(0)
    S, T = DENSE_UNTIL + 60, 90
    module = identity(layer("gauss_src_att(l, r, ratio=1.3)", "decoder", d=8, source_d=8))
    memory = Memory(torch.randn(2, S, 8), torch.arange(S) >= torch.tensor([S, 150]).unsqueeze(1))
    x = torch.zeros(2, T, 8)
    v = memory.top.masked_fill(memory.pad.unsqueeze(-1), 0.0)
    w = [P.gaussian_cross(T, S, o, 1.3) for o in (-1, 1)]
    want = torch.cat([w[0] @ v[..., :4], w[1] @ v[..., 4:]], -1)
    for form in (None, True, False):  # by length (banded here), banded, dense
        module.banded = form
        torch.testing.assert_close(
            module(x, Context("decoder", memory=memory)), want, rtol=1e-5, atol=1e-6
        )
    module.banded = None
    state, steps = DecodeState(), []
    for t in range(T):
        steps.append(module(x[:, t : t + 1], Context("decoder", memory=memory, state=state)))
        state.offset += 1
    torch.testing.assert_close(torch.cat(steps, 1), want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("unit", ["token", "word"])
@pytest.mark.parametrize("T", [9, 70])  # 9: the cached dense weights; 70: the O(T) forms
def test_fixed_patterns_equal_the_matrices_with_padding(unit, T):
    torch.manual_seed(T)
    names = ",".join(P.PATTERNS)
    module = layer(f"fixed_self_att({names}, learned=0, unit={unit})", "encoder", d=8 * 4)
    assert isinstance(module, FixedSelfAttention)
    lengths = torch.tensor([T, T - 4, 2])
    pad = torch.arange(T) >= lengths.unsqueeze(1)
    starts = torch.rand(3, T) < 0.6
    starts[:, 0] = True
    words = (starts.cumsum(1) - 1).masked_fill(pad, 0)
    ctx = Context("encoder", pad=pad)
    ctx.extra["words"] = words
    x = torch.randn(3, T, 32)
    v = module.value(x).view(3, T, 8, 4).transpose(1, 2)  # (B, H, T, d)
    want = module.weights(3, T, pad, words) @ v  # the dense matrices of adl.patterns
    captured = {}  # the heads' output, before the output projection
    module.out.register_forward_hook(lambda m, i, o: captured.setdefault("in", i[0]))
    module(x, ctx)
    got = captured["in"].view(3, T, 8, 4).transpose(1, 2)
    real = ~pad
    torch.testing.assert_close(
        got.transpose(1, 2)[real], want.transpose(1, 2)[real], rtol=1e-5, atol=1e-5
    )


def saved_numels(fn) -> list[int]:
    sizes = []

    def pack(t):
        sizes.append(t.numel())
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        fn()
    return sizes


@pytest.mark.parametrize(
    "text, role",
    [
        ("gauss_att(l, r)", "encoder"),
        ("gauss_att(l, c)", "decoder"),
        ("gauss_src_att(l, r, ratio=1.0)", "decoder"),
        ("fixed_self_att(learned=1)", "encoder"),
    ],
)
@pytest.mark.parametrize("T", [40, DENSE_UNTIL + 20])
def test_no_attention_probabilities_are_kept_for_backward(text, role, T):
    """Nothing the size of (batch x queries x keys) is saved: the weights are constants."""
    B = 6
    module = layer(text, role, d=32, source_d=32).train()
    memory = Memory(torch.randn(B, T, 32), None)
    x = torch.randn(B, T, 32, requires_grad=True)
    sizes = saved_numels(lambda: module(x, Context(role, memory=memory)).sum().backward())
    assert sizes and max(sizes) < B * T * T


class Copies(TorchDispatchMode):
    """Counts the elements of every new tensor an operation makes: what a view of a tensor
    it was given (a slice of a cache) does not count."""

    def __init__(self):
        super().__init__()
        self.elements = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        given = {
            t.untyped_storage().data_ptr()
            for t in torch.utils._pytree.tree_leaves((args, kwargs))
            if isinstance(t, torch.Tensor)
        }
        for t in out if isinstance(out, (tuple, list)) else [out]:
            if isinstance(t, torch.Tensor) and t.untyped_storage().data_ptr() not in given:
                self.elements += t.numel()
        return out


def step_copies(module, before: int) -> int:
    state = DecodeState()
    with torch.no_grad():
        for _ in range(before):
            module(torch.randn(2, 1, 16), Context("decoder", state=state))
            state.offset += 1
        with Copies() as copies:
            module(torch.randn(2, 1, 16), Context("decoder", state=state))
    return copies.elements


def test_a_learned_self_attention_step_does_not_copy_the_prefix():
    """The cache grows in place (adl.nn.context.Prefix): a step writes its own keys and
    values, not the prefix again. 20 and 100 earlier tokens: neither step grows a buffer.
    What a step makes grows only by its scores (one a key and head: a CPU step attends
    through adl.nn.attention.one_query, which keeps them), far less than the 80 more
    positions' keys (a copy of the prefix would add their keys and values)."""
    module = layer("mh_dot_self_att", "decoder")
    small, large = step_copies(module, 20), step_copies(module, 100)
    keys = 80 * 2 * 16  # 80 positions more, 2 sentences, d_model 16
    assert 0 < small <= large <= small + 2 * 80 * 2 * module.heads < small + keys


@pytest.mark.parametrize("in_place", [False, True])
def test_the_prefix_cache_equals_concatenation_through_growth_and_reorders(in_place):
    from adl.nn.context import Prefix

    g = torch.Generator().manual_seed(0)
    cache, k_ref, v_ref = Prefix(), torch.empty(6, 2, 0, 3), torch.empty(6, 2, 0, 3)
    for step in range(40):
        n = 5 if step == 0 else 1  # a joint stream starts with the whole source
        k = torch.randn(k_ref.size(0), 2, n, 3, generator=g)
        v = torch.randn(k_ref.size(0), 2, n, 3, generator=g)
        k_ref, v_ref = torch.cat([k_ref, k], 2), torch.cat([v_ref, v], 2)
        got_k, got_v = cache.append(k, v)
        assert torch.equal(got_k, k_ref) and torch.equal(got_v, v_ref)
        rows = k_ref.size(0) if step != 29 else 4  # finished sentences leave once
        index = torch.randint(0, k_ref.size(0), (rows,), generator=g)
        if in_place and step % 3 == 0:  # most rows staying, as in a beam search
            index = torch.where(torch.rand(rows, generator=g) < 0.7, torch.arange(rows), index)
        cache.reorder(index, in_place)
        k_ref, v_ref = k_ref.index_select(0, index), v_ref.index_select(0, index)
    assert cache.k is not None and cache.k.size(2) == 64  # 16, 32, 64: grown by doubling


def test_a_reorder_in_place_copies_only_the_rows_that_move():
    from adl.nn.context import Prefix

    cache = Prefix()
    for _ in range(50):
        cache.append(*torch.randn(2, 8, 4, 1, 16))
    row = 4 * 50 * 16  # one row of keys: heads x positions x size
    index = torch.arange(8)
    with Copies() as copies:
        cache.reorder(index, in_place=True)
    assert copies.elements < row  # nothing moves: no row copied
    index[3] = 5
    k5 = cache.k[5, :, :50].clone()
    with Copies() as copies:
        cache.reorder(index, in_place=True)
    assert row * 2 <= copies.elements < row * 3  # row 5's keys and values, once each
    assert torch.equal(cache.k[3, :, :50], k5)
    with Copies() as copies:
        cache.reorder(index)  # the whole copy
    assert copies.elements >= 8 * row * 2


def test_hard_retrieval_picks_from_a_view_of_a_cache_without_a_copy():
    from adl.nn.context import Prefix
    from adl.nn.retrieval import pick

    g = torch.Generator().manual_seed(1)
    cache = Prefix()
    for n in (7, 1, 1):
        k, v = cache.append(*torch.randn(2, 3, 4, n, 5, generator=g))
    scores = torch.randn(3, 4, 2, v.size(2), generator=g)
    assert not v.is_contiguous()
    expected = pick(scores, v.contiguous())
    with Copies() as copies:
        found = pick(scores, v)
    assert torch.equal(found, expected)
    assert copies.elements < v.numel()  # the index, the rows picked; not the values
    by_hand = torch.stack(
        [torch.stack([v[b, h, scores[b, h].argmax(-1)] for h in range(4)]) for b in range(3)]
    )
    assert torch.equal(found, by_hand)
