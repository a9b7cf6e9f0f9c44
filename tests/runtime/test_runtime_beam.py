"""Beam search: beam 1 is greedy, the cache changes nothing, n-best is ordered, the
length penalties and limits hold, and every architecture family decodes incrementally
exactly as with full recomputation."""

import math

import pytest
import torch
from runtime_helpers import DEC, ENC

import adl
from adl.runtime.data.tokenizer import BOS, EOS, PAD
from adl.runtime.decode.hypotheses import Hypothesis, length_penalty
from adl.runtime.decode.search import FullRecompute, beam, greedy, pad_batch

FAMILIES = {
    "transformer": (ENC, DEC),
    "rnn": (
        "dropout -> birnn -> repeat(2, res_d(rnn))",
        "dropout -> repeat(2, res_d(rnn)) -> concat(id, mlp_att) -> ff",
    ),
    "cnn": (
        "pos -> repeat(2, res_d(cnn(glu)))",
        "pos -> repeat(2, res_d(cnn(k=3)) -> res_d(dot_src_att))",
    ),
    "gaussian": (
        "pos -> repeat(2, res_nd(gauss_att(l, r)) -> res_nd(ffl)) -> norm",
        "pos -> repeat(2, res_nd(gauss_att(l, c, window=3)) -> res_nd(gauss_src_att(l, c, r)) "
        "-> res_nd(mh_dot_src_att)) -> norm",
    ),
    "hard retrieval": (
        ENC,
        "pos -> repeat(2, res_nd(hard_self_att) -> res_nd(hard_src_att) -> res_nd(ffl)) -> norm",
    ),
    "fixed patterns": ("pos -> repeat(2, res_nd(fixed_self_att) -> res_nd(ffl)) -> norm", DEC),
    "joint": ("pos -> repeat(2, res_nd(mh_dot_self_att(window=3)) -> res_nd(ffl)) -> norm", None),
}


def build(family, seed=0, vocab=30):
    torch.manual_seed(seed)
    enc, dec = FAMILIES[family]
    if dec is None:
        return adl.build(
            joint=enc, src_vocab=vocab, tgt_vocab=vocab, d_model=32, heads=4, dropout=0.0
        ).eval()
    return adl.build(
        enc,
        dec,
        src_vocab=vocab,
        tgt_vocab=vocab,
        d_model=32,
        heads=4,
        dropout=0.0,
        length_ratio=1.0,
    ).eval()


def sources(n=5, seed=1, vocab=30):
    g = torch.Generator().manual_seed(seed)
    seqs = [
        torch.randint(4, vocab, (int(length),), generator=g).tolist()
        for length in torch.randint(1, 9, (n,), generator=g)
    ]
    return pad_batch(seqs)


def words_for(model, src):
    if not model.needs_src_words:
        return None
    return (torch.cumsum((src % 2 == 0).long(), 1) - 1).clamp_min(0).masked_fill(src.eq(PAD), 0)


@pytest.mark.parametrize("family", FAMILIES)
def test_incremental_decoding_equals_full_recompute(family):
    """Token for token, greedy and beam search, with the cache and without any."""
    model = build(family)
    src = sources()
    words = words_for(model, src)
    assert greedy(model, src, words, 12) == greedy(FullRecompute(model), src, words, 12)
    cached = beam(model, src, 3, words, 12, nbest=3)
    full = beam(FullRecompute(model), src, 3, words, 12, nbest=3)
    assert [[h.tokens for h in hyps] for hyps in cached] == [
        [h.tokens for h in hyps] for hyps in full
    ]
    for a, b in zip(cached, full):
        for x, y in zip(a, b):
            assert x.score == pytest.approx(y.score, abs=1e-4)


@pytest.mark.parametrize("family", ["transformer", "rnn", "joint"])
def test_beam_1_is_greedy(family):
    model = build(family, seed=2)
    src = sources(8, seed=3)
    got = [hyps[0].tokens for hyps in beam(model, src, 1, max_len=10)]
    assert got == greedy(model, src, max_len=10)


def sequence_logprob(model, src_row, tokens):
    tgt = torch.tensor([[BOS] + tokens])
    with torch.no_grad():
        logp = model(src_row.unsqueeze(0), tgt).log_softmax(-1)[0]
    full = tokens + [EOS]
    return sum(float(logp[i, t]) for i, t in enumerate(full))


