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

**The band.** Every term is computed as a band ``(..., N, 2k+1)``: column t holds the logit for offset
δ = t - k. In the *query frame* row i belongs to query i (fixed and query-dependent terms); in the *key frame*
row j belongs to key j (the key-dependent term). :func:`band_to_logits` spreads a band over the ``(N, N)``
logits with one ``(N, N)`` index shared by every batch element and head. Offsets beyond ±k take the edge
column (clipping, as in Shaw et al. and T5), or -inf with ``window=True`` (a finite 2k+1 window). With
``causal=True`` every offset δ > 0 (a future key) is -inf: a decoder's attention, whose kernel reads the past only.

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

from .._checks import available_device, int_at_least, positive_int
from ..lightconv import odd_kernel_size
from .base import PositionalLogits

__all__ = [
    "relative_index",
    "band_to_logits",
    "logits_to_band",
    "key_to_query_frame",
    "relative_position_bucket",
    "RelativeLogits1d",
    "RelativePositionBias",
    "QueryRelativeLogits",
    "KeyRelativeLogits",
    "ALiBi",
]

FRAMES = ("query", "key")


def _non_negative_int(name: str, value: object) -> int:
    return int_at_least(name, value, 0)


def _rows(rows: slice | None, n: int) -> tuple[int, int]:
    start, stop, step = (0, n, 1) if rows is None else rows.indices(n)
    if step != 1 or stop <= start:
        raise ValueError(f"rows must be a non-empty contiguous slice of range({n}), got {rows!r}")
    return start, stop


def relative_index(n: int, max_distance: int, rows: slice | None = None,
                   device: torch.device | None = None) -> Tensor:
    """The band column each (query i, key j) pair reads: clip(j - i, -k, k) + k.

    Args:
        n: N, the sequence length.
        max_distance: k.
        rows: optional contiguous slice of queries (a chunk); all N by default.

    Returns:
        ``(T, N)`` long, T the number of rows. One index for the whole batch and every head.
    """
    n = positive_int("n", n)
    _non_negative_int("max_distance", max_distance)
    device = available_device("device", device)
    start, stop = _rows(rows, n)
    offsets = torch.arange(n, device=device)[None, :] - torch.arange(start, stop, device=device)[:, None]
    return offsets.clamp(-max_distance, max_distance) + max_distance


def band_to_logits(band: Tensor, n: int, window: bool = False, frame: str = "query",
                   rows: slice | None = None, index: Tensor | None = None) -> Tensor:
    """Spread a band of per-offset logits over the ``(N, N)`` attention logits.

    Args:
        band: ``(..., N or 1, 2k+1)``: column t is offset δ = t - k. A middle size of 1 (query frame only) is one
            kernel for every query. In the query frame it may also be just the T rows of ``rows``.
        n: N.
        window: offsets with abs(δ) > k get -inf instead of the edge column.
        frame: ``"query"``: ``out[i, j] = band[i, clip(j - i) + k]``; ``"key"``: ``out[i, j] = band[j, clip(j - i) + k]``.
        rows: optional contiguous slice of queries, to compute a chunk of rows.
        index: optional precomputed ``relative_index(n, k, rows)``, to share it between terms and chunks.

    Returns:
        ``(..., T, N)`` logits for the T selected queries. Memory: the output plus one ``(T, N)`` index; the index
        is expanded over the leading dims as a view, never copied per batch element or head.
    """
    if frame not in FRAMES:
        raise ValueError(f"frame must be one of {FRAMES}, got {frame!r}")
    if band.dim() < 2 or band.shape[-1] % 2 == 0:
        raise ValueError(f"band must be (..., N, 2k+1) with an odd last dim, got shape {tuple(band.shape)}")
    k = band.shape[-1] // 2
    start, stop = _rows(rows, n)
    if index is None:
        index = relative_index(n, k, rows, band.device)  # (T, N)
    elif tuple(index.shape) != (stop - start, n):
        raise ValueError(f"index must be relative_index(n, k, rows) of shape {(stop - start, n)}, "
                         f"got {tuple(index.shape)}")
    lead = band.shape[:-2]
    if frame == "query":
        if band.shape[-2] not in (1, n, stop - start):
            raise ValueError(f"a query-frame band must have N={n}, {stop - start} (the rows) or 1 rows, "
                             f"got shape {tuple(band.shape)}")
        partial = band.shape[-2] == n and stop - start < n
        source = band[..., start:stop, :] if partial else band
        source = source.expand(*lead, stop - start, band.shape[-1])
        out = source.gather(-1, index.expand(*lead, stop - start, n))
    else:
        if band.shape[-2] != n:
            raise ValueError(f"a key-frame band must have N={n} rows, got shape {tuple(band.shape)}")
        out = band.transpose(-1, -2).gather(-2, index.expand(*lead, stop - start, n))  # band[j, index[i, j]]
    if window and k < n - 1:
        offsets = torch.arange(n, device=band.device)[None, :] - torch.arange(start, stop, device=band.device)[:, None]
        out.masked_fill_(offsets.abs() > k, float("-inf"))
    return out


