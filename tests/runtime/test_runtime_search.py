"""Greedy search through the incremental interface agrees with full forward passes."""

import torch
from runtime_helpers import DEC, ENC

import adl
from adl.runtime.data.tokenizer import BOS, EOS, PAD
from adl.runtime.decode.search import greedy, pad_batch


def small_model(seed=0):
    torch.manual_seed(seed)
    return adl.build(ENC, DEC, src_vocab=30, tgt_vocab=30, d_model=32, heads=4, dropout=0.0).eval()


def reference_greedy(model, src_row, max_len):
    """Greedy decoding with a full forward pass per token (no cache)."""
    out = []
    for _ in range(max_len):
        tgt_in = torch.tensor([[BOS] + out])
        logits = model(src_row.unsqueeze(0), tgt_in)[0, -1]
        logits[PAD] = logits[BOS] = float("-inf")
        tok = int(logits.argmax())
        if tok == EOS:
            break
        out.append(tok)
    return out


def test_batched_incremental_greedy_equals_full_passes():
    model = small_model()
    g = torch.Generator().manual_seed(1)
    seqs = [torch.randint(4, 30, (n,), generator=g).tolist() for n in (3, 7, 1, 5)]
    src = pad_batch(seqs)
    got = greedy(model, src, max_len=torch.tensor([6, 9, 4, 7]))
    for row, limit in zip(range(4), (6, 9, 4, 7)):
        assert got[row] == reference_greedy(model, src[row][: len(seqs[row]) + 1], limit)
        assert len(got[row]) <= limit


def test_rows_leave_the_batch_when_they_end():
    model = small_model(3)
    src = pad_batch([[5, 6, 7], [8, 9]])
    # a row may stop at eos early; the others go on and keep their own results
    both = greedy(model, src, max_len=12)
    alone = [greedy(model, pad_batch([s]), max_len=12)[0] for s in ([5, 6, 7], [8, 9])]
    assert both == alone


def test_a_beam_keeps_each_hypothesis_best_continuation_in_its_row():
    from adl.runtime.decode.search import in_place

    none = torch.zeros(1, 4, dtype=torch.bool)
    # continuations in rank order, from hypotheses 0, 0, 1, 2: the first of each stays in
    # its parent's row, the second continuation of 0 takes the free row 3
    assert in_place(torch.tensor([[0, 0, 1, 2]]), none).tolist() == [[0, 2, 3, 1]]
    # all from 2; the two fillers (dead) take no row of their own choosing
    dead = torch.tensor([[False, False, True, True]])
    assert in_place(torch.tensor([[2, 2, 2, 2]]), dead).tolist() == [[1, 2, 0, 3]]
    g = torch.Generator().manual_seed(3)
    parent = torch.randint(0, 5, (200, 5), generator=g)
    dead = torch.rand(200, 5, generator=g) < 0.1
    places = in_place(parent, dead)
    assert torch.equal(places.sort(1).values, torch.arange(5).expand(200, 5))  # permutations
    for n in range(200):
        seen = set()
        for c in range(5):
            p = int(parent[n, c])
            if not dead[n, c] and p not in seen:  # the best live continuation of p
                assert int(places[n, p]) == c
            if not dead[n, c]:
                seen.add(p)


def test_workers_search_the_same_batches_to_the_same_hypotheses():
    from adl.runtime.decode.driver import batches, search_ids
    from adl.runtime.search_options import SearchOptions

    model = small_model(5)
    g = torch.Generator().manual_seed(2)
    sents = [torch.randint(4, 30, (n,), generator=g).tolist() for n in (3, 9, 1, 6, 4, 8, 2, 0, 5)]
    threads = torch.get_num_threads()
    for beam, nbest in ((1, 1), (3, 2)):
        # batches of at most 12 source tokens x beam: several, so that both threads work
        one = SearchOptions(beam=beam, nbest=nbest, max_tokens=12 * beam)
        order = sorted((i for i, s in enumerate(sents) if s), key=lambda i: len(sents[i]))
        assert len(batches(sents, order, one)) >= 4
        seen: list[int] = []
        torch.set_num_threads(1)  # what each of two workers runs on, out of two threads
        try:
            alone = search_ids(model, None, sents, one)
        finally:
            torch.set_num_threads(threads)
        torch.set_num_threads(2)  # two workers: one thread each
        try:
            two = search_ids(
                model, None, sents, SearchOptions.of(one, workers=2), progress=seen.append
            )
            assert torch.get_num_threads() == 2  # as they were
        finally:
            torch.set_num_threads(threads)
        # tokens, scores and order of every hypothesis (repr: exact floats, and greedy's nan
        # scores equal, which == finds only for the same object, not one from a worker)
        assert repr(two) == repr(alone)
        assert seen == sorted(seen) and seen[-1] == len(sents)  # one call a batch, to the end
        assert alone[7] == [alone[7][0]] and alone[7][0].tokens == []  # the empty sentence


def test_a_failing_batch_fails_the_search_with_workers():
    import pytest

    from adl.runtime.decode.driver import search_ids
    from adl.runtime.search_options import SearchOptions

    class Broken:
        needs_src_words = False

        def start(self, src, words=None):
            raise RuntimeError(f"batch of {src.size(0)} refused")

    options = SearchOptions(beam=1, max_tokens=4, workers=2)
    with pytest.raises(RuntimeError, match="refused"):
        search_ids(Broken(), None, [[5, 6], [7], [8, 9, 10]], options)


def test_the_host_beam_puts_continuations_in_the_rows_the_device_search_does():
    from adl.runtime.decode.host_beam import in_place_rows
    from adl.runtime.decode.search import in_place

    g = torch.Generator().manual_seed(4)
    for k in (1, 2, 5):
        parent = torch.randint(0, k, (300, k), generator=g)
        live = torch.randint(1, k + 1, (300,), generator=g)  # the first `live` go on
        dead = torch.arange(k).expand(300, k) >= live.unsqueeze(1)
        places = in_place(parent, dead).tolist()
        for n in range(300):
            alive = parent[n, : int(live[n])].tolist()
            assert in_place_rows(alive, k) == places[n]
