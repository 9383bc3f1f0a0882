"""The quadratic (isotropic Gaussian) relative encoding of Cordonnier et al. 2020, Lemma 2.

With the relative position δ = j - q, the encoding r_δ = (‖δ‖², δ_1, ..., δ_d) and the positional query
v^(h) = -α^(h) (1, -2Δ^(h)_1, ..., -2Δ^(h)_d), head h's logit is

    v^(h) · r_δ = -α^(h) (‖δ - Δ^(h)‖² - ‖Δ^(h)‖²),

a Gaussian bump centred on the shift Δ^(h) with inverse width α^(h). The -‖Δ‖² term is the same for
every key and cancels in the softmax. As α -> ∞ the head attends to δ = Δ only, or, where the key q + Δ is off
the grid, to the grid's nearest pixel to it (the logit's unique maximum there, axis by axis).

The logit is a sum of one term per axis, so the softmax over a rectangular grid factorises into one small
softmax per axis: P^(h) = P^(h)_rows ⊗ P^(h)_cols. The layer uses that to attend without an N x N matrix.
"""

from __future__ import annotations

import math
from typing import Sequence

import torch
from torch import Tensor, nn

from .._checks import (NonFiniteResultError, finite_checks_apply, flag, int_tuple, nonfinite_parameter,
                       values_readable)
from ..conv import kernel_shifts
from .base import PositionalLogits, softmax_flushed
from .signed_quadratic import SignedQuadraticEncoding, checked_query, outer_sum

__all__ = ["QuadraticEncoding", "quadratic_features", "positional_query", "hard_logit_floor"]


def quadratic_features(delta: Tensor) -> Tensor:
    """r_δ = (‖δ‖², δ_1, ..., δ_d) for relative positions ``delta`` of shape ``(..., d)``; returns ``(..., d + 1)``."""
    if not isinstance(delta, Tensor):
        raise TypeError(f"delta must be a torch.Tensor, got {type(delta).__name__}")
    if delta.dim() < 1 or delta.shape[-1] < 1:
        raise ValueError(f"delta must be (..., d) with d >= 1 coordinates in its last dim, got shape "
                         f"{tuple(delta.shape)}")
    delta = delta.to(torch.get_default_dtype()) if not delta.is_floating_point() else delta
    return torch.cat([delta.pow(2).sum(-1, keepdim=True), delta], dim=-1)


def positional_query(centers: Tensor, alpha: Tensor) -> Tensor:
    """v^(h) = -α^(h) (1, -2Δ^(h)) for centres ``(N_h, d)`` and ``alpha`` ``(N_h,)``; returns ``(N_h, d + 1)``."""
    for name, t in (("centers", centers), ("alpha", alpha)):
        if not isinstance(t, Tensor) or not t.is_floating_point():
            raise TypeError(f"{name} must be a floating-point torch.Tensor, got {getattr(t, 'dtype', type(t).__name__)}")
    if centers.dim() != 2 or alpha.shape != centers.shape[:1]:
        raise ValueError(f"centers must be (N_h, d) and alpha (N_h,) for the same N_h, got shapes "
                         f"{tuple(centers.shape)} and {tuple(alpha.shape)}")
    ones = torch.ones_like(centers[:, :1])
    return -alpha[:, None] * torch.cat([ones, -2 * centers], dim=-1)


def _alpha_per_head(alpha: object, num_heads: int) -> Tensor:
    """α as a ``(N_h,)`` float64 tensor, from a real number, or a ``()`` / ``(N_h,)`` tensor or list."""
    import numbers

    if isinstance(alpha, Sequence) and not isinstance(alpha, str):
        if any(isinstance(a, bool) or not isinstance(a, numbers.Real) for a in alpha):
            raise TypeError(f"alpha must hold real numbers, got {alpha!r}")
        alpha = torch.tensor([float(a) for a in alpha], device="cpu")  # checked on the host, also under meta
    if isinstance(alpha, Tensor):
        if alpha.dtype == torch.bool or alpha.is_complex():
            raise TypeError(f"alpha must hold real numbers, got {alpha.dtype}")
        if tuple(alpha.shape) not in ((), (num_heads,)):
            raise ValueError(f"alpha must be a number or a tensor of shape () or (num_heads={num_heads},), "
                             f"got shape {tuple(alpha.shape)}")
        return alpha.detach().to(torch.float64).expand(num_heads).clone()
    if isinstance(alpha, bool) or not isinstance(alpha, numbers.Real):
        raise TypeError(f"alpha must be a real number, a tensor or None, got {type(alpha).__name__} {alpha!r}")
    return torch.full((num_heads,), float(alpha), dtype=torch.float64, device="cpu")


