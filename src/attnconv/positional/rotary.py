"""Absolute positions that act relatively: sinusoidal encodings (Vaswani et al. 2017) and rotary embeddings
(RoPE, Su et al. 2021).

Both use the frequencies θ_m = base^(-2m / D), m = 0 .. D/2 - 1, one per pair of channels (2m, 2m + 1), and the
rotation of a pair by an angle α,

    R(α) = [[cos α, -sin α],
            [sin α,  cos α]].

- :func:`sinusoidal_encoding`: the vector p_t added to token t's embedding, with p_t[2m] = sin(t θ_m) and
  p_t[2m + 1] = cos(t θ_m). Pair m of p_t is R(-t θ_m) applied to (0, 1): a fixed vector turned by the position.
- :class:`RotaryEmbedding`: the rotation R_t = diag(R(t θ_0), ..., R(t θ_{D/2-1})) (the paper's R^d_{Θ,t}) applied
  to a query or key at position t. Since R_i^T R_j = R_{j-i}, the logit of query i for key j,
  (R_i q_i)·(R_j k_j) = q_i^T R_{j-i} k_j, sees the positions only through the offset δ = j - i (key minus query,
  as everywhere in the library).

Pairs are adjacent channels (2m, 2m + 1), as in the paper. Implementations that pair channel m with m + D/2
(GPT-NeoX, LLaMA) compute the same logits after a fixed permutation of the channels.
"""

from __future__ import annotations

import numbers

import torch
from torch import Tensor, nn

from .._checks import int_at_least, positive_int, real_number, values_readable

__all__ = ["RotaryEmbedding", "rotary_frequencies", "sinusoidal_encoding"]


def _even_dim(name: str, value: object) -> int:
    value = positive_int(name, value)
    if value % 2:
        raise ValueError(f"{name} must be even (the channels are rotated in pairs), got {value}")
    return value


def _base(value: object) -> float:
    base = real_number("base", value)
    if not base > 1.0:
        raise ValueError(f"base must be > 1 (the frequencies base^(-2m/D) must fall with m), got {value!r}")
    return base


def rotary_frequencies(dim: int, base: float = 10000.0, dtype: torch.dtype | None = None) -> Tensor:
    """The frequencies θ_m = base^(-2m / dim), m = 0 .. dim/2 - 1: ``(dim / 2,)``, in ``dtype`` (default: torch's).

    θ_0 = 1 (a period of 2π ≈ 6.3 positions); the last, base^(-(dim - 2)/dim), has a period of almost 2π · base.

    Raises:
        ValueError: ``dim`` is not a positive even integer, or ``base`` is not a real number > 1.
    """
    dim, base = _even_dim("dim", dim), _base(base)
    exponents = torch.arange(0, dim, 2, dtype=torch.float64) / dim
    return torch.pow(base, -exponents).to(dtype or torch.get_default_dtype())


def sinusoidal_encoding(num_positions: int, dim: int, base: float = 10000.0,
                        dtype: torch.dtype | None = None) -> Tensor:
    """The sinusoidal encodings of Vaswani et al. 2017: ``(num_positions, dim)``, row t is p_t with
    p_t[2m] = sin(t θ_m) and p_t[2m + 1] = cos(t θ_m), θ_m = base^(-2m / dim).

    Added to the token embeddings, p_t makes a logit (x_i + p_i)^T W (x_j + p_j) hold the term p_i^T W p_j. It is a
    function of j - i alone exactly when every 2 × 2 block of W on one frequency is a scaled rotation
    [[a, b], [-b, a]] (and W has no blocks between different frequencies): see ``attnconv.proofs.rotary``.

    Args:
        num_positions: N ≥ 1, the positions 0 .. N - 1.
        dim: the model width D, a positive even integer.
        base: the base of the frequencies (10000 in the paper), a real number > 1.
        dtype: of the result (default: torch's default dtype); the angles are computed in float64.

    Raises:
        ValueError: an argument breaks the rule above (the message names it).
    """
    num_positions = positive_int("num_positions", num_positions)
    theta = rotary_frequencies(dim, base, dtype=torch.float64)
    angles = torch.arange(num_positions, dtype=torch.float64)[:, None] * theta  # (N, D/2): t θ_m
    out = torch.stack([torch.sin(angles), torch.cos(angles)], dim=-1).reshape(num_positions, dim)
    return out.to(dtype or torch.get_default_dtype())


