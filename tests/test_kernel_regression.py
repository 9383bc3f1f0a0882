"""Chapter 03's bridge: a quadratic head is Nadaraya-Watson kernel regression over positions, with a Gaussian
kernel centred at its Δ and bandwidth 1/√(2α) (the chapter's from-scratch weights against the library's head)."""

from __future__ import annotations

import pytest
import torch

from attnconv.positional import QuadraticEncoding
from attnconv.proofs import image as proofs


def kernel_regression_weights(offsets: torch.Tensor, center: torch.Tensor, alpha: float) -> torch.Tensor:
    """The chapter's function: Gaussian-kernel weights at Δ over the keys' offsets δ, normalised."""
    sigma = (2 * alpha) ** -0.5
    kernel = torch.exp(-((offsets - center) ** 2).sum(-1) / (2 * sigma ** 2))
    return kernel / kernel.sum()


def _offsets(grid: tuple[int, int], query: int) -> torch.Tensor:
    rows, cols = torch.meshgrid(torch.arange(grid[0]), torch.arange(grid[1]), indexing="ij")
    positions = torch.stack([rows.flatten(), cols.flatten()], -1).to(torch.float64)
    return positions - positions[query]


@pytest.mark.parametrize("seed", range(6))
def test_quadratic_head_is_gaussian_kernel_regression(seed):
    gen = torch.Generator().manual_seed(seed)
    grid = tuple(int(v) for v in torch.randint(3, 12, (2,), generator=gen))
    query = int(torch.randint(grid[0] * grid[1], (1,), generator=gen))
    center = (torch.rand(2, generator=gen, dtype=torch.float64) - 0.5) * 6
    alpha = float(10 ** (torch.rand(1, generator=gen).item() * 2 - 1))  # 0.1 .. 10
    offsets = _offsets(grid, query)
    head = QuadraticEncoding(1, centers=[center.tolist()], alpha=alpha).double()
    center, alpha = head.centers[0].detach(), head.alpha.item()  # as the head stores them (float32, log α)
    logits = head(grid)[0, query].detach()
    dropped = logits + alpha * ((offsets - center) ** 2).sum(-1)  # the term the softmax drops: α‖Δ‖²
    torch.testing.assert_close(dropped, torch.full_like(dropped, alpha * center.square().sum().item()))
    torch.testing.assert_close(torch.softmax(logits, -1), kernel_regression_weights(offsets, center, alpha),
                               rtol=0, atol=1e-14)


def test_a_wrong_bandwidth_or_centre_is_caught():
    """The comparison can fail: σ = 1/√α (the missing 2) or a kernel at -Δ differ from the head's weights."""
    grid, query, center, alpha = (9, 9), 40, torch.tensor([1.0, -2.0], dtype=torch.float64), 0.7
    offsets = _offsets(grid, query)
    head = torch.softmax(QuadraticEncoding(1, centers=[center.tolist()], alpha=alpha).double()(grid)[0, query], -1)
    for wrong in (kernel_regression_weights(offsets, center, alpha / 2),
                  kernel_regression_weights(offsets, -center, alpha)):
        with pytest.raises(AssertionError):
            torch.testing.assert_close(head, wrong, rtol=0, atol=1e-6)


def test_proof_verifies_and_rejects_each_slip():
    proof = proofs.gaussian_kernel_regression()
    assert proof.verified and proof.scope == "general"
    assert {"d", "N", "α"} <= set(proof.variables)
    assert [s.claim for s in proof.steps] == ["expand the square", "softmax of the logit = Nadaraya-Watson weights"]
    assert not any(s.immediate for s in proof.steps)
    sign = proofs.gaussian_kernel_regression(cross_coefficient=-2)
    assert not sign.verified and not sign.steps[0].verified  # the expansion itself is wrong
    width = proofs.gaussian_kernel_regression(bandwidth_factor=1)
    assert not width.verified and width.steps[0].verified and not width.steps[1].verified
    assert not any(r.undecided for r in (sign, width, *sign.steps, *width.steps))