def logits_to_band(logits: Tensor, radius: int | None = None) -> Tensor:
    """Read ``(..., N, N)`` logits back as per-query kernels: ``out[..., i, t] = logits[..., i, i + t - r]``.

    Any attention logit matrix is a dynamic convolution kernel in this sense (chapter 05): row i of the result is
    the kernel over offsets δ = -r..r that query i applies. Entries whose key i + δ is outside the sequence are
    NaN (there is no such key).

    Args:
        logits: ``(..., N, N)``.
        radius: r, default N - 1 (every offset).

    Returns:
        ``(..., N, 2r+1)``.
    """
    n = logits.shape[-1]
    if logits.dim() < 2 or logits.shape[-2] != n:
        raise ValueError(f"logits must be (..., N, N), got shape {tuple(logits.shape)}")
    r = n - 1 if radius is None else _non_negative_int("radius", radius)
    read = torch.arange(n, device=logits.device)[:, None] + torch.arange(-r, r + 1, device=logits.device)  # (N, 2r+1)
    inside = (read >= 0) & (read < n)
    out = logits.gather(-1, read.clamp(0, n - 1).expand(*logits.shape[:-1], 2 * r + 1))
    return out.masked_fill(~inside, float("nan"))


def key_to_query_frame(band: Tensor) -> Tensor:
    """Re-index a key-frame band by query: ``out[..., i, t] = band[..., i + t - k, t]``, -inf outside.

    Row i is then the kernel that query i applies: its weight at offset δ comes from the key i + δ.

    Args:
        band: ``(..., N, 2k+1)`` in the key frame.

    Returns:
        ``(..., N, 2k+1)`` in the query frame.
    """
    n, width = band.shape[-2], band.shape[-1]
    k = odd_kernel_size(width)
    read = torch.arange(n, device=band.device)[:, None] + torch.arange(-k, k + 1, device=band.device)  # (N, K)
    inside = (read >= 0) & (read < n)
    flat = (read.clamp(0, n - 1) * width + torch.arange(width, device=band.device)).flatten()
    out = band.flatten(-2).index_select(-1, flat).view(*band.shape)
    return out.masked_fill(~inside, float("-inf"))


def relative_position_bucket(offsets: Tensor, num_buckets: int, max_distance: int) -> Tensor:
    """T5's bidirectional buckets for offsets δ = key - query (Raffel et al. 2020).

    Half of the buckets are for δ ≤ 0 and half for δ > 0. Within a half, the first ``num_buckets // 4``
    distances 0, 1, ... get a bucket each; larger distances share logarithmically wider buckets up to
    ``max_distance``; every distance ≥ ``max_distance`` falls in the last bucket. Hence bucket(δ) =
    bucket(clip(δ, -k, k)) with k = ``max_distance``: bucketing is clipping plus a piecewise-constant kernel.

    Args:
        offsets: integer tensor of offsets δ, any shape.
        num_buckets: even, at least 4.
        max_distance: k, larger than ``num_buckets // 4``.

    Returns:
        long tensor of the shape of ``offsets``, values in ``[0, num_buckets)``.
    """
    positive_int("num_buckets", num_buckets)
    if num_buckets < 4 or num_buckets % 2:
        raise ValueError(f"num_buckets must be even and at least 4, got {num_buckets}")
    half, exact = num_buckets // 2, num_buckets // 4
    if max_distance <= exact:
        raise ValueError(f"max_distance must be larger than num_buckets // 4 = {exact} for log buckets, "
                         f"got {max_distance}")
    distance = offsets.abs()
    scaled = torch.log(distance.clamp(min=1).to(torch.float64) / exact) / math.log(max_distance / exact)
    far = (exact + (scaled * (half - exact)).floor().long()).clamp(max=half - 1)
    return torch.where(distance < exact, distance, far) + (offsets > 0).long() * half


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
        self.max_distance = None if max_distance is None else _non_negative_int("max_distance", max_distance)
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
        return band_to_logits(band, n, self.window, self.frame, rows, index)

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


class _StaticRelativeLogits(RelativeLogits1d):
    """A content-independent term b^(h)_δ: one kernel of logits per head, the same for every query."""

    def kernel_logits(self, radius: int | None = None) -> Tensor:
        """b^(h)_δ for δ = -r..r, ``(N_h, 2r+1)``, with the tails (clipped or -inf) beyond k. Default r = k."""
        raise NotImplementedError

    def band(self, n: int, queries: Tensor | None = None, keys: Tensor | None = None) -> Tensor:
        radius = n - 1 if self.max_distance is None else self.max_distance
        return self.mask_future(self.kernel_logits(radius))[:, None, :]  # (N_h, 1, 2r+1)


class RelativePositionBias(_StaticRelativeLogits):
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
        r = k if radius is None else _non_negative_int("radius", radius)
        offsets = torch.arange(-r, r + 1, device=self.weight.device)
        logits = self.weight[:, self.bucket[offsets.clamp(-k, k) + k]]  # (N_h, 2r+1)
        if self.window and r > k:
            logits = logits.masked_fill(offsets.abs() > k, float("-inf"))
        if self.causal:
            logits = logits.masked_fill(offsets > 0, float("-inf"))
        return logits

    def extra_repr(self) -> str:
        return super().extra_repr() + f", num_buckets={self.num_buckets}"


class ALiBi(_StaticRelativeLogits):
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
        r = _non_negative_int("radius", radius)
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