class RotaryEmbedding(nn.Module):
    """Rotary position embedding (RoPE, Su et al. 2021): rotate each pair of channels by position · θ_m.

    The vector x at position t becomes R_t x, where R_t (the paper's R^d_{Θ,t}) is block-diagonal with the
    2 × 2 blocks R(t θ_m) = [[cos t θ_m, -sin t θ_m], [sin t θ_m, cos t θ_m]] on the channels (2m, 2m + 1) and
    θ_m = base^(-2m / D_h). Applied to the queries and keys of a head, it makes the logit

        (R_i q_i)·(R_j k_j) = q_i^T R_{j-i} k_j

    a function of the tokens and of the offset δ = j - i only. With the same q and k at every position, that
    logit is Σ_m r_m cos(δ θ_m + φ_m), a kernel over offsets (:meth:`kernel_logits`): softmax attention over it
    is a lightweight convolution (chapter 05).

    Args:
        head_dim: D_h, the channels of a query or key, a positive even integer.
        base: the base of the frequencies (10000 in the paper), a real number > 1.

    Attributes:
        frequencies: ``(D_h / 2,)`` buffer, θ_m (float64, not saved in the ``state_dict``); the module has no
            parameters.

    Shapes:
        ``forward(x)``: x is ``(B, N_h, N, D_h)`` or ``(B, N, D_h)``; the output has its shape and dtype.
    """

    def __init__(self, head_dim: int, base: float = 10000.0) -> None:
        super().__init__()
        self.head_dim = _even_dim("head_dim", head_dim)
        self.base = _base(base)
        self.register_buffer("frequencies", rotary_frequencies(self.head_dim, self.base, torch.float64),
                             persistent=False)

    def _angles(self, positions: Tensor) -> Tensor:
        """``(..., D_h / 2)`` angles t θ_m in float64 for positions ``(...)``."""
        return positions.to(torch.float64)[..., None] * self.frequencies.to(positions.device, torch.float64)

    def _rotate(self, x: Tensor, angles: Tensor) -> Tensor:
        """Rotate each pair (x[2m], x[2m+1]) of ``x`` ``(..., D_h)`` by ``angles`` ``(..., D_h / 2)``."""
        cos, sin = torch.cos(angles).to(x.dtype), torch.sin(angles).to(x.dtype)
        even, odd = x[..., 0::2], x[..., 1::2]
        return torch.stack([even * cos - odd * sin, even * sin + odd * cos], dim=-1).flatten(-2)

    def _check(self, name: str, x: object, tokens: bool) -> Tensor:
        """``x`` itself, if it is a floating-point tensor ``(B, N_h, N, D_h)`` or ``(B, N, D_h)`` (``tokens``) or
        any ``(..., D_h)``; else a ``TypeError`` or ``ValueError`` that names it."""
        if not isinstance(x, Tensor):
            raise TypeError(f"{name} must be a torch.Tensor, got {type(x).__name__}")
        if not x.is_floating_point():
            raise TypeError(f"{name} must be a floating-point tensor, got {x.dtype}")
        if (tokens and x.dim() not in (3, 4)) or x.dim() == 0 or x.shape[-1] != self.head_dim:
            shapes = "(B, N_h, N, D_h) or (B, N, D_h)" if tokens else "(..., D_h)"
            raise ValueError(f"{name} must be {shapes} with D_h = head_dim = {self.head_dim}, "
                             f"got shape {tuple(x.shape)}")
        return x

    def forward(self, x: Tensor, offset: int = 0, positions: Tensor | None = None) -> Tensor:
        """Rotate token t of ``x`` by R_t.

        Args:
            x: ``(B, N_h, N, D_h)`` or ``(B, N, D_h)``, floating point.
            offset: the position of the first token (a decoder's cache length): tokens sit at
                offset .. offset + N - 1.
            positions: instead of ``offset``, the ``(N,)`` positions of the tokens (integers or reals).

        Returns:
            R_t x_t for every token, with the shape and dtype of ``x``.

        Raises:
            TypeError: ``x`` is not a floating-point tensor.
            ValueError: ``x`` has another shape, ``offset`` is not an int, or ``positions`` is not ``(N,)`` or is
                given with a non-zero ``offset``.
        """
        x = self._check("x", x, tokens=True)
        if isinstance(offset, bool) or not isinstance(offset, numbers.Integral):
            raise ValueError(f"offset must be an int, got {offset!r}")
        n = x.shape[-2]
        if positions is None:
            positions = torch.arange(int(offset), int(offset) + n, device=x.device)
        else:
            if offset:
                raise ValueError("give either offset or positions, not both")
            if not isinstance(positions, Tensor) or positions.shape != (n,) or positions.is_complex():
                raise ValueError(f"positions must be a real (N,) tensor with N = {n}, "
                                 f"got {getattr(positions, 'shape', type(positions).__name__)}")
            if positions.is_floating_point() and values_readable(positions) and not torch.isfinite(positions).all():
                raise ValueError("positions must be finite")
        return self._rotate(x, self._angles(positions.to(x.device)))

    def rotation(self, offset: int) -> Tensor:
        """R_offset as a ``(D_h, D_h)`` float64 matrix: block-diagonal, R(offset · θ_m) on channels (2m, 2m + 1).

        ``forward(x)[..., t, :]`` is ``x[..., t, :] @ rotation(t).T``, and ``rotation(i).T @ rotation(j)`` is
        ``rotation(j - i)``.

        Raises:
            ValueError: ``offset`` is not an int.
        """
        if isinstance(offset, bool) or not isinstance(offset, numbers.Integral):
            raise ValueError(f"offset must be an int, got {offset!r}")
        eye = torch.eye(self.head_dim, dtype=torch.float64, device=self.frequencies.device)
        angles = self._angles(torch.full((self.head_dim,), int(offset), device=eye.device))
        return self._rotate(eye, angles).T  # column c is R e_c

    def kernel_logits(self, query: Tensor, key: Tensor, radius: int) -> Tensor:
        """The kernel over offsets of a head whose query and key are the same at every position:
        e(δ) = q^T R_δ k = (R_i q)·(R_{i+δ} k) for δ = -r .. r, without the 1/√D_h of attention.

        It equals Σ_m r_m cos(δ θ_m + φ_m) with r_m = ‖q^(m)‖ ‖k^(m)‖ and
        φ_m = atan2(q^(m)_0 k^(m)_1 - q^(m)_1 k^(m)_0, q^(m)·k^(m)) on each pair m.

        Args:
            query: ``(..., D_h)``, floating point.
            key: ``(..., D_h)``, broadcastable with ``query``.
            radius: r ≥ 0.

        Returns:
            ``(..., 2r + 1)``: column t is offset δ = t - r, in the dtype of ``query``.

        Raises:
            TypeError: ``query`` or ``key`` is not a floating-point tensor.
            ValueError: their last dimension is not D_h, they do not broadcast, or ``radius`` is not an int ≥ 0.
        """
        query, key = self._check("query", query, tokens=False), self._check("key", key, tokens=False)
        r = int_at_least("radius", radius, 0)
        try:
            shape = torch.broadcast_shapes(query.shape, key.shape)
        except RuntimeError as err:
            raise ValueError(f"query {tuple(query.shape)} and key {tuple(key.shape)} do not broadcast") from err
        offsets = torch.arange(-r, r + 1, device=key.device)
        turned = self._rotate(key.expand(shape)[..., None, :].expand(*shape[:-1], 2 * r + 1, self.head_dim),
                              self._angles(offsets))  # (..., 2r+1, D_h): R_δ k
        return (query.expand(shape)[..., None, :].to(turned.dtype) * turned).sum(-1).to(query.dtype)

    def extra_repr(self) -> str:
        return f"head_dim={self.head_dim}, base={self.base:g}"
