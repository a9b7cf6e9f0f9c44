"""The prefetching stream hands out exactly the batches of the plain stream, reports the
position of the batches handed out (not of those made ahead), resumes from it, and passes
the thread's errors to the caller."""

import pytest
import torch
from test_runtime_batching import dataset

from adl.runtime.data.batching import BatchStream
from adl.runtime.data.prefetch import Prefetcher, pinned
from adl.runtime.errors import DataError

CPU = torch.device("cpu")


@pytest.mark.parametrize("depth", [0, 1, 3])
def test_the_same_batches_and_the_position_of_those_handed_out(depth):
    data = dataset()
    plain = BatchStream(data, 128, seed=5)
    ahead = Prefetcher(BatchStream(data, 128, seed=5), CPU, depth)
    try:
        assert ahead.epoch_progress == plain.epoch_progress == 0.0
        for _ in range(2 * len(plain.batches(1)) + 3):  # across two epoch boundaries
            a, b = next(plain), next(ahead)
            assert torch.equal(a.ids, b.ids) and torch.equal(a.tgt_out, b.tgt_out)
            assert ahead.state_dict() == plain.state_dict()
            assert ahead.epoch_progress == plain.epoch_progress
    finally:
        ahead.close()


def test_resuming_from_the_position_handed_out():
    data = dataset()
    first = Prefetcher(BatchStream(data, 128, seed=5), CPU, 3)
    for _ in range(7):
        next(first)
    state = first.state_dict()  # the thread has made batches beyond the 7th by now
    following = [next(first).ids for _ in range(4)]
    first.close()
    again = Prefetcher(BatchStream(data, 128, seed=5), CPU, 3)
    again.load_state_dict(state)
    try:
        assert [next(again).ids.tolist() for _ in range(4)] == [f.tolist() for f in following]
        with pytest.raises(RuntimeError, match="before the first batch"):
            again.load_state_dict(state)
    finally:
        again.close()


def test_an_error_in_the_thread_reaches_the_caller():
    ahead = Prefetcher(BatchStream(dataset(), 8, seed=5), CPU, 2)  # 8 tokens: pairs too long
    with pytest.raises(DataError, match="a batch holds train.max_tokens=8"):
        next(ahead)
    ahead.close()


def test_pinning_is_for_cuda_only():
    batch = next(BatchStream(dataset(), 128, seed=5))
    assert pinned(batch, CPU) is batch  # the CUDA path (pin_memory) is not run on a CPU
