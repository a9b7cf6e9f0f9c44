"""Batches: token budget, every pair once an epoch, seeded order, rank split, resumable."""

import random

import torch

from adl.runtime.data.batching import BatchStream, collate, make_batches
from adl.runtime.data.parallel import FilterStats, ParallelData, TokenArray
from adl.runtime.data.tokenizer import BOS, EOS, PAD


def dataset(n=300, seed=0) -> ParallelData:
    rng = random.Random(seed)
    src = [[rng.randint(4, 40) for _ in range(rng.randint(1, 30))] for _ in range(n)]
    tgt = [[rng.randint(4, 40) for _ in range(rng.randint(1, 30))] for _ in range(n)]
    return ParallelData(TokenArray.from_lists(src), TokenArray.from_lists(tgt), FilterStats())


def test_token_budget_and_every_pair_once():
    data = dataset()
    batches = make_batches(data.src.lengths, data.tgt.lengths, max_tokens=128, seed=3)
    ids = torch.cat(batches).sort().values
    assert torch.equal(ids, torch.arange(len(data)))
    for b in batches:
        longest = int(torch.maximum(data.src.lengths[b], data.tgt.lengths[b]).max()) + 1
        assert longest * len(b) <= 128
    # bucketed: a batch holds similar lengths
    spread = [
        int(data.src.lengths[b].max() - data.src.lengths[b].min()) for b in batches if len(b) > 3
    ]
    assert sum(spread) / len(spread) < 20
    capped = make_batches(
        data.src.lengths, data.tgt.lengths, max_tokens=10_000, max_sentences=7, seed=3
    )
    assert max(len(b) for b in capped) == 7


def test_order_is_seeded_and_changes_between_epochs():
    d = dataset()
    one = lambda seed, epoch: [
        b.tolist() for b in make_batches(d.src.lengths, d.tgt.lengths, 128, seed=seed, epoch=epoch)
    ]
    assert one(1, 1) == one(1, 1)
    assert one(1, 1) != one(1, 2) and one(1, 1) != one(2, 1)


def test_collate_adds_bos_and_eos():
    d = ParallelData(
        TokenArray.from_lists([[5, 6, 7], [8]]),
        TokenArray.from_lists([[9], [10, 11]]),
        FilterStats(),
    )
    b = collate(d, torch.tensor([0, 1]))
    assert b.src.tolist() == [[5, 6, 7, EOS], [8, EOS, PAD, PAD]]
    assert b.tgt_in.tolist() == [[BOS, 9, PAD], [BOS, 10, 11]]
    assert b.tgt_out.tolist() == [[9, EOS, PAD], [10, 11, EOS]]
    assert (b.src_tokens, b.tgt_tokens) == (6, 5)


def test_ranks_split_the_data_evenly():
    d = dataset()
    r0 = BatchStream(d, 128, seed=5, rank=0, world=2).batches(1)
    r1 = BatchStream(d, 128, seed=5, rank=1, world=2).batches(1)
    everything = make_batches(d.src.lengths, d.tgt.lengths, 128, seed=5, epoch=1)
    assert len(r0) == len(r1) == len(everything) // 2
    seen0, seen1 = set(torch.cat(r0).tolist()), set(torch.cat(r1).tolist())
    assert not seen0 & seen1
    assert len(seen0 | seen1) >= len(d) - max(len(b) for b in everything)


def test_the_stream_resumes_at_its_position():
    d = dataset()
    a = BatchStream(d, 128, seed=2)
    n = len(a.batches(1))
    first = [next(a).ids.tolist() for _ in range(n + 10)]  # crosses an epoch boundary
    assert a.epoch == 2 and first[n] != first[0]
    b = BatchStream(d, 128, seed=2)
    for _ in range(n - 5):
        next(b)
    c = BatchStream(d, 128, seed=2)
    c.load_state_dict(b.state_dict())
    assert [next(c).ids.tolist() for _ in range(15)] == first[n - 5 :]


def test_a_pair_over_the_budget_is_an_error_in_training_and_alone_in_validation():
    import pytest

    from adl.runtime.errors import DataError

    src, tgt = torch.tensor([3, 40, 4]), torch.tensor([3, 5, 4])
    with pytest.raises(DataError, match="needs 41 tokens but a batch holds train.max_tokens=16"):
        make_batches(src, tgt, max_tokens=16)
    batches = make_batches(src, tgt, max_tokens=16, shuffle=False, strict=False)
    assert [b.tolist() for b in batches] == [[0, 2], [1]]
