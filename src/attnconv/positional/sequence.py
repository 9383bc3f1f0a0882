"""Relative positions in language models, as convolution kernels (Chang et al. 2021).

Each module adds to head h's attention logits a term that depends on the query i and the key j through their
offset δ = j - i (key minus query), clipped to ±k with k = ``max_distance``:

- :class:`RelativePositionBias`: a scalar b^(h)_δ per head and offset (T5, optionally bucketed). Alone it
  is a lightweight convolution with kernel β = softmax(b).
- :class:`QueryRelativeLogits`: Shaw et al.'s relative-key term (X_i W_qry)·a_δ / sqrt(D_h), a dynamic
  lightweight convolution whose kernel is predicted from the query token.
- :class:`KeyRelativeLogits`: the key-dependent term (X_j W_key)·c_δ / sqrt(D_h) (DeBERTa's
  position-to-content), a dynamic convolution whose kernel weight is predicted from the token it reads.
- :class:`ALiBi`: -m_h abs(δ), a lightweight convolution with a geometrically decaying kernel.

**The band.** Every term is computed as a band ``(..., N, 2k+1)`` (query or key frame) and spread over the
``(N, N)`` logits by :func:`~attnconv.positional.band.band_to_logits`; see :mod:`attnconv.positional.band`.

**Offset sign.** Here δ = j - i, key minus query. Chang et al.'s code (and DeBERTa) index the key-dependent
table by query minus key, i - j = -δ: their table row for offset -δ is this library's c_δ, so copying their
table means reversing its rows (``embedding = theirs.flip(0)``). The fixed and query terms of Shaw et al. and T5
use j - i, as here.
"""

from __future__ import annotations

import math
from typing import Sequence

import torch
from torch import Tensor, nn

from .._checks import int_at_least, positive_int
from .band import band_to_logits, key_to_query_frame, logits_to_band, relative_index, relative_position_bucket
from .base import PositionalLogits

__all__ = [
    "relative_index",
    "band_to_logits",
    "logits_to_band",
    "key_to_query_frame",
    "relative_position_bucket",
    "RelativeLogits1d",
    "StaticRelativeLogits",
    "RelativePositionBias",
    "QueryRelativeLogits",
    "KeyRelativeLogits",
    "ALiBi",
]

class RelativeLogits1d(PositionalLogits):
    """Base class of the 1-D relative terms: logits computed from a band ``(..., N, 2k+1)``.

    Subclasses implement :meth:`band`. :meth:`expand` spreads it over the ``(N, N)`` logits (all rows, or a
    chunk of rows) and :meth:`forward` plugs into :class:`~attnconv.attention.MultiHeadSelfAttention`.

    Args:
        num_heads: N_h.
        max_distance: k ≥ 0, or ``None`` for a kernel as wide as the sequence.
        window: logits for abs(δ) > k are -inf (a finite 2k+1 window) instead of the edge value (clipping).
        causal: logits for δ > 0 (future keys) are -inf, so that each query reads only itself and the past.

    Attributes:
        frame: ``"query"`` or ``"key"``: whose token each band row belongs to.
    """

    frame = "query"

    def __init__(self, num_heads: int, max_distance: int | None, window: bool = False, causal: bool = False) -> None:
        super().__init__(num_heads)
        self.max_distance = None if max_distance is None else int_at_least("max_distance", max_distance, 0)
        if window and max_distance is None:
            raise ValueError("window=True needs a max_distance: the window is abs(δ) ≤ max_distance")
        self.window = bool(window)
        self.causal = bool(causal)

    def mask_future(self, band: Tensor) -> Tensor:
        """-inf in the band's columns t > k (offsets δ > 0) when ``causal``; clipping then keeps δ > k at -inf."""
        if not self.causal:
            return band
        k = band.shape[-1] // 2
        future = torch.arange(band.shape[-1], device=band.device) > k
        return band.masked_fill(future, float("-inf"))

    @staticmethod
    def sequence_length(grid: Sequence[int]) -> int:
        """N for a 1-D grid ``(N,)``; a 2-D grid is an error."""
        if len(grid) != 1:
            raise ValueError(f"grid must be (N,): this is a 1-D sequence encoding, got {tuple(grid)}")
        return int(grid[0])

    def band(self, n: int, queries: Tensor | None, keys: Tensor | None) -> Tensor:
        """The term's band: ``(N_h, 1, 2k+1)`` for a content-independent term, else ``(B, N_h, N, 2k+1)``."""
        raise NotImplementedError

    def expand(self, band: Tensor, n: int, rows: slice | None = None, index: Tensor | None = None) -> Tensor:
        """``(N_h, T, N)`` or ``(B, N_h, T, N)`` logits of the queries in ``rows`` (all by default).

        ``index`` is an optional precomputed :func:`relative_index` for this band's k and these rows.
        """
        logits = band_to_logits(band, n, self.window, self.frame, rows, index)
        if self.causal and not self.window and band.shape[-1] == 1:
            # k = 0: the band has no column for δ > 0 that mask_future could mask, and clipping would give the
            # future keys the column of δ = 0
            span = range(n) if rows is None else range(n)[rows]
            offsets = torch.arange(n, device=band.device)[None, :] - torch.arange(span.start, span.stop,
                                                                                   device=band.device)[:, None]
            logits = logits.masked_fill(offsets > 0, float("-inf"))
        return logits

    def forward(self, grid: tuple[int, ...], queries: Tensor | None, keys: Tensor | None) -> Tensor:
        n = self.sequence_length(grid)
        return self.expand(self.band(n, queries, keys), n)

    def _check_heads(self, name: str, t: Tensor | None, n: int, head_dim: int) -> Tensor:
        if t is None:
            raise ValueError(f"{type(self).__name__} needs the projected {name}, got None")
        if t.dim() != 4 or t.shape[1] != self.num_heads or t.shape[2] != n or t.shape[3] != head_dim:
            raise ValueError(f"{name} must be (B, N_h={self.num_heads}, N={n}, D_h={head_dim}), "
                             f"got shape {tuple(t.shape)}")
        return t

    def extra_repr(self) -> str:
        return (f"num_heads={self.num_heads}, max_distance={self.max_distance}, window={self.window}, "
                f"causal={self.causal}")


