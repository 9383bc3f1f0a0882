"""Composite attention (Chang et al. 2021): content attention plus convolution kernels, under one softmax.

Head h's logits are a sum of terms, each switched on by a flag:

    α_ij = (X_i W_qry)(X_j W_key)^T / sqrt(D_h)       content                    (``content``)
         + b_{δ}                                      fixed lightweight conv     (``fixed``)
         + (X_i W_qry)·a_{δ} / sqrt(D_h)              query-dependent dynamic    (``query_dynamic``)
         + (X_j W_key)·c_{δ} / sqrt(D_h)              key-dependent dynamic      (``key_dynamic``)

with δ = clip(j - i, -k, k). Every term is a kernel on the logits, so composite attention is a softmax of a
sum of convolution kernels (chapter 05). The query, key and value projections can be depthwise-separable
convolutions (``conv_projections``), the other injection point of the paper; as in Chang et al.'s code, they can
put an activation between their depthwise and pointwise steps (``conv_activation="gelu"``, or another such as
``"gelu_new"``), can widen the depthwise step (``conv_depth_multiplier``), can be one grouped convolution
instead (``conv_groups``), and can cover only half of the heads (``mixed_projections``). Their ``convolution``
variant adds a depthwise convolution of the values to the attention's context, times a scalar per head
(``value_conv``, with ``value_conv_scale`` and ``value_conv_bias``). The projections and the branch are built
in ``attnconv.conv_projections``; their classes are importable from here too.

The offsets are key minus query, δ = j - i. Chang et al.'s code indexes the key-dependent table by query minus
key, so their table is this layer's ``key_term.embedding`` with its rows reversed.

The layer takes any length N ≤ ``max_length`` and a padding mask, with or without the content term. It never
builds a per-batch or per-head index: each relative term is a band ``(..., N, 2k+1)`` spread over the logits
with one index shared by the terms, and queries are processed in chunks of T rows, each with its own ``(T, N)``
index, so the largest temporary is ``(B, N_h, T, N)``: about 2^19 logits, and at least 64 rows, unless
``query_chunk`` fixes T. Nothing of size N × N is built unless ``need_weights`` asks for the probabilities.
"""

from __future__ import annotations

import math
from typing import Mapping, Sequence

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from ._checks import check_finite_result, int_at_least, positive_int
from .attention import MultiHeadSelfAttention, probs_like
from .conv_projections import (CONV_PROJECTIONS, MIXED_SPLITS, VALUE_CONV_SCALES, GroupedConv1d, MixedProjection,
                               ProjectionSettings, projection_settings, value_branch)
from .lightconv import masked_softmax
from .taps import softmax_fp32
from .positional.base import PositionalLogits
from .positional.sequence import (
    KeyRelativeLogits,
    QueryRelativeLogits,
    RelativeLogits1d,
    RelativePositionBias,
    band_to_logits,
    relative_index,
)

