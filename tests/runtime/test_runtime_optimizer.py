"""The training's optimizer: Adam (or AdamW) with torch's fused kernel where torch has one,
taking the same steps as torch's default implementation, and resuming from its state."""

import copy
import io

import pytest
import torch

from adl.runtime.config import OptimConfig
from adl.runtime.training.optimizer import load_state
from adl.runtime.training.optimizer import make as make_optimizer


def net() -> torch.nn.Module:
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Embedding(50, 16), torch.nn.Linear(16, 50))


def updates(model: torch.nn.Module, opt: torch.optim.Optimizer, steps: int, seed: int) -> None:
    g = torch.Generator().manual_seed(seed)
    for _ in range(steps):
        x = torch.randint(0, 50, (8, 5), generator=g)
        loss = torch.nn.functional.cross_entropy(model(x).flatten(0, 1), x.flatten())
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()


def fused_kernel() -> bool:
    return bool(make_optimizer(net().parameters(), OptimConfig()).defaults.get("fused"))


@pytest.mark.parametrize("kind, decay", [("adam", 0.0), ("adamw", 0.01)])
def test_the_fused_optimizer_takes_the_default_implementations_steps(kind, decay):
    cfg = OptimConfig(optimizer=kind, lr=2e-3, betas=[0.9, 0.98], weight_decay=decay)
    a, b = net(), net()
    opt_a, opt_b = (
        make_optimizer(a.parameters(), cfg, fused=False),
        make_optimizer(b.parameters(), cfg),
    )
    assert isinstance(opt_b, torch.optim.AdamW if kind == "adamw" else torch.optim.Adam)
    assert not opt_a.defaults.get("fused")
    updates(a, opt_a, 10, seed=1)
    updates(b, opt_b, 10, seed=1)
    for p, q in zip(a.parameters(), b.parameters()):
        torch.testing.assert_close(p, q)
    assert not torch.equal(a[1].weight, net()[1].weight)  # the steps moved the weights


@pytest.mark.skipif(not fused_kernel(), reason="this torch has no fused Adam for the CPU")
def test_a_fused_optimizer_resumes_from_the_default_ones_state():
    cfg = OptimConfig(lr=2e-3)
    old = net()
    opt_old = make_optimizer(old.parameters(), cfg, fused=False)
    updates(old, opt_old, 5, seed=2)
    new = copy.deepcopy(old)
    opt_new = make_optimizer(new.parameters(), cfg)
    assert opt_new.defaults["fused"]
    saved = io.BytesIO()
    torch.save(opt_old.state_dict(), saved)  # a checkpoint of an earlier version
    saved.seek(0)
    load_state(opt_new, torch.load(saved))
    assert opt_new.param_groups[0]["fused"]  # not switched off by the saved group
    updates(old, opt_old, 5, seed=3)
    updates(new, opt_new, 5, seed=3)
    for p, q in zip(old.parameters(), new.parameters()):
        torch.testing.assert_close(p, q)