class StaticRelativeLogits(RelativeLogits1d):
    """A content-independent term b^(h)_δ: one kernel of logits per head, the same for every query."""

    def kernel_logits(self, radius: int | None = None) -> Tensor:
        """b^(h)_δ for δ = -r..r, ``(N_h, 2r+1)``, with the tails (clipped or -inf) beyond k. Default r = k."""
        raise NotImplementedError

    def band(self, n: int, queries: Tensor | None = None, keys: Tensor | None = None) -> Tensor:
        radius = n - 1 if self.max_distance is None else self.max_distance
        return self.mask_future(self.kernel_logits(radius))[:, None, :]  # (N_h, 1, 2r+1)


class RelativePositionBias(StaticRelativeLogits):
    """A learned scalar bias b^(h)_δ per head and clipped offset (T5; Chang et al.'s fixed convolution).

    Args:
        num_heads: N_h.
        max_distance: k; offsets beyond ±k share the edge value (or are masked with ``window=True``).
        window: -inf beyond ±k, so that attention is a finite lightweight convolution of 2k+1 taps.
        num_buckets: if given, T5's logarithmic buckets (:func:`relative_position_bucket`): the kernel is
            piecewise constant, with ``num_buckets`` values in all.
        init_std: standard deviation of the random initial biases.
        causal: -inf for δ > 0: with ``window=True`` this is a causal lightweight convolution of k + 1 taps.

    Attributes:
        weight: ``(N_h, 2k+1)`` biases, or ``(N_h, num_buckets)`` with buckets.
        bucket: ``(2k+1,)`` long buffer, the column of ``weight`` used at offset δ = t - k.
    """

    def __init__(self, num_heads: int, max_distance: int, window: bool = False, num_buckets: int | None = None,
                 init_std: float = 0.5, causal: bool = False) -> None:
        super().__init__(num_heads, max_distance, window, causal)
        offsets = torch.arange(-self.max_distance, self.max_distance + 1)
        self.num_buckets = num_buckets
        if num_buckets is None:
            columns, bucket = 2 * self.max_distance + 1, offsets + self.max_distance
        else:
            columns, bucket = num_buckets, relative_position_bucket(offsets, num_buckets, self.max_distance)
        self.register_buffer("bucket", bucket, persistent=False)
        self.weight = nn.Parameter(torch.randn(num_heads, columns) * init_std)

    def kernel_logits(self, radius: int | None = None) -> Tensor:
        k = self.max_distance
        r = k if radius is None else int_at_least("radius", radius, 0)
        offsets = torch.arange(-r, r + 1, device=self.weight.device)
        logits = self.weight[:, self.bucket[offsets.clamp(-k, k) + k]]  # (N_h, 2r+1)
        if self.window and r > k:
            logits = logits.masked_fill(offsets.abs() > k, float("-inf"))
        if self.causal:
            logits = logits.masked_fill(offsets > 0, float("-inf"))
        return logits

    def extra_repr(self) -> str:
        return super().extra_repr() + f", num_buckets={self.num_buckets}"


