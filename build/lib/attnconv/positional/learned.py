"""Learned 2-D relative encodings (Cordonnier et al. 2020, Sec. 4.2; after Bello et al. 2019).

Each relative position δ = (δ_1, δ_2) gets an embedding r_δ = [R^row_{δ_1}, R^col_{δ_2}] of dimension
``dim``: half from a table indexed by the row offset, half from one indexed by the column offset. Head h's
logit is a query times r_δ:

- ``query_dependent=False``: a learned positional query u^(h) per head, logit u^(h) · r_δ. This is a row
  term plus a column term, so the softmax factorises over the axes, like the quadratic encoding.
- ``query_dependent=True``: the content query x_q W_qry^(h) (length D_h = ``dim``) times r_δ; use it with
  the content term switched on for the "learned + content" model.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor, nn

from .._checks import positive_int
from .base import PositionalLogits, softmax_flushed

__all__ = ["LearnedRelativeEncoding2d"]


def _check_grid(grid: tuple[int, ...]) -> None:
    if len(grid) != 2:
        raise ValueError(f"grid must be (H, W): LearnedRelativeEncoding2d works on images, got {tuple(grid)} "
                         "(a sequence needs a 1-D encoding from attnconv.positional.sequence)")


class LearnedRelativeEncoding2d(PositionalLogits):
    """Row and column tables of relative embeddings for grids of up to ``max_size`` x ``max_size``.

    Args:
        num_heads: N_h.
        max_size: the largest grid side; offsets run over -(max_size - 1) .. max_size - 1.
        dim: D_p, the embedding dimension (even: half rows, half columns). Must equal the head dimension
            D_h when ``query_dependent``.
        query_dependent: use the content queries instead of a learned positional query per head.
    """

    def __init__(self, num_heads: int, max_size: int, dim: int, query_dependent: bool = False) -> None:
        super().__init__(num_heads)
        self.max_size = positive_int("max_size", max_size)
        self.dim = positive_int("dim", dim)
        if dim % 2:
            raise ValueError(f"dim must be even (half for rows, half for columns), got {dim}")
        self.query_dependent = query_dependent
        self.uses_queries = query_dependent
        span = 2 * max_size - 1
        self.rows = nn.Parameter(torch.randn(span, dim // 2) / math.sqrt(dim))  # R^row, indexed by δ_1 + M - 1
        self.cols = nn.Parameter(torch.randn(span, dim // 2) / math.sqrt(dim))  # R^col, indexed by δ_2 + M - 1
        self.query = None if query_dependent else nn.Parameter(torch.randn(num_heads, dim))  # u^(h)

    def _index(self, length: int) -> Tensor:
        if length > self.max_size:
            raise ValueError(f"grid side {length} exceeds max_size={self.max_size}")
        pos = torch.arange(length, device=self.rows.device)
        return pos[None, :] - pos[:, None] + self.max_size - 1  # (L, L): table row of δ = key - query

    def axis_logits(self, grid: tuple[int, ...]) -> list[Tensor]:
        """Row and column logits ``(N_h, H, H)`` and ``(N_h, W, W)`` of the positional query (not query-dependent)."""
        _check_grid(grid)
        half = self.dim // 2
        out = []
        for length, table, u in zip(grid, (self.rows, self.cols), (self.query[:, :half], self.query[:, half:])):
            scores = u @ table.T  # (N_h, 2M - 1): u^(h) · R_m for every offset m
            out.append(scores[:, self._index(length)])
        return out

    def forward(self, grid: tuple[int, ...], queries: Tensor | None = None, keys: Tensor | None = None) -> Tensor:
        """Logits: ``(N_h, N, N)``, or ``(B, N_h, N, N)`` when query-dependent."""
        _check_grid(grid)
        h, w = grid
        if not self.query_dependent:
            rows, cols = self.axis_logits(grid)
            return (rows[:, :, None, :, None] + cols[:, None, :, None, :]).reshape(self.num_heads, h * w, h * w)
        if queries is None or queries.shape[-1] != self.dim:
            got = None if queries is None else queries.shape[-1]
            raise ValueError(f"query_dependent needs queries with head_dim == dim={self.dim}, got {got}")
        b = queries.shape[0]
        half = self.dim // 2
        q = queries.reshape(b, self.num_heads, h, w, self.dim)
        # Scores against every table row (the (…, 2M - 1) band), then pick each key's offset: no N x N x D table.
        row_scores = q[..., :half] @ self.rows.T  # (B, N_h, H, W, 2M - 1)
        col_scores = q[..., half:] @ self.cols.T
        ri, ci = self._index(h), self._index(w)  # (H, H), (W, W)
        row_part = row_scores.gather(-1, ri[None, None, :, None, :].expand(b, self.num_heads, h, w, h))
        col_part = col_scores.gather(-1, ci[None, None, None, :, :].expand(b, self.num_heads, h, w, w))
        logits = row_part[..., :, None] + col_part[..., None, :]  # (B, N_h, H, W, H_k, W_k)
        return logits.reshape(b, self.num_heads, h * w, h * w)

    def factorized_probs(self, grid: tuple[int, ...]) -> list[Tensor] | None:
        if self.query_dependent:
            return None
        return [softmax_flushed(part) for part in self.axis_logits(grid)]

    def extra_repr(self) -> str:
        return (f"num_heads={self.num_heads}, max_size={self.max_size}, dim={self.dim}, "
                f"query_dependent={self.query_dependent}")
