"""Forked search workers are kept for a model while its weights stay as they were, and
forked anew when they change, when a worker dies, or for another number of workers."""

import gc
import os
import time

import pytest
import torch
from torch import nn

from adl.runtime.decode import workers


def weight_and_pid(model, tokenizers, sentences, options, device, cap):
    """A search that tells which process ran it and what weight it saw."""
    if options == "die":
        os._exit(3)
    return os.getpid(), float(model.weight.detach().sum()), tokenizers, sentences, cap


def run(model, n=4, options=None, count=2, tokenizers="tok"):
    threads = torch.get_num_threads()
    torch.set_num_threads(count)  # one thread each: forked workers
    try:
        with workers.worker_pool(count, weight_and_pid, model, tokenizers, "cpu") as submit:
            return [f.result() for f in [submit([i], options, 7) for i in range(n)]]
    finally:
        torch.set_num_threads(threads)


def test_forked_workers_are_kept_while_the_weights_stay_and_see_new_weights():
    model = nn.Linear(3, 2)
    with torch.no_grad():
        model.weight.fill_(1.0)
    first = run(model)
    pids = {r[0] for r in first}
    assert os.getpid() not in pids and all(r[1] == 6.0 for r in first)
    assert [r[2:] for r in first] == [("tok", [i], 7) for i in range(4)]
    kept = workers._kept[model][1]
    pids |= {r[0] for r in run(model) + run(model)}
    assert workers._kept[model][1] is kept and len(pids) <= 2  # the same two processes
    with torch.no_grad():
        model.weight.add_(1.0)  # as an optimizer's step does: in place
    changed = run(model)
    assert all(r[1] == 12.0 for r in changed)  # not the weights of the fork before
    assert not {r[0] for r in changed} & pids
    last = {r[0] for r in run(model, tokenizers="other")}
    assert not last & {r[0] for r in changed}
    del model  # its workers go with it
    gc.collect()
    assert not [m for m in workers._kept.keys() if isinstance(m, nn.Linear)]
    for _ in range(100):
        if not any(os.path.exists(f"/proc/{pid}") for pid in last):
            break
        time.sleep(0.1)
    assert not any(os.path.exists(f"/proc/{pid}") for pid in last)


def test_a_dead_worker_fails_its_search_and_the_next_search_forks_anew():
    model = nn.Linear(3, 2)
    pids = {r[0] for r in run(model)}
    with pytest.raises(Exception, match="terminated abruptly"):
        run(model, options="die")
    assert not {r[0] for r in run(model)} & pids


def test_a_model_that_is_no_module_gets_workers_for_one_search():
    class Plain:
        weight = torch.ones(2)

    first, second = run(Plain()), run(Plain())
    assert {r[0] for r in first}.isdisjoint({r[0] for r in second})
    assert all(r[1] == 2.0 for r in first + second)


def test_the_stamp_of_int8_weights_sees_a_write_to_the_integers_they_hold():
    """torchao's int8 weights are tensors that wrap others (no storage of their own): the
    stamp reads the integers and scales they hold, so kept workers see a changed one."""
    pytest.importorskip("torchao")
    from adl.runtime.decode.quantize import int8

    model = int8(nn.Sequential(nn.Linear(8, 8), nn.Linear(8, 2)))  # both layers int8 (no .output)
    weight = model[0].weight
    assert weight.data_ptr() == 0  # a wrapper: what the stamp must look inside
    before = workers.weights_stamp(model)
    assert all(ptr for ptr, _ in before)
    with torch.no_grad():
        weight.qdata.add_(1)
    assert workers.weights_stamp(model) != before