def test_scores_are_the_model_log_probabilities_and_nbest_is_ordered():
    model = build("transformer", seed=4)
    src = sources(4, seed=5)
    for row, hyps in enumerate(beam(model, src, 4, max_len=8, nbest=4, penalty="gnmt", alpha=0.6)):
        assert 1 <= len(hyps) <= 4
        real = src[row][src[row] != PAD]
        for h in hyps:
            assert h.score == pytest.approx(sequence_logprob(model, real, h.tokens), abs=1e-4)
            assert h.normalized == pytest.approx(
                h.score / length_penalty(len(h.tokens) + 1, "gnmt", 0.6)
            )
            assert len(h.tokens) <= 8 and EOS not in h.tokens and BOS not in h.tokens
        assert [h.normalized for h in hyps] == sorted((h.normalized for h in hyps), reverse=True)
        assert len({tuple(h.tokens) for h in hyps}) == len(hyps)


class CountingRows:
    """A model whose steps record how many rows they score."""

    def __init__(self, model):
        self.model, self.rows = model, []
        self.needs_src_words = model.needs_src_words

    def start(self, src, src_words=None):
        return self.model.start(src, src_words)

    def step(self, tokens, memory, state):
        self.rows.append(tokens.numel())
        return self.model.step(tokens, memory, state)


def test_the_first_step_scores_one_row_a_sentence():
    """bos is each sentence's one hypothesis: the first step scores B rows, the next B x k
    (until a sentence is done), and the translations are those of the full recompute."""
    model = build("transformer", seed=6)
    src = sources(5, seed=7)
    spy = CountingRows(model)
    found = beam(spy, src, 3, max_len=12, every=1)
    assert spy.rows[:2] == [5, 15]
    full = beam(FullRecompute(model), src, 3, max_len=12)
    assert [[h.tokens for h in hyps] for hyps in found] == [
        [h.tokens for h in hyps] for hyps in full
    ]


def test_a_vocabulary_smaller_than_twice_the_beam():
    """Six tokens (four of them special) and beam 4: the first step has fewer candidates
    than the 2k a step takes; the hypotheses are still the model's, scored as it scores them."""
    model = build("transformer", seed=8, vocab=6)
    src = sources(3, seed=9, vocab=6)
    for row, hyps in enumerate(beam(model, src, 4, max_len=4, nbest=4)):
        real = src[row][src[row] != PAD]
        assert len(hyps) == 4 and len({tuple(h.tokens) for h in hyps}) == 4
        for h in hyps:
            assert set(h.tokens) <= {4, 5}
            assert h.score == pytest.approx(sequence_logprob(model, real, h.tokens), abs=1e-4)


def test_length_penalties():
    assert length_penalty(4, "fairseq", 1.0) == 4.0
    assert length_penalty(4, "fairseq", 0.5) == 2.0
    assert length_penalty(7, "gnmt", 1.0) == 2.0
    assert length_penalty(9, "none", 1.0) == 1.0
    with pytest.raises(ValueError, match="unknown length penalty"):
        length_penalty(3, "average")


def test_length_limit_per_sentence():
    model = build("transformer", seed=6)
    src = sources(3, seed=7)
    for hyps, limit in zip(beam(model, src, 3, max_len=torch.tensor([1, 2, 5])), (1, 2, 5)):
        assert len(hyps[0].tokens) <= limit


def test_beam_finds_at_least_the_greedy_score_on_a_trained_model():
    """Trained on a copy task, beam search's model score is never below greedy's."""
    torch.manual_seed(0)
    model = adl.build(ENC, DEC, src_vocab=16, tgt_vocab=16, d_model=32, heads=4, dropout=0.0)
    opt = torch.optim.Adam(model.parameters(), 3e-3)
    g = torch.Generator().manual_seed(0)
    for _ in range(150):
        seqs = torch.randint(4, 16, (32, 6), generator=g)
        src = torch.cat([seqs, torch.full((32, 1), EOS)], 1)
        tgt = torch.cat([torch.full((32, 1), BOS), seqs, torch.full((32, 1), EOS)], 1)
        loss = torch.nn.functional.cross_entropy(
            model(src, tgt[:, :-1]).flatten(0, 1), tgt[:, 1:].flatten()
        )
        opt.zero_grad()
        loss.backward()
        opt.step()
    model.eval()
    src = pad_batch(torch.randint(4, 16, (12, 6), generator=g).tolist())
    greedy_hyps = greedy(model, src, max_len=10)
    beam_hyps = beam(model, src, 5, max_len=10, penalty="none")
    for row in range(12):
        real = src[row][src[row] != PAD]
        g_score = sequence_logprob(model, real, greedy_hyps[row])
        assert beam_hyps[row][0].score >= g_score - 1e-5
    copied = sum(h[0].tokens == src[r][src[r] > EOS].tolist() for r, h in enumerate(beam_hyps))
    assert copied >= 10  # it did learn the task


