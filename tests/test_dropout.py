"""The CPU dropout: right rate, unbiased, seeded, identity in eval."""

import torch

from adl.nn.dropout import Dropout, dropout


def test_rate_and_expectation():
    torch.manual_seed(0)
    ones = torch.ones(1000, 1001)  # a size that is no multiple of 3
    for p in (0.1, 0.3, 0.5):
        y = dropout(ones, p, True)
        assert abs((y == 0).float().mean().item() - p) < 0.005
        assert abs(y.mean().item() - 1.0) < 0.01
        kept = y[y != 0]
        assert torch.allclose(kept, torch.full_like(kept, kept[0].item()))
        assert abs(kept[0].item() - 1 / (1 - p)) < 1e-4


def test_masks_are_independent_of_position():
    torch.manual_seed(0)
    y = dropout(torch.ones(3, 200000), 0.5, True)
    # each of the four 16-bit lanes of a random word drops at the same rate
    lanes = (y.reshape(-1).view(-1, 4) == 0).float().mean(0)
    assert torch.all((lanes - 0.5).abs() < 0.01)


def test_seeded_and_eval():
    x = torch.randn(7, 9)
    torch.manual_seed(3)
    a = dropout(x, 0.2, True)
    torch.manual_seed(3)
    b = dropout(x, 0.2, True)
    assert torch.equal(a, b)
    layer = Dropout(0.2).eval()
    assert layer(x) is x
    assert dropout(x, 0.0, True) is x


def test_gradient_is_the_mask():
    torch.manual_seed(0)
    x = torch.randn(50, 50, requires_grad=True)
    y = dropout(x, 0.25, True)
    y.sum().backward()
    assert torch.allclose(x.grad, (y != 0).float() / 0.75)
