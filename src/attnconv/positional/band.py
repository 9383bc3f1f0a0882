"""The band: relative logits stored as ``(..., N, 2k+1)``, one column per offset, and spread over ``(N, N)``.

Every term is computed as a band ``(..., N, 2k+1)``: column t holds the logit for offset
δ = t - k. In the *query frame* row i belongs to query i (fixed and query-dependent terms); in the *key frame*
row j belongs to key j (the key-dependent term). :func:`band_to_logits` spreads a band over the ``(N, N)``
logits with one ``(N, N)`` index shared by every batch element and head. Offsets beyond ±k take the edge
column (clipping, as in Shaw et al. and T5), or -inf with ``window=True`` (a finite 2k+1 window). With
``causal=True`` every offset δ > 0 (a future key) is -inf: a decoder's attention, whose kernel reads the past only.
Offsets are δ = j - i, key minus query (see :mod:`attnconv.positional.sequence` for other codes' signs).
"""

from __future__ import annotations

import math

import torch
from torch import Tensor

from .._checks import available_device, int_at_least, positive_int

__all__ = ["FRAMES", "band_to_logits", "key_to_query_frame", "logits_to_band", "relative_index",
           "relative_position_bucket"]

FRAMES = ("query", "key")


def _check_tensor(name: str, t: object) -> None:
    if not isinstance(t, Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(t).__name__}: use torch.as_tensor({name})")


def _non_negative_int(name: str, value: object) -> int:
    return int_at_least(name, value, 0)


def _rows(rows: slice | None, n: int) -> tuple[int, int]:
    # range(n)[rows] holds rows.indices(n) as its start, stop and step: torch.compile(fullgraph=True) traces it, while
    # torch 2.11's cannot trace slice.indices (Colab's torch).
    span = range(n) if rows is None else range(n)[rows]
    if span.step != 1 or span.stop <= span.start:
        raise ValueError(f"rows must be a non-empty contiguous slice of range({n}), got {rows!r}")
    return span.start, span.stop


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
    _check_tensor("band", band)
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
    _check_tensor("logits", logits)
    if logits.dim() < 2 or logits.shape[-2] != logits.shape[-1]:
        raise ValueError(f"logits must be (..., N, N), got shape {tuple(logits.shape)}")
    n = logits.shape[-1]
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
    _check_tensor("band", band)
    if band.dim() < 2 or band.shape[-1] % 2 == 0:
        raise ValueError(f"band must be (..., N, 2k+1) with an odd last dim, got shape {tuple(band.shape)}")
    n, width = band.shape[-2], band.shape[-1]
    k = width // 2
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
    if not isinstance(offsets, Tensor) or offsets.dtype == torch.bool or offsets.is_floating_point() \
            or offsets.is_complex():
        raise TypeError(f"offsets must be an integer torch.Tensor of offsets j - i, got "
                        f"{getattr(offsets, 'dtype', type(offsets).__name__)}: a fractional offset has no bucket")
    positive_int("num_buckets", num_buckets)
    if num_buckets < 4 or num_buckets % 2:
        raise ValueError(f"num_buckets must be even and at least 4, got {num_buckets}")
    half, exact = num_buckets // 2, num_buckets // 4
    positive_int("max_distance", max_distance)
    if max_distance <= exact:
        raise ValueError(f"max_distance must be larger than num_buckets // 4 = {exact} for log buckets, "
                         f"got {max_distance}")
    distance = offsets.abs()
    scaled = torch.log(distance.clamp(min=1).to(torch.float64) / exact) / math.log(max_distance / exact)
    far = (exact + (scaled * (half - exact)).floor().long()).clamp(max=half - 1)
    return torch.where(distance < exact, distance, far) + (offsets > 0).long() * half