def test_hypothesis_type():
    h = Hypothesis([5, 6], -1.5, -0.5)
    assert h.tokens == [5, 6] and math.isclose(h.score, -1.5)


class SourceRows:
    """A model whose steps record the rows of the source they are given."""

    def __init__(self, model):
        self.model, self.seen = model, []
        self.needs_src_words = model.needs_src_words
        self.can_share_source = model.can_share_source

    def start(self, src, src_words=None):
        return self.model.start(src, src_words)

    def step(self, tokens, memory, state):
        self.seen.append((tokens.numel(), memory.top.size(0), memory.group))
        return self.model.step(tokens, memory, state)


@pytest.mark.parametrize("family", ["transformer", "cnn", "hard retrieval", "gaussian", "rnn"])
@pytest.mark.parametrize("every", [1, 8])
def test_a_beams_hypotheses_share_their_sentences_source(family, every, monkeypatch):
    """Where every layer that reads the source can share it (dot-product source attention,
    hard retrieval too), the k hypotheses of a sentence share one row of the source after
    the first step (no k copies); where one cannot (Gaussian, MLP attention), each keeps its
    own, as before. The hypotheses and their scores are those of a search without sharing;
    sentences leave the batch (every 1) or ride along (every 8) alike."""
    model = build(family, seed=8)
    src = sources(6, seed=9)
    words = words_for(model, src)
    spy = SourceRows(model)
    limits = torch.tensor([2, 4, 6, 9, 11, 12])  # sentences leave at different steps
    shared = beam(spy, src, 3, words, limits, nbest=3, every=every)
    sharing = family in ("transformer", "cnn", "hard retrieval")
    assert model.can_share_source() is sharing
    for rows, source_rows, group in spy.seen[1:]:
        assert (source_rows * group, group) == ((rows, 3) if sharing else (rows, 1))
    assert spy.seen[0] == (6, 6, 1)  # the first step: one row a sentence either way
    if sharing and every == 1:  # sentences left the batch while the source was shared
        assert any(rows < spy.seen[1][0] for rows, _, _ in spy.seen[1:])
    monkeypatch.setattr(type(model), "can_share_source", lambda self: False)
    plain = beam(model, src, 3, words, limits, nbest=3, every=every)
    assert [[h.tokens for h in hyps] for hyps in shared] == [
        [h.tokens for h in hyps] for hyps in plain
    ]
    for a, b in zip(shared, plain):
        for x, y in zip(a, b):
            assert x.score == pytest.approx(y.score, abs=1e-5)


def test_a_shared_source_is_not_read_by_a_layer_that_cannot_share_it():
    """A layer that reads the source itself (not what it cached of it) is refused a source
    that serves several rows a row: a wrong shape would otherwise pass silently where a
    batch has one sentence."""
    model = build("transformer", seed=10)
    memory = model.encode(sources(2, seed=11)).shared_by(3)
    assert memory.group == 3 and memory.reorder(torch.tensor([1])).group == 3
    with pytest.raises(RuntimeError, match="shared by 3 decoder rows"):
        memory.level(None)


def test_a_memory_whose_states_stayed_behind_is_not_read_again():
    """Rows that leave a greedy batch after its first step take the padding and masks with
    them, not the encoder's states (Memory.reorder's ``cached``): a layer reading those
    states from then on would read other sentences' rows, so it is refused."""
    model = build("transformer", seed=10)
    memory = model.encode(pad_batch([[5, 6], [7, 8, 9, 10], [11]]))  # padded
    memory.additive(torch.float32)
    kept = memory.reorder(torch.tensor([2, 0]), cached=True)
    assert kept.top is memory.top and kept.blocks is memory.blocks  # nothing copied
    assert torch.equal(kept.pad, memory.pad[[2, 0]])
    assert torch.equal(kept.additive(torch.float32), memory.additive(torch.float32)[[2, 0]])
    assert kept.reorder(torch.tensor([1])).cached  # it stays behind
    with pytest.raises(RuntimeError, match="left behind"):
        kept.level(None)
    assert torch.equal(memory.reorder(torch.tensor([1])).level(None), memory.top[[1]])