class ALiBi(StaticRelativeLogits):
    """Attention with linear biases (Press et al. 2022): logit -m_h abs(δ), a kernel decaying geometrically.

    The slopes are fixed, m_h = 2^(-8h / N_h) for h = 1..N_h (the paper's geometric sequence; for N_h a power
    of two it is exactly theirs). As a convolution, head h's kernel is β_δ ∝ exp(-m_h abs(δ)) over the whole
    sequence: no clipping, no window.

    Args:
        num_heads: N_h.
        causal: also mask the future (δ > 0 gets -inf), as in the paper's decoder-only models.
    """

    def __init__(self, num_heads: int, causal: bool = False) -> None:
        super().__init__(num_heads, max_distance=None)
        self.causal = bool(causal)
        exponents = torch.arange(1, num_heads + 1, dtype=torch.float64) * (-8.0 / num_heads)
        self.register_buffer("slopes", torch.pow(2.0, exponents).to(torch.get_default_dtype()), persistent=False)

    def kernel_logits(self, radius: int | None = None) -> Tensor:
        if radius is None:
            raise ValueError("ALiBi's kernel spans the whole sequence: give radius = N - 1")
        r = int_at_least("radius", radius, 0)
        offsets = torch.arange(-r, r + 1, device=self.slopes.device)
        logits = -self.slopes[:, None] * offsets.abs().to(self.slopes.dtype)  # (N_h, 2r+1)
        return logits.masked_fill(offsets > 0, float("-inf")) if self.causal else logits

    def extra_repr(self) -> str:
        return f"num_heads={self.num_heads}, causal={self.causal}"


class QueryRelativeLogits(RelativeLogits1d):
    """Shaw et al.'s relative-key term (X_i W_qry^(h))·a_δ / sqrt(D_h): a query-dependent dynamic convolution.

    Row i of the band is x_i W^D with W^D = W_qry^(h) [a_{-k} ... a_k] / sqrt(D_h) (plus the query bias's
    share), so head h's kernel at token i is predicted from token i, through a matrix of rank ≤ D_h.

    Args:
        num_heads: N_h.
        head_dim: D_h.
        max_distance: k; offsets beyond ±k reuse a_{±k} (or are masked with ``window=True``).
        window: -inf beyond ±k.
        init_std: standard deviation of the random initial embeddings.

    Attributes:
        embedding: ``(2k+1, D_h)`` relative embeddings a_δ, row t for δ = t - k, shared by the heads (as in
            Shaw et al.).
    """

    uses_queries = True

    def __init__(self, num_heads: int, head_dim: int, max_distance: int, window: bool = False,
                 init_std: float = 1.0, causal: bool = False) -> None:
        super().__init__(num_heads, max_distance, window, causal)
        self.head_dim = positive_int("head_dim", head_dim)
        self.embedding = nn.Parameter(torch.randn(2 * self.max_distance + 1, head_dim) * init_std)

    def band(self, n: int, queries: Tensor | None, keys: Tensor | None = None) -> Tensor:
        q = self._check_heads("queries", queries, n, self.head_dim)
        return self.mask_future(q @ self.embedding.T / math.sqrt(self.head_dim))  # (B, N_h, N, 2k+1)

    def extra_repr(self) -> str:
        return super().extra_repr() + f", head_dim={self.head_dim}"


class KeyRelativeLogits(RelativeLogits1d):
    """The key-dependent term (X_j W_key^(h))·c_δ / sqrt(D_h) (DeBERTa's position-to-content, with δ = j - i).

    Row j of the band is predicted from key token j alone: γ_j = X_j W_key C^T / sqrt(D_h). Query i's logit
    for key j is γ_j[clip(j - i)], so as a convolution, the weight at offset δ comes from the token it reads
    (:func:`key_to_query_frame`). DeBERTa scales by 1 / sqrt(3 D_h); we keep 1 / sqrt(D_h), like the other terms.

    Args:
        num_heads: N_h.
        head_dim: D_h.
        max_distance: k.
        window: -inf beyond ±k.
        init_std: standard deviation of the random initial embeddings.
        causal: -inf for δ > 0.

    Attributes:
        embedding: ``(2k+1, D_h)`` embeddings c_δ, row t for δ = t - k (key minus query), shared by the heads.
            Chang et al.'s code indexes this table by query minus key: their table is ``embedding.flip(0)``.
    """

    uses_keys = True
    frame = "key"

    def __init__(self, num_heads: int, head_dim: int, max_distance: int, window: bool = False,
                 init_std: float = 1.0, causal: bool = False) -> None:
        super().__init__(num_heads, max_distance, window, causal)
        self.head_dim = positive_int("head_dim", head_dim)
        self.embedding = nn.Parameter(torch.randn(2 * self.max_distance + 1, head_dim) * init_std)

    def band(self, n: int, queries: Tensor | None = None, keys: Tensor | None = None) -> Tensor:
        k = self._check_heads("keys", keys, n, self.head_dim)
        return self.mask_future(k @ self.embedding.T / math.sqrt(self.head_dim))  # (B, N_h, N, 2k+1), key frame

    def extra_repr(self) -> str:
        return super().extra_repr() + f", head_dim={self.head_dim}"