def hard_logit_floor(dtype: torch.dtype) -> float:
    """The logit given to keys a hard head ignores: exp of it underflows to exactly 0, and the sum of a few
    of them does not overflow."""
    if not isinstance(dtype, torch.dtype) or not dtype.is_floating_point:
        raise TypeError(f"dtype must be a floating-point torch.dtype (logits are floats), got {dtype!r}")
    return torch.finfo(dtype).min / 8


class QuadraticEncoding(PositionalLogits):
    """Isotropic Gaussian relative attention: head h attends around the shift Δ^(h) with inverse width α^(h).

    Args:
        num_heads: N_h.
        centers: ``(N_h, d)`` initial shifts Δ^(h) (``d = 1`` for sequences, ``2`` for images). Default: drawn
            from a normal distribution with standard deviation ``init_center_std``, in ``dims`` dimensions, as in the paper's training setup.
        alpha: initial α^(h) > 0, a float or ``(N_h,)``. ``None`` selects exact hard attention (the α -> ∞
            limit), which needs integer centres and has no width parameter.
        dims: d, used only when ``centers`` is not given.
        init_center_std: spread of the random initial centres.
        learnable: whether Δ and α are trained (``nn.Parameter``) or fixed buffers.

    Centres are stored as ``centers`` and α through ``log_alpha`` (so it stays positive when trained); a head with
    α ≤ 0 is a :class:`~attnconv.positional.SignedQuadraticEncoding` (:meth:`from_positional_query` with ``signed``).
    """

    def __init__(
        self,
        num_heads: int,
        centers: Tensor | Sequence[Sequence[float]] | None = None,
        alpha: float | Tensor | None = 1.0,
        dims: int = 2,
        init_center_std: float = 2.0,
        learnable: bool = True,
    ) -> None:
        super().__init__(num_heads)
        if centers is None:
            centers = torch.randn(num_heads, dims) * init_center_std
        centers = torch.as_tensor(centers, dtype=torch.get_default_dtype()).clone()
        if centers.dim() != 2 or centers.shape[0] != num_heads:
            raise ValueError(f"centers must be (num_heads={num_heads}, d), got shape {tuple(centers.shape)}")
        readable = values_readable(centers)  # not on the meta device (a model built under torch.device("meta"))
        if readable and not bool(torch.isfinite(centers).all()):
            raise ValueError(f"centers must be finite (no NaN or inf), got {centers.tolist()}")
        self.hard = alpha is None
        if self.hard:
            if readable and not torch.equal(centers, centers.round()):
                raise ValueError("alpha=None (hard attention) needs integer centers")
            log_alpha = torch.zeros(num_heads, device=centers.device)
        else:
            alpha_t = _alpha_per_head(alpha, num_heads)
            dtype = torch.get_default_dtype()
            if not values_readable(alpha_t):
                pass  # a meta alpha: no value to check
            elif not torch.all(alpha_t > 0) or not torch.all(torch.isfinite(alpha_t)):
                raise ValueError(f"alpha must be finite and > 0 (or None for hard attention), got {alpha!r}")
            elif float(alpha_t.max()) > torch.finfo(dtype).max:
                raise ValueError(f"alpha = {float(alpha_t.max()):.3g} overflows {dtype} (largest "
                                 f"{torch.finfo(dtype).max:.3g}): use alpha=None for the alpha -> inf limit, or "
                                 "build the encoding under torch.set_default_dtype(torch.float64)")
            log_alpha = alpha_t.log().to(dtype=dtype, device=centers.device)
        if flag("learnable", learnable) and not self.hard:
            self.centers = nn.Parameter(centers)
            self.log_alpha = nn.Parameter(log_alpha)
        else:
            self.register_buffer("centers", centers)
            self.register_buffer("log_alpha", log_alpha)

    @classmethod
    def from_kernel(cls, kernel_size: int | Sequence[int], alpha: float | None = 1.0, dilation: int | Sequence[int] = 1,
                    dims: int = 2, learnable: bool = True) -> "QuadraticEncoding":
        """Heads placed on the taps of a centred kernel, one head per tap, in row-major order.

        Head h starts at Δ^(h) = a_h ⊙ d - c with c = d (K - 1) // 2: the shifts
        :func:`~attnconv.construct.image.conv_to_mhsa` gives a convolution with "same" padding. For odd K and
        ``learnable=True`` this is ConViT's local initialisation, reached from Theorem 1, with the heads in row-major
        order; for even K ConViT centres the grid on c = (K - 1) / 2 instead: use :meth:`local_init`.

        Args:
            kernel_size: K (a K x ... x K kernel in ``dims`` dimensions) or one size per dimension.
            alpha: the starting α^(h) of every head (``None``: exact hard attention).
            dilation: d, an int or one per dimension.
            dims: d, used when ``kernel_size`` is an int.
            learnable: whether Δ and α train.
        """
        if not isinstance(kernel_size, int) and isinstance(kernel_size, Sequence):
            dims = len(kernel_size)
        ks = int_tuple("kernel_size", kernel_size, dims, 1)
        dil = int_tuple("dilation", dilation, dims, 1)
        offset = tuple(d * (k - 1) // 2 for k, d in zip(ks, dil))
        shifts = [delta for _, delta in kernel_shifts(ks, dil, offset)]
        centers = torch.tensor(shifts, dtype=torch.get_default_dtype())
        return cls(len(shifts), centers=centers, alpha=alpha, learnable=learnable)

    @classmethod
    def local_init(cls, num_heads: int, locality_strength: float = 1.0, locality_distance: float = 1.0,
                   learnable: bool = True) -> "QuadraticEncoding":
        """ConViT's local initialisation (d'Ascoli et al. 2021, GPSA's ``local_init``) for K² heads, K = √N_h.

        Head p = h₁ + K h₂ (h₁, h₂ = 0..K-1, ConViT's column-major order) starts at

            Δ^(p) = locality_distance · (h₁ - c, h₂ - c)  (row, column),   c = (K - 1) / 2,   α^(p) = locality_strength,

        so for even K (4 or 16 heads) the centres sit on half-integers, symmetric about 0. For odd K this is
        :meth:`from_kernel` up to the order of the heads (``from_kernel`` is row-major, head h₁ K + h₂).

        Args:
            num_heads: N_h, a perfect square (1, 4, 9, 16, ...).
            locality_strength: α of every head (ConViT's ``locality_strength``).
            locality_distance: the spacing of the centres (ConViT fixes it to 1).
            learnable: whether Δ and α train.
        """
        k = math.isqrt(num_heads) if isinstance(num_heads, int) and not isinstance(num_heads, bool) and num_heads > 0 \
            else 0
        if k * k != num_heads:
            raise ValueError(f"num_heads must be a perfect square K^2 (ConViT places the heads on a K x K grid), "
                             f"got {num_heads!r}")
        c = (k - 1) / 2
        heads = torch.arange(num_heads)
        rows, cols = heads % k, heads // k  # head p = h1 + K h2
        centers = locality_distance * torch.stack([rows - c, cols - c], dim=-1).to(torch.get_default_dtype())
        try:
            return cls(num_heads, centers=centers, alpha=locality_strength, learnable=learnable)
        except (TypeError, ValueError) as err:  # the α of every head: say which argument it came from
            raise type(err)(f"locality_strength (the alpha of every head): {err}") from err

    @classmethod
    def from_positional_query(cls, query: Tensor, learnable: bool = True,
                              signed: bool = False) -> "QuadraticEncoding | SignedQuadraticEncoding":
        """The encoding whose positional query (:meth:`positional_query`) is ``query`` ``(N_h, d + 1)``.

        v^(h) = -α(1, -2Δ) gives α = -v_0 and Δ = v_{1:} / (2α); ``query[:, 0]`` must be negative. This reads a
        linear map of the features (‖δ‖², δ_1, ..., δ_d), such as ConViT's ``pos_proj`` (its bias is the same for
        every key and cancels in the softmax).

        Args:
            query: v, ``(N_h, d + 1)``.
            learnable: whether the parameters train.
            signed: ``True`` returns a :class:`~attnconv.positional.SignedQuadraticEncoding`, which stores v itself
                and so takes any sign of α (a trained ConViT head may have α ≤ 0); ``False`` (the default) this
                class, which needs α > 0 in every head.

        Raises:
            TypeError: ``query`` is not a real tensor (or nested list of numbers), or ``signed`` or ``learnable`` is
                not a bool.
            ValueError: ``query`` is not ``(N_h, d + 1)`` or holds NaN or inf, or, unless ``signed``, some
                ``query[:, 0]`` is not negative.
        """
        if not isinstance(signed, bool):
            raise TypeError(f"signed must be a bool, got {type(signed).__name__} {signed!r}")
        if signed:
            return SignedQuadraticEncoding(query, learnable=learnable)
        query = checked_query(query)
        alpha = -query[:, 0]
        if values_readable(alpha) and not bool((alpha > 0).all()):
            raise ValueError("query[:, 0] = -alpha must be negative for every head: a Gaussian bump needs alpha > 0, "
                             f"got {query[:, 0].tolist()}; signed=True keeps heads with alpha <= 0 "
                             "(a SignedQuadraticEncoding)")
        return cls(query.shape[0], centers=query[:, 1:] / (2 * alpha[:, None]), alpha=alpha, learnable=learnable)

    @property
    def dims(self) -> int:
        return self.centers.shape[1]

    @property
    def alpha(self) -> Tensor:
        """α^(h), ``(N_h,)`` (``inf`` in hard mode)."""
        return torch.full_like(self.log_alpha, math.inf) if self.hard else self.log_alpha.exp()

    def positional_query(self) -> Tensor:
        """v^(h) = -α^(h)(1, -2Δ^(h)), ``(N_h, d + 1)`` (finite α only)."""
        if self.hard:
            raise ValueError("a hard (alpha=None) encoding has no finite positional query")
        return positional_query(self.centers, self.alpha)

    def axis_logits(self, grid: Sequence[int]) -> list[Tensor]:
        """One ``(N_h, L, L)`` logit table per axis of the grid; the full logit is their sum.

        Entry ``[h, i, j]`` is head h's term for query coordinate i and key coordinate j on that axis:
        ``-α(δ² - 2Δ_a δ)`` with ``δ = j - i``. In hard mode it is 0 on the key nearest to ``i + Δ_a``, that is
        ``clip(i + Δ_a, 0, L - 1)``, and a huge negative number elsewhere: the α -> ∞ limit of the softmax, which at
        a border puts all the weight on the nearest pixel that exists.

        Raises:
            ValueError: the parameters are not finite, or α is too large for the parameters' dtype (for example
                α = 1e5 in float16, where exp(log α) overflows): the logits would be NaN or +inf, and every
                output NaN.
        """
        if len(grid) != self.dims:
            raise ValueError(f"this encoding has {self.dims}-D centres but the input grid is {tuple(grid)}")
        if not self.hard and finite_checks_apply(self.log_alpha, self.centers):  # else the caller checks its loss
            self._check_finite()  # (attnconv.finite), or the values cannot be read (meta, jit.trace, compile)
        out = []
        for axis, length in enumerate(grid):
            pos = torch.arange(length, device=self.centers.device, dtype=self.centers.dtype)
            delta = pos[None, :] - pos[:, None]  # (L, L), key minus query
            center = self.centers[:, axis, None, None]  # (N_h, 1, 1)
            if self.hard:  # the key nearest to q + Δ on this axis: q + Δ, or the border when that is off the grid
                target = (pos[:, None] + center).clamp(0, length - 1)  # (N_h, L, 1)
                zero = delta.new_zeros(())
                floor = delta.new_full((), hard_logit_floor(delta.dtype))
                out.append(torch.where(pos[None, None, :] == target, zero, floor))
            else:
                out.append(-self.alpha[:, None, None] * (delta**2 - 2 * center * delta))
        return out

    def _check_finite(self) -> None:
        """Raise ``ValueError`` if some logit would be NaN or +inf in the parameters' dtype.

        Head h's logit -α(δ² - 2Δ·δ) = α(‖Δ‖² - ‖δ - Δ‖²) is at most α‖Δ‖², and it is 0 at δ = 0, so the logits are
        free of NaN and +inf exactly when α and α‖Δ‖² are finite (a -inf logit is a zero probability).
        """
        alpha, centers = self.alpha.detach(), self.centers.detach()
        worst = torch.stack([alpha, alpha * centers.pow(2).sum(-1)])
        if not bool(torch.isfinite(worst).all()) or not bool(torch.isfinite(centers).all()):
            bad = nonfinite_parameter(self.named_parameters())
            if bad:  # not an overflow: a NaN or inf restored or learned
                raise NonFiniteResultError(f"the positional logits are not finite: {bad}. Restore it from a "
                                           "checkpoint, or lower the learning rate that made it")
            raise NonFiniteResultError(
                f"alpha = exp(log_alpha) and alpha * |centers|^2 (the largest logit) must be finite in "
                f"{self.log_alpha.dtype}: got alpha = {alpha.tolist()} (use a wider dtype or a smaller alpha)")

    def forward(self, grid: tuple[int, ...], queries: Tensor | None = None, keys: Tensor | None = None) -> Tensor:
        """Dense logits v^(h) · r_δ for every (query, key) pair: ``(N_h, N, N)``, shared by the batch."""
        return outer_sum(self.axis_logits(grid), self.num_heads)  # over axes: (N_h, H, H) + (N_h, W, W)

    def factorized_probs(self, grid: tuple[int, ...]) -> list[Tensor]:
        """Per-axis attention probabilities ``[(N_h, L_a, L_a)]``; the full P^(h) is their Kronecker product."""
        return [softmax_flushed(part) for part in self.axis_logits(grid)]

    def extra_repr(self) -> str:
        return f"num_heads={self.num_heads}, dims={self.dims}, hard={self.hard}"
