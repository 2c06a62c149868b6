"""PyTorch computes correctly on the CPU: autograd and a few optimisation steps.

torch is imported inside each check, as in every check file: collecting the suite needs no torch."""


def test_autograd_gradient_is_exact():
    import torch

    x = torch.tensor([1.0, -2.0, 3.0], requires_grad=True)
    (x ** 2).sum().backward()
    assert torch.equal(x.grad, torch.tensor([2.0, -4.0, 6.0]))


def test_matmul_matches_numpy():
    import numpy as np
    import torch

    a = np.arange(12, dtype=np.float64).reshape(3, 4)
    b = np.arange(8, dtype=np.float64).reshape(4, 2)
    assert np.array_equal(torch.from_numpy(a) @ torch.from_numpy(b), a @ b)


def test_training_steps_lower_the_loss():
    import torch

    torch.manual_seed(0)
    x = torch.randn(256, 8)
    y = x @ torch.randn(8, 1) + 0.1
    model = torch.nn.Linear(8, 1)
    optimiser = torch.optim.SGD(model.parameters(), lr=0.1)
    losses = []
    for _ in range(50):
        optimiser.zero_grad()
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        optimiser.step()
        losses.append(loss.item())
    assert losses[-1] < losses[0] * 0.05
