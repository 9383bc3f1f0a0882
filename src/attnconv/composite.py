"""Composite attention (Chang et al. 2021): content attention plus convolution kernels, under one softmax.

Head h's logits are a sum of terms, each switched on by a flag:

    α_ij = (X_i W_qry)(X_j W_key)^T / sqrt(D_h)       content                    (``content``)
         + b_{δ}                                      fixed lightweight conv     (``fixed``)
         + (X_i W_qry)·a_{δ} / sqrt(D_h)              query-dependent dynamic    (``query_dynamic``)
         + (X_j W_key)·c_{δ} / sqrt(D_h)              key-dependent dynamic      (``key_dynamic``)

with δ = clip(j - i, -k, k). Every term is a kernel on the logits, so composite attention is a softmax of a
sum of convolution kernels (chapter 05). The query, key and value projections can be depthwise-separable
convolutions (``conv_projections``), the other injection point of the paper.

The layer takes any length N ≤ ``max_length`` and a padding mask, with or without the content term. It never
builds a per-batch or per-head index: each relative term is a band ``(..., N, 2k+1)`` spread over the logits
with one shared index, and queries are processed in chunks of T rows, so the largest temporary is
``(B, N_h, T, N)``: about 2^19 logits, and at least 64 rows, unless ``query_chunk`` fixes T.
"""

from __future__ import annotations

import math
from typing import Sequence

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from ._checks import int_at_least, positive_int
from .attention import MultiHeadSelfAttention
from .lightconv import DepthwiseSeparableConv1d, masked_softmax
from .positional.base import PositionalLogits
from .positional.sequence import (
    KeyRelativeLogits,
    QueryRelativeLogits,
    RelativeLogits1d,
    RelativePositionBias,
    band_to_logits,
    relative_index,
)

__all__ = ["RelativeLogitSum", "CompositeAttention", "CONV_PROJECTIONS"]

CONV_PROJECTIONS = ("query", "key", "value")
CHUNK_LOGITS = 2**19  # logits per chunk when query_chunk is None (2 MiB in float32)


class RelativeLogitSum(PositionalLogits):
    """The sum of several 1-D relative terms, as one positional module.

    Args:
        terms: :class:`~attnconv.positional.RelativeLogits1d` modules, all for the same number of heads.
    """

    def __init__(self, terms: Sequence[RelativeLogits1d]) -> None:
        terms = list(terms)
        if not terms:
            raise ValueError("terms must hold at least one relative term")
        if not all(isinstance(t, RelativeLogits1d) for t in terms):
            raise ValueError("terms must be RelativeLogits1d modules (1-D relative terms)")
        heads = {t.num_heads for t in terms}
        if len(heads) != 1:
            raise ValueError(f"terms must all have the same num_heads, got {sorted(heads)}")
        super().__init__(heads.pop())
        self.terms = nn.ModuleList(terms)
        self.uses_queries = any(t.uses_queries for t in terms)
        self.uses_keys = any(t.uses_keys for t in terms)

    def forward(self, grid: tuple[int, ...], queries: Tensor | None, keys: Tensor | None) -> Tensor:
        out = self.terms[0](grid, queries, keys)
        for term in self.terms[1:]:
            out = out + term(grid, queries, keys)
        return out


