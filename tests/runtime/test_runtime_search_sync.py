"""The search without a host read per step (issue 16) finds exactly what the search before
it found (bench/search_reference.py, the old code, run here on the same models), whatever
the check interval; and the host reads the device only at the checks and once at the end."""

import sys

import pytest
import torch
from conftest import ROOT
from test_runtime_beam import FAMILIES, build, sources, words_for

from adl.runtime.data.tokenizer import EOS
from adl.runtime.decode import search
from adl.runtime.decode.search import beam, check_every, greedy

sys.path.insert(0, str(ROOT / "bench"))
from search_reference import beam_reference, greedy_reference  # noqa: E402


def eos_prone(model, bias: float):
    """The model with its eos logit raised: hypotheses end at many different steps."""
    with torch.no_grad():
        model.output.bias[EOS] += bias
    return model


def same_hypotheses(new, old):
    assert [[h.tokens for h in hyps] for hyps in new] == [[h.tokens for h in hyps] for hyps in old]
    for a, b in zip(new, old):
        for x, y in zip(a, b):
            assert x.score == pytest.approx(y.score, abs=1e-5)
            assert x.normalized == pytest.approx(y.normalized, abs=1e-5)


@pytest.mark.parametrize("family", FAMILIES)
def test_the_new_search_finds_what_the_old_one_found(family, monkeypatch):
    src = sources(7, seed=12)
    limit = torch.tensor([3, 12, 7, 1, 9, 12, 5])
    early, lengths = False, set()
    for bias in (0.0, 1.0):  # raising eos makes hypotheses finish at many steps
        model = eos_prone(build(family, seed=11), bias)
        words = words_for(model, src)
        old_greedy = greedy_reference(model, src, words, limit)
        old_beam = beam_reference(model, src, 3, words, limit, "gnmt", 0.6, nbest=3)
        for every in (1, 3):
            # greedy drops finished rows at once, once they are a quarter, or never
            for share in (0.0, 0.25, 1.0):
                monkeypatch.setattr(search, "DROP_SHARE", share)
                assert greedy(model, src, words, limit, every=every) == old_greedy
            new_beam = beam(model, src, 3, words, limit, "gnmt", 0.6, 3, every=every)
            same_hypotheses(new_beam, old_beam)
        early |= any(len(h) < lim for h, lim in zip(old_greedy, limit.tolist()))
        lengths |= {len(h.tokens) for hyps in old_beam for h in hyps}
    assert early and len(lengths) > 2  # the test saw sentences end at several steps


@pytest.mark.parametrize(
    "size, nbest, penalty", [(1, 1, "fairseq"), (4, 4, "none"), (5, 2, "fairseq")]
)
def test_beam_sizes_and_penalties_match_the_old_search(size, nbest, penalty):
    model = eos_prone(build("transformer", seed=13, vocab=12), 1.5)  # few words: many ties
    src = sources(9, seed=14, vocab=12)
    old = beam_reference(model, src, size, max_len=10, penalty=penalty, nbest=nbest)
    for every in (1, 4):
        new = beam(model, src, size, max_len=10, penalty=penalty, nbest=nbest, every=every)
        same_hypotheses(new, old)


def test_a_float64_model_is_searched_alike_on_the_host_and_on_the_device():
    """The device's bookkeeping keeps its scores in the model's precision: a float64 model
    (a gradient check's, a reference's) finds the same hypotheses with either path."""
    model = eos_prone(build("transformer", seed=15), 1.0).double()
    src = sources(5, seed=16)
    host = beam(model, src, 3, max_len=10, nbest=3, every=1)
    device = beam(model, src, 3, max_len=10, nbest=3, every=2)
    same_hypotheses(device, host)
    assert isinstance(device[0][0].score, float)


class Reads:
    """Counts the host's reads of tensors (each a device synchronisation on a GPU)."""

    METHODS = ("tolist", "item", "nonzero", "__bool__", "__int__", "__float__", "numpy")

    def __init__(self, monkeypatch):
        self.count = 0
        for name in self.METHODS:
            original = getattr(torch.Tensor, name)
            monkeypatch.setattr(torch.Tensor, name, self.counting(original))

    def counting(self, original):
        def read(tensor, *args, **kwargs):
            self.count += 1
            return original(tensor, *args, **kwargs)

        return read


class Steps:
    """A model that counts its decoding steps."""

    def __init__(self, model):
        self.model, self.steps = model, 0
        self.needs_src_words = False

    def start(self, src, src_words=None):
        return self.model.start(src, src_words)

    def step(self, tokens, memory, state):
        self.steps += 1
        return self.model.step(tokens, memory, state)


@pytest.mark.parametrize("search", ["greedy", "beam"])
def test_the_host_reads_only_every_few_steps_and_at_the_end(search, monkeypatch):
    model = Steps(build("transformer", seed=15))
    src = sources(6, seed=16)
    reads = Reads(monkeypatch)
    with torch.no_grad():
        model.model.start(src)  # encoding reads the padding mask (once a batch, not a step)
    once = reads.count + 1  # + the largest length limit (a host tensor)
    reads.count = 0
    if search == "greedy":
        greedy(model, src, max_len=20, every=4)
        at_end = 1  # out.tolist()
    else:
        beam(model, src, 3, max_len=20, every=4)
        at_end = 4  # the finished tokens, scores, lengths and counts
    checks = model.steps // 4 + 1
    assert model.steps >= 8
    assert reads.count <= once + checks + at_end, (reads.count, model.steps)


def test_the_check_interval():
    assert check_every(torch.device("cpu")) == 1
    assert check_every(torch.device("cuda")) == 8
    assert check_every(torch.device("cpu"), 5) == 5
    with pytest.raises(ValueError):
        check_every(torch.device("cpu"), 0)