__all__ = ["RelativeLogitSum", "CompositeAttention", "GroupedConv1d", "MixedProjection", "CONV_PROJECTIONS",
           "MIXED_SPLITS", "VALUE_CONV_SCALES"]

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

    Each of ``conv_activation``, ``conv_groups``, ``conv_depth_multiplier`` and ``mixed_projections`` is one value for
    all the convolutional projections, or a mapping from projection name to its own (names left out get the
    default), as Chang et al. configure their query/key and their value convolutions separately.

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
        conv_kernel_size: kernel size of those convolutions (odd): one for all, or a mapping from projection name
            to its own size (Chang et al. give the query/key and the value convolutions their own), and the default
            of ``value_conv_kernel_size``.
        conv_activation: ``None`` or an activation name (``"gelu"``, Chang et al.'s default, ``"gelu_new"``, the
            tanh approximation, ``"relu"``, ...: the ``ACTIVATIONS`` of ``attnconv.conv_projections``) between the
            depthwise and pointwise steps of the convolutional projections. The projection is then not linear, so it
            has no convolution or attention counterpart; ``None`` keeps it one ``nn.Conv1d``.
        conv_groups: ``None``: depthwise-separable projections. G: each is one ``nn.Conv1d(C, N_h D_h, K,
            groups=G)`` with no pointwise step (:class:`GroupedConv1d`, Chang et al.'s non-depthwise convolution).
        conv_depth_multiplier: m, the depthwise step's output channels per input channel (its output has m C
            channels, the pointwise step's input); Chang et al.'s depthwise step has N_h D_h outputs, m = N_h D_h / C.
        mixed_projections: the convolutional projections cover only half of the query (key, value) channels; the
            others keep ``nn.Linear`` (:class:`MixedProjection`, Chang et al.'s "mixed"). Needs N_h ≥ 2.
        mixed_split: ``"heads"``: the first N_h // 2 heads are convolutional. ``"channels"``: the first
            (N_h D_h) // 2 channels, as in Chang et al.'s code; the two agree for an even N_h.
        value_conv: add a depthwise convolution of the values (one kernel per value channel, zero padding, padded
            tokens read as zeros) to the attention's context, times a scalar (Chang et al.'s ``convolution``).
            The kernel is signed and unnormalised, so the branch is no attention head; with position-only logits
            the layer is the sum of a lightweight and a depthwise convolution.
        value_conv_kernel_size: the branch's kernel size (odd); default ``conv_kernel_size`` when that is an int.
        value_conv_bias: a bias per value channel on the branch's convolution (Chang et al.'s has one).
        value_conv_scale: the scalar: ``"zero"``, one learned γ that starts at 0, so that the layer starts as plain
            composite attention; ``"fixed"``, one scalar per head equal to 1 and not trained (Chang et al.'s
            ``convolution``); ``"per_head"``, one scalar per head that starts at 1 and trains (their
            ``convolution_scaled``).
        head_dim, bias, dropout: as in :class:`~attnconv.attention.MultiHeadSelfAttention`.
        query_chunk: T, queries per chunk, bounding temporaries to ``(B, N_h, T, N)``. ``None`` (default) picks
            T = max(64, 2^19 / (B N_h N)): one chunk for small inputs, 64-row chunks for large ones.

    Attributes:
        fixed_term, query_term, key_term: the relative modules, or ``None`` when switched off.
        value_conv: ``nn.Conv1d(N_h D_h, N_h D_h, K, groups=N_h D_h)``, or ``None``; ``value_conv_scale``: γ, a
            ``()`` or ``(N_h,)`` parameter (not trained with ``"fixed"``), or ``None``.

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
        conv_kernel_size: int | Mapping[str, int] = 3,
        conv_activation: str | None | Mapping[str, str | None] = None,
        conv_groups: int | None | Mapping[str, int | None] = None,
        conv_depth_multiplier: int | Mapping[str, int] = 1,
        mixed_projections: bool | Mapping[str, bool] = False,
        mixed_split: str = "heads",
        value_conv: bool = False,
        value_conv_kernel_size: int | None = None,
        value_conv_bias: bool = False,
        value_conv_scale: str = "zero",
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
        settings = projection_settings(conv_projections, conv_kernel_size, conv_activation, conv_groups,
                                       mixed_projections, conv_depth_multiplier, num_heads)
        self.conv_activation, self.conv_groups = conv_activation, conv_groups
        self.conv_depth_multiplier, self.mixed_projections = conv_depth_multiplier, mixed_projections
        if mixed_split not in MIXED_SPLITS:
            raise ValueError(f"mixed_split must be one of {MIXED_SPLITS}, got {mixed_split!r}")
        self.mixed_split = mixed_split
        self.conv_projections = self._convolve_projections(settings, bias)
        self.value_conv, self.value_conv_scale = value_branch(num_heads, self.head_dim, value_conv,
                                                             value_conv_kernel_size, conv_kernel_size,
                                                             value_conv_bias, value_conv_scale)

    def _convolve_projections(self, settings: dict[str, ProjectionSettings], bias: bool) -> tuple[str, ...]:
        for name, spec in settings.items():
            attr = name[0] + "_proj"
            linear = getattr(self, attr)
            if linear is None:
                raise ValueError(f"conv_projections names {name!r}, but this layer computes no {name}s "
                                 "(switch on content or a term that uses them)")
            setattr(self, attr, spec.build(self.embed_dim, linear.out_features // self.num_heads, self.num_heads,
                                           bias, self.mixed_split))
        return tuple(settings)

    @property
    def terms(self) -> list[RelativeLogits1d]:
        """The relative terms that are switched on."""
        return [] if self.positional is None else list(self.positional.terms)

    def _check_input(self, x: Tensor) -> int:
        if isinstance(x, Tensor) and x.dim() != 3:
            raise ValueError(f"x must be (B, N, C): CompositeAttention works on sequences, got shape {tuple(x.shape)}")
        n = self.check_input(x)[0]  # shape, N >= 1, dtype
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

        Raises:
            ~attnconv._checks.NonFiniteResultError: (a ``ValueError``) ``x`` is finite but the logits or the output overflow its
                dtype; float16 logits are computed in float32 and do not.
        """
        out, probs = self._attend_composite(x, key_padding_mask, need_weights)
        # Skipped inside deferred_finite_checks and where values cannot be read (attnconv._checks.values_readable).
        check_finite_result("x", out, x, "the attention logits or outputs", self.named_parameters())
        return out, probs

    def _attend_composite(self, x: Tensor, key_padding_mask: Tensor | None, need_weights: bool
                          ) -> tuple[Tensor, Tensor | None]:
        n = self._check_input(x)
        pad = None if key_padding_mask is None else self.padding_bias(key_padding_mask, x.shape, x.dtype)
        if x.shape[0] == 0:  # an empty batch: an empty output
            return MultiHeadSelfAttention.forward(self, x, key_padding_mask, need_weights)
        if pad is not None:  # padding reads as zeros (a convolution's zero padding); NaN reaches no gradient
            x = x.masked_fill(key_padding_mask[..., None], 0.0)
        q, k, v = self.project(x)  # (B, N_h, N, D_h), or None when unused
        if pad is not None:
            k, v = self.zero_padded(k, v, key_padding_mask)  # nothing a padded token holds reaches the others
        # Contiguous once, so that no chunk copies (and keeps for backward) its own copy of Q, K or V.
        q = None if q is None else q.contiguous()
        kt = None if k is None else k.transpose(-2, -1).contiguous()  # (B, N_h, D_h, N)
        k = None if k is None else kt.transpose(-2, -1)
        v = v.expand(-1, self.num_heads, -1, -1).contiguous()
        bands: dict[str, Tensor] = {}  # one band per frame: kernels in the same frame add up before expanding
        for term in self.terms:
            band = term.band(n, q, k)  # (N_h, 1, 2k+1) or (B, N_h, N, 2k+1)
            bands[term.frame] = band if term.frame not in bands else bands[term.frame] + band
        if x.dtype == torch.float16:  # logits in float32: float16 overflows at 65504
            q, kt = (None if t is None else t.float() for t in (q, kt))
            bands = {frame: band.float() for frame, band in bands.items()}
        chunk = self.query_chunk or max(64, CHUNK_LOGITS // (x.shape[0] * self.num_heads * n))
        starts = range(0, n, chunk)
        # Per-query tensors are split into chunks once: their gradients are then joined once, not zero-padded per chunk.
        q_rows = q.split(chunk, dim=2) if self.content else [None] * len(starts)
        query_band = bands.get("query")
        query_rows = query_band.split(chunk, dim=-2) if query_band is not None and query_band.shape[-2] == n else \
            [query_band] * len(starts)
        p_drop = self.dropout if self.training else 0.0
        heads, weights = [], []
        softmax = masked_softmax if (self.window and pad is not None) else softmax_fp32  # else no row is all -inf
        for start, q_chunk, query_chunk in zip(starts, q_rows, query_rows):
            rows = slice(start, min(start + chunk, n))
            chunk_bands = {"query": query_chunk, "key": bands.get("key")}
            index = relative_index(n, self.max_distance, rows, x.device)  # (T, N): shared by the terms, per chunk
            logits = self._chunk_logits(rows, n, q_chunk, kt, chunk_bands, index, pad)  # (B or 1, N_h, T, N)
            probs = probs_like(softmax(logits, dim=-1), v)
            attended = F.dropout(probs, p_drop) if p_drop else probs
            heads.append(attended @ v)  # (B, N_h, T, D_h)
            if need_weights:
                weights.append(probs)
        heads = heads[0] if len(heads) == 1 else torch.cat(heads, dim=-2)  # (B, N_h, N, D_h); frees the chunks
        if self.value_conv is not None:
            heads = heads + self.value_conv_scale.view(-1, 1, 1) * self.convolve_values(v)  # γ: () or (N_h,)
        out = self.merge_heads(heads, (n,))
        if not need_weights:
            return out, None
        probs = weights[0] if len(weights) == 1 else torch.cat(weights, dim=-2)
        return out, probs.expand(x.shape[0], *probs.shape[-3:])

    def convolve_values(self, v: Tensor) -> Tensor:
        """The ``value_conv`` branch before γ: each value channel convolved over the sequence, zeros outside.

        ``v``: ``(B, N_h, N, D_h)`` (padded tokens already zero) -> ``(B, N_h, N, D_h)``.
        """
        b, h, n, d = v.shape
        channels_first = v.permute(0, 1, 3, 2).reshape(b, h * d, n)  # (B, N_h D_h, N), head-major channels
        return self.value_conv(channels_first).view(b, h, d, n).permute(0, 1, 3, 2)

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
                f"window={self.window}, conv_projections={self.conv_projections}, "
                f"conv_activation={self.conv_activation!r}, conv_groups={self.conv_groups}, "
                f"conv_depth_multiplier={self.conv_depth_multiplier}, "
                f"mixed_projections={self.mixed_projections}, mixed_split={self.mixed_split!r}, "
                f"value_conv={self.value_conv is not None}, dropout={self.dropout}")