class CompositeAttention(MultiHeadSelfAttention):
    """Multi-head self-attention whose logits are content plus fixed and dynamic convolution kernels.

    Args:
        embed_dim: C.
        num_heads: N_h.
        max_distance: k, the clipping distance of every relative term (kernel size 2k+1).
        max_length: the longest sequence accepted. Any N ≤ ``max_length`` works; it also bounds the width,
            2 ``max_length`` - 1, of the convolution equivalent to a clipped kernel.
        content: the content term X_i W_qry (X_j W_key)^T / sqrt(D_h).
        fixed: a :class:`~attnconv.positional.RelativePositionBias` b^(h)_δ.
        query_dynamic: a :class:`~attnconv.positional.QueryRelativeLogits` (Shaw et al.).
        key_dynamic: a :class:`~attnconv.positional.KeyRelativeLogits`.
        num_buckets: T5 buckets for the fixed term (``None``: one bias per offset).
        window: attend only to abs(δ) ≤ k: every relative term (and the content term) is -inf beyond, so each
            kernel is finite, instead of clipping.
        conv_projections: which of ``"query"``, ``"key"``, ``"value"`` are
            :class:`~attnconv.lightconv.DepthwiseSeparableConv1d` instead of ``nn.Linear``.
        conv_kernel_size: kernel size of those convolutions (odd).
        head_dim, bias, dropout: as in :class:`~attnconv.attention.MultiHeadSelfAttention`.
        query_chunk: T, queries per chunk, bounding temporaries to ``(B, N_h, T, N)``. ``None`` (default) picks
            T = max(64, 2^19 / (B N_h N)): one chunk for small inputs, 64-row chunks for large ones.

    Attributes:
        fixed_term, query_term, key_term: the relative modules, or ``None`` when switched off.

    Shapes:
        x: ``(B, N, C)``, N ≤ ``max_length``; ``key_padding_mask``: bool ``(B, N)``, ``True`` on padding. Output
        ``(B, N, C)`` and, with ``need_weights``, probabilities ``(B, N_h, N, N)``. A token whose every key is
        masked (possible only on padding with ``window=True``) gets zero weights and a zero-value output.
    """

    def __init__(
        self,
        embed_dim: int,
        num_heads: int,
        max_distance: int,
        max_length: int = 512,
        *,
        content: bool = True,
        fixed: bool = True,
        query_dynamic: bool = False,
        key_dynamic: bool = False,
        num_buckets: int | None = None,
        window: bool = False,
        conv_projections: Sequence[str] = (),
        conv_kernel_size: int = 3,
        head_dim: int | None = None,
        bias: bool = True,
        dropout: float = 0.0,
        query_chunk: int | None = None,
    ) -> None:
        if not (content or fixed or query_dynamic or key_dynamic):
            raise ValueError("at least one of content, fixed, query_dynamic, key_dynamic must be True")
        embed_dim, num_heads = positive_int("embed_dim", embed_dim), positive_int("num_heads", num_heads)
        int_at_least("max_distance", max_distance, 0)
        d_h = head_dim if head_dim is not None else (embed_dim // num_heads if embed_dim % num_heads == 0 else None)
        terms: list[RelativeLogits1d] = []
        fixed_term = query_term = key_term = None
        if fixed:
            fixed_term = RelativePositionBias(num_heads, max_distance, window=window, num_buckets=num_buckets)
            terms.append(fixed_term)
        elif num_buckets is not None:
            raise ValueError("num_buckets applies to the fixed term: set fixed=True or num_buckets=None")
        if (query_dynamic or key_dynamic) and d_h is None:
            raise ValueError(f"embed_dim ({embed_dim}) must be divisible by num_heads ({num_heads}) "
                             "when head_dim is not given")
        if query_dynamic:
            query_term = QueryRelativeLogits(num_heads, d_h, max_distance, window=window)
            terms.append(query_term)
        if key_dynamic:
            key_term = KeyRelativeLogits(num_heads, d_h, max_distance, window=window)
            terms.append(key_term)
        super().__init__(embed_dim, num_heads, head_dim=head_dim, bias=bias, content=content, dropout=dropout,
                         positional=RelativeLogitSum(terms) if terms else None)
        self.fixed_term, self.query_term, self.key_term = fixed_term, query_term, key_term
        self.max_distance = max_distance
        self.window = window
        self.max_length = positive_int("max_length", max_length)
        self.query_chunk = None if query_chunk is None else positive_int("query_chunk", query_chunk)
        self.conv_projections = self._convolve_projections(conv_projections, conv_kernel_size, bias)

    def _convolve_projections(self, names: Sequence[str], kernel_size: int, bias: bool) -> tuple[str, ...]:
        names = tuple(names)
        for name in names:
            if name not in CONV_PROJECTIONS:
                raise ValueError(f"conv_projections must name some of {CONV_PROJECTIONS}, got {name!r}")
            attr = name[0] + "_proj"
            linear = getattr(self, attr)
            if linear is None:
                raise ValueError(f"conv_projections names {name!r}, but this layer computes no {name}s "
                                 "(switch on content or a term that uses them)")
            setattr(self, attr, DepthwiseSeparableConv1d(self.embed_dim, linear.out_features, kernel_size, bias))
        return names

    @property
    def terms(self) -> list[RelativeLogits1d]:
        """The relative terms that are switched on."""
        return [] if self.positional is None else list(self.positional.terms)

    def _check_input(self, x: Tensor) -> int:
        if x.dim() != 3:
            raise ValueError(f"x must be (B, N, C): CompositeAttention works on sequences, got shape {tuple(x.shape)}")
        if x.shape[-1] != self.embed_dim:
            raise ValueError(f"x must have embed_dim={self.embed_dim} channels in its last dim, got {x.shape[-1]}")
        n = x.shape[1]
        if n > self.max_length:
            raise ValueError(f"sequence length N={n} exceeds max_length={self.max_length}")
        return n

    def forward(
        self, x: Tensor, key_padding_mask: Tensor | None = None, need_weights: bool = False
    ) -> tuple[Tensor, Tensor | None]:
        """Composite self-attention over the tokens of ``x``.

        Args:
            x: ``(B, N, C)`` with N ≤ ``max_length``.
            key_padding_mask: optional bool ``(B, N)``, ``True`` marks padded keys.
            need_weights: also return the attention probabilities.

        Returns:
            ``(out, probs)``: ``out`` is ``(B, N, D_out)``; ``probs`` is ``(B, N_h, N, N)`` or ``None``.
        """
        n = self._check_input(x)
        pad = None if key_padding_mask is None else self.padding_bias(key_padding_mask, x.shape, x.dtype)
        if pad is not None and self.conv_projections:
            x = x.masked_fill(key_padding_mask[..., None], 0.0)  # padding reads as a convolution's zero padding
        q, k, v = self.project(x)  # (B, N_h, N, D_h), or None when unused
        # Contiguous once, so that no chunk copies (and keeps for backward) its own copy of Q, K or V.
        q = None if q is None else q.contiguous()
        kt = None if k is None else k.transpose(-2, -1).contiguous()  # (B, N_h, D_h, N)
        k = None if k is None else kt.transpose(-2, -1)
        v = v.expand(-1, self.num_heads, -1, -1).contiguous()
        bands: dict[str, Tensor] = {}  # one band per frame: kernels in the same frame add up before expanding
        for term in self.terms:
            band = term.band(n, q, k)  # (N_h, 1, 2k+1) or (B, N_h, N, 2k+1)
            bands[term.frame] = band if term.frame not in bands else bands[term.frame] + band
        index = relative_index(n, self.max_distance, device=x.device)  # (N, N), shared by every term and chunk
        chunk = self.query_chunk or max(64, CHUNK_LOGITS // (x.shape[0] * self.num_heads * n))
        starts = range(0, n, chunk)
        # Per-query tensors are split into chunks once: their gradients are then joined once, not zero-padded per chunk.
        q_rows = q.split(chunk, dim=2) if self.content else [None] * len(starts)
        query_band = bands.get("query")
        query_rows = query_band.split(chunk, dim=-2) if query_band is not None and query_band.shape[-2] == n else \
            [query_band] * len(starts)
        p_drop = self.dropout if self.training else 0.0
        heads, weights = [], []
        softmax = masked_softmax if (self.window and pad is not None) else torch.softmax  # else no row is all -inf
        for start, q_chunk, query_chunk in zip(starts, q_rows, query_rows):
            rows = slice(start, min(start + chunk, n))
            chunk_bands = {"query": query_chunk, "key": bands.get("key")}
            logits = self._chunk_logits(rows, n, q_chunk, kt, chunk_bands, index[rows], pad)  # (B or 1, N_h, T, N)
            probs = softmax(logits, dim=-1)
            attended = F.dropout(probs, p_drop) if p_drop else probs
            heads.append(attended @ v)  # (B, N_h, T, D_h)
            if need_weights:
                weights.append(probs)
        heads = heads[0] if len(heads) == 1 else torch.cat(heads, dim=-2)  # (B, N_h, N, D_h); frees the chunks
        out = self.merge_heads(heads, (n,))
        if not need_weights:
            return out, None
        probs = weights[0] if len(weights) == 1 else torch.cat(weights, dim=-2)
        return out, probs.expand(x.shape[0], *probs.shape[-3:])

    def _chunk_logits(self, rows: slice, n: int, q_rows: Tensor | None, kt: Tensor | None,
                      bands: dict[str, Tensor | None], index: Tensor, pad: Tensor | None) -> Tensor:
        """The logits of the queries in ``rows``: at most two ``(B, N_h, T, N)`` tensors live at a time.

        ``q_rows`` holds these queries (``None`` without the content term); ``bands`` the query-frame band of these
        rows and the whole key-frame band (``None`` when absent).
        """
        out = None
        present = sorted(((f, b) for f, b in bands.items() if b is not None), key=lambda fb: -fb[1].dim())
        for frame, band in present:  # per-batch bands first, so the others can be added in place
            term = band_to_logits(band, n, self.window, frame, rows, index)  # (B or N_h, ..., T, N)
            out = term if out is None else out.add_(term)
            del term  # free it before the next term is expanded
        if q_rows is not None:
            out = self._add_content(out, q_rows, kt)
        if self.window and not present:  # content only: the window still limits attention to abs(δ) ≤ k
            offsets = torch.arange(n, device=out.device)[None, :] - torch.arange(rows.start, rows.stop,
                                                                                 device=out.device)[:, None]
            out.masked_fill_(offsets.abs() > self.max_distance, float("-inf"))
        if pad is not None:
            out = out + pad if out.dim() == 3 else out.add_(pad)
        return out if out.dim() == 4 else out[None]

    def _add_content(self, out: Tensor | None, q_rows: Tensor, kt: Tensor) -> Tensor:
        """``out + Q_rows K^T / sqrt(D_h)`` in one fused batched matmul (``baddbmm``) when ``out`` is per batch.

        Not in place: an in-place update of a view would make autograd copy the chunk's gradient again.
        """
        b, h, _, d = q_rows.shape
        q_rows = q_rows.reshape(b * h, -1, d)  # a view: q is contiguous
        kt = kt.reshape(b * h, d, -1)
        scale = 1.0 / math.sqrt(self.head_dim)
        if out is None or out.dim() == 3:  # nothing per batch yet: start from the content term
            content = torch.bmm(q_rows, kt).mul_(scale).view(b, h, q_rows.shape[1], -1)
            return content if out is None else content.add_(out)
        return torch.baddbmm(out.view(b * h, *out.shape[-2:]), q_rows, kt, alpha=scale).view(out.shape)

    def extra_repr(self) -> str:
        flags = [name for name, on in (("content", self.content), ("fixed", self.fixed_term is not None),
                                       ("query_dynamic", self.query_term is not None),
                                       ("key_dynamic", self.key_term is not None)) if on]
        return (f"embed_dim={self.embed_dim}, num_heads={self.num_heads}, head_dim={self.head_dim}, "
                f"max_distance={self.max_distance}, max_length={self.max_length}, terms={'+'.join(flags)}, "
                f"window={self.window}, conv_projections={self.conv_projections}, dropout={self.dropout}")
