"""The anisotropic (generalised) Gaussian relative encoding (Cordonnier et al. 2020, Sec. 4.1).

Head h has a centre Δ^(h) and a 2 x 2 symmetric positive-definite precision Σ^(h)^-1, and its logit is

    -(δ - Δ^(h))ᵀ Σ^(h)^-1 (δ - Δ^(h))   (up to a constant per head).

This is still a positional query times a fixed encoding, now 5-dimensional:
r_δ = (δ_1², δ_2², δ_1 δ_2, δ_1, δ_2). With a rotated (non-diagonal) precision the logits no longer split
into a row term plus a column term, so the layer computes the dense (N_h, N, N) table, once per forward pass.
"""

from __future__ import annotations

import math
from typing import Sequence

import torch
from torch import Tensor, nn

from .._checks import NonFiniteResultError, finite_checks_apply, nonfinite_parameter, values_readable

from .base import PositionalLogits, relative_offsets

__all__ = ["AnisotropicGaussianEncoding"]


class AnisotropicGaussianEncoding(PositionalLogits):
    """Gaussian relative attention with a full 2 x 2 precision matrix per head, on image grids.

    The precision is Σ^-1 = L Lᵀ with L lower-triangular and a positive diagonal (stored through its log),
    so it stays positive-definite during training.

    Args:
        num_heads: N_h.
        centers: ``(N_h, 2)`` initial centres Δ^(h); default: normal with standard deviation ``init_center_std``.
        alpha: initial isotropic precision α (Σ^-1 = α I at initialisation).
        init_center_std: spread of the random initial centres.
    """

    def __init__(self, num_heads: int, centers: Tensor | Sequence[Sequence[float]] | None = None,
                 alpha: float = 1.0, init_center_std: float = 2.0) -> None:
        super().__init__(num_heads)
        if centers is None:
            centers = torch.randn(num_heads, 2) * init_center_std
        centers = torch.as_tensor(centers, dtype=torch.get_default_dtype()).clone()
        if tuple(centers.shape) != (num_heads, 2):
            raise ValueError(f"centers must be (num_heads={num_heads}, 2), got shape {tuple(centers.shape)}")
        if values_readable(centers) and not bool(torch.isfinite(centers).all()):
            raise ValueError(f"centers must be finite (no NaN or inf), got {centers.tolist()}")
        try:
            finite_positive = not isinstance(alpha, bool) and 0 < float(alpha) < math.inf
        except (TypeError, ValueError, RuntimeError):
            finite_positive = False
        if not finite_positive:
            raise ValueError(f"alpha must be a finite number > 0, got {alpha!r}")
        alpha = float(alpha)
        if alpha > torch.finfo(centers.dtype).max:
            raise ValueError(f"alpha = {alpha:.3g} overflows {centers.dtype} (largest {torch.finfo(centers.dtype).max:.3g})"
                             ": use a smaller alpha, or build the encoding under torch.set_default_dtype(torch.float64)")
        self.centers = nn.Parameter(centers)
        half_log = torch.full((num_heads, 2), 0.5 * math.log(alpha))
        self.log_diag = nn.Parameter(half_log)  # log of L's diagonal
        self.off_diag = nn.Parameter(torch.zeros(num_heads))  # L[1, 0]

    def precision(self) -> Tensor:
        """Σ^(h)^-1 = L Lᵀ, ``(N_h, 2, 2)``."""
        diag = self.log_diag.exp()
        lower = torch.zeros(self.num_heads, 2, 2, dtype=diag.dtype, device=diag.device)
        lower[:, 0, 0], lower[:, 1, 1], lower[:, 1, 0] = diag[:, 0], diag[:, 1], self.off_diag
        return lower @ lower.transpose(-1, -2)

    def forward(self, grid: tuple[int, ...], queries: Tensor | None = None, keys: Tensor | None = None) -> Tensor:
        """Logits ``(N_h, N, N)``, shared by the batch."""
        if len(grid) != 2:
            raise ValueError(f"grid must be (H, W): AnisotropicGaussianEncoding works on images, got {tuple(grid)}")
        precision = self.precision()
        delta = relative_offsets(grid, self.centers.device).to(self.centers.dtype)  # (N, N, 2)
        diff = delta[None] - self.centers[:, None, None, :]  # (N_h, N, N, 2)
        logits = -torch.einsum("hqki,hij,hqkj->hqk", diff, precision, diff)
        # The logits are <= 0 (-inf is a zero probability); NaN comes only from an overflowed precision or centre.
        if finite_checks_apply(precision, logits) and (not bool(torch.isfinite(precision).all())
                                                       or bool(torch.isnan(logits).any())):
            bad = nonfinite_parameter(self.named_parameters())
            if bad:
                raise NonFiniteResultError(f"the positional logits are not finite: {bad}. Restore it from a "
                                           "checkpoint, or lower the learning rate that made it")
            raise NonFiniteResultError(f"the precision Σ^-1 = L Lᵀ and the centers must give logits without NaN in "
                             f"{precision.dtype}: got precision {precision.detach().tolist()} (use a wider dtype "
                             "or a smaller precision)")
        return logits
