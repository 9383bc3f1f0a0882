"""Gated positional self-attention (GPSA), the layer of ConViT (d'Ascoli et al. 2021).

Each head mixes two attention maps, each normalised by its own softmax:

    A^(h) = (1 - σ(λ_h)) softmax(X W_qry^(h) (X W_key^(h))ᵀ / √D_h) + σ(λ_h) softmax(v^(h) · r_δ),

with the gate λ_h (``gating``, 1 at initialisation, so σ(λ) ≈ 0.73 of the weight starts on position) and the
quadratic positional logits v^(h) · r_δ of Cordonnier et al.'s Lemma 2. ConViT's ``local_init`` places the positional
maps on a √N_h x √N_h grid of shifts (:meth:`~attnconv.positional.QuadraticEncoding.local_init`), which is Theorem 1's
construction: with a large α and the gate open the layer is a convolution.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor, nn

from .attention import MultiHeadSelfAttention
from .positional.base import PositionalLogits
from ._checks import flag, probability
from .positional.quadratic import QuadraticEncoding
from .positional.signed_quadratic import SignedQuadraticEncoding
from .taps import masked_softmax, softmax_fp32

__all__ = ["GatedPositionalSelfAttention"]


class GatedPositionalSelfAttention(MultiHeadSelfAttention):
    """ConViT's GPSA: a gated sum of a content softmax and a positional softmax per head.

    Args:
        embed_dim: C.
        num_heads: N_h (a perfect square for the default, locally initialised encoding).
        head_dim: D_h (default ``embed_dim // num_heads``, which must then divide evenly).
        positional: the positional logits (any content-independent :class:`~attnconv.positional.PositionalLogits`);
            default :meth:`QuadraticEncoding.local_init(num_heads, locality_strength)
            <attnconv.positional.QuadraticEncoding.local_init>`.
        locality_strength: α of the default encoding.
        qkv_bias: biases on the query, key and value projections (ConViT: none); the output projection has one.
        dropout: dropout on the gated attention probabilities during training (timm's ``attn_drop``).
        proj_drop: dropout on the output, after the output projection, during training (timm's ``proj_drop``,
            which ConViT's blocks set to their ``drop_rate``).

    Attributes:
        gating: ``(N_h,)`` gate logits λ_h, initialised to 1 as in ConViT.

    Shapes:
        x: ``(B, H, W, C)`` (or ``(B, N, C)`` with a 1-D encoding); ``key_padding_mask`` as in
        :class:`~attnconv.attention.MultiHeadSelfAttention`, applied to both maps. Output shaped like ``x``.
    """

    def __init__(self, embed_dim: int, num_heads: int, positional: PositionalLogits | None = None,
                 locality_strength: float = 1.0, qkv_bias: bool = False, dropout: float = 0.0,
                 proj_drop: float = 0.0, head_dim: int | None = None) -> None:
        if positional is None:
            positional = QuadraticEncoding.local_init(num_heads, locality_strength)
        if not isinstance(positional, PositionalLogits):
            raise TypeError(f"positional must be a PositionalLogits module (or None), got {type(positional).__name__}")
        if positional.uses_queries or positional.uses_keys:
            raise ValueError("positional must not depend on queries or keys: GPSA's positional map is content-free")
        super().__init__(embed_dim, num_heads, head_dim=head_dim, positional=positional, content=True,
                         dropout=dropout, bias=True)
        if not flag("qkv_bias", qkv_bias):
            self.q_proj.bias = self.k_proj.bias = self.v_proj.bias = None
        self.gating = nn.Parameter(torch.ones(num_heads))
        self.proj_drop = probability("proj_drop", proj_drop)

    def local_init(self, locality_strength: float = 1.0) -> None:
        """ConViT's ``local_init``: the value projection becomes the identity (needs D_h N_h = C) and the positional
        encoding is placed on the √N_h x √N_h grid of shifts with α = ``locality_strength``."""
        if self.v_proj.weight.shape[0] != self.embed_dim:
            raise ValueError("local_init sets the value projection to the identity: it needs num_heads * head_dim "
                             f"== embed_dim, got {self.v_proj.weight.shape[0]} != {self.embed_dim}")
        fresh = QuadraticEncoding.local_init(self.num_heads, locality_strength)
        if not isinstance(self.positional, (QuadraticEncoding, SignedQuadraticEncoding)) or self.positional.dims != 2:
            raise ValueError("local_init needs a 2-D QuadraticEncoding or SignedQuadraticEncoding as the positional "
                             "term")
        with torch.no_grad():
            self.v_proj.weight.copy_(torch.eye(self.embed_dim, dtype=self.v_proj.weight.dtype))
            if isinstance(self.positional, SignedQuadraticEncoding):
                self.positional.weight.copy_(fresh.positional_query())
            else:
                self.positional.centers.copy_(fresh.centers)
                self.positional.log_alpha.copy_(fresh.log_alpha)

    def _attend(self, x: Tensor, key_padding_mask: Tensor | None,
                need_weights: bool) -> tuple[Tensor, Tensor | None]:
        """``(out, probs)``; ``probs`` ``(B, N_h, N, N)`` are the gated weights when ``need_weights``.

        Called by :meth:`MultiHeadSelfAttention.forward`, which refuses a non-finite result of a finite input
        (:class:`~attnconv._checks.NonFiniteResultError`). As there, a padded token reads as zeros before the
        projections, so nothing it holds (NaN included) reaches an output or a gradient.
        """
        grid = self.check_input(x)
        if key_padding_mask is not None and not isinstance(key_padding_mask, Tensor):
            raise TypeError(f"key_padding_mask must be a bool torch.Tensor (True = padding) or None, got "
                            f"{type(key_padding_mask).__name__}")
        pad = None if key_padding_mask is None else self.padding_bias(key_padding_mask, x.shape, x.dtype)
        n = math.prod(grid)
        if x.shape[0] == 0:  # an empty batch: an empty output
            out = self.out_proj(x.new_zeros(0, self.num_heads * self.head_dim)).view(0, *grid, self.out_dim)
            return out, (x.new_zeros(0, self.num_heads, n, n) if need_weights else None)
        tokens = x.reshape(x.shape[0], n, self.embed_dim)  # (B, N, C)
        if key_padding_mask is not None:  # masked_fill, not a product: 0 * NaN is NaN, in backward too
            tokens = tokens.masked_fill(key_padding_mask.reshape(tokens.shape[:2])[..., None], 0.0)
        q, k, v = self.project(tokens)  # (B, N_h, N, D_h)
        if key_padding_mask is not None:
            k, v = self.zero_padded(k, v, key_padding_mask)
        softmax = softmax_fp32 if pad is None else masked_softmax  # normalised in at least float32
        content = q @ k.transpose(-2, -1) / math.sqrt(self.head_dim)  # (B, N_h, N, N)
        position = self.positional(grid, None, None)  # (N_h, N, N)
        if pad is not None:
            content, position = content + pad, position + pad
        gate = torch.sigmoid(self.gating)[:, None, None]  # (N_h, 1, 1)
        probs = (1 - gate) * softmax(content, dim=-1) + gate * softmax(position, dim=-1)
        probs = probs / probs.sum(-1, keepdim=True).clamp_min(torch.finfo(probs.dtype).tiny)
        attended = nn.functional.dropout(probs, self.dropout) if (self.training and self.dropout) else probs
        out = self.merge_heads(attended.to(v.dtype) @ v, grid)  # the output projection included
        if self.training and self.proj_drop:
            out = nn.functional.dropout(out, self.proj_drop)
        return out, (probs if need_weights else None)
