"""Multi-head self-attention over sequences and images (Vaswani et al. 2017; Cordonnier et al. 2020, eq. 4-8).

For an input X with N tokens of C = ``embed_dim`` channels, head h computes

    A^(h) = softmax( X W_qry^(h) (X W_key^(h))^T / sqrt(D_h) + P^(h) + M )      (N x N)
    SA^(h)(X) = A^(h) X W_val^(h)                                             (N x D_h)

and the layer concatenates the heads and projects them:

    MHSA(X) = concat_h[SA^(h)(X)] W_out + b_out                                (N x D_out).

P^(h) is an optional relative-position term from :mod:`attnconv.positional` and M is -inf on padded keys.
A padded token reads as zeros before the projections, and its key and value are zero after them, so nothing it
holds (not even NaN or inf) reaches an unpadded token's output or, in the backward pass, a parameter's gradient.
Its own output (a padded query) is that of ``torch.nn.MultiheadAttention`` on the input with padding zeroed.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from ._checks import check_finite_result, floating_input, positive_int, probability, values_readable
from .dropout import dropout
from .taps import masked_softmax, softmax_fp32
from .positional.base import PositionalLogits

__all__ = ["MultiHeadSelfAttention", "attend_factorized", "attend_factorized_reference"]

# Elements of the heads' results that the factorised path handles at once (see attend_factorized_merged).
FACTORIZED_CHUNK = 2**21


def attend_factorized(axes: list[Tensor], v: Tensor, grid: tuple[int, ...]) -> Tensor:
    """Apply attention whose matrix is a Kronecker product of per-axis matrices: one large matmul per axis.

    The probabilities of a content-free encoding do not depend on the example, so the batch rides along in the
    columns of every product. The values are laid out once as ``(L_1, ..., L_k, B, D_h)`` (one copy of ``v``);
    then axis 1 is a single ``(N_h L_1 x L_1) @ (L_1 x L_2...L_k B D_h)`` product (shared values: the heads ride
    along in the rows), and axis a > 1 is one ``(L_a x L_a) @ (L_a x L_{a+1}...L_k B D_h)`` product per head and
    leading coordinate, never one per example. Autograd differentiates the plain matmuls.

    Args:
        axes: one ``(N_h, L_a, L_a)`` probability matrix per grid axis (rows: query coordinate), in ``v``'s dtype.
        v: values ``(B, N_h or 1, N, D_h)`` with ``N = prod(grid)`` in row-major order.

    Returns:
        ``(B, N_h, N, D_h)``, equal to ``(P_1 ⊗ P_2 ⊗ ...) @ v`` for every head (a strided view: the heads'
        results lie in ``(N_h, L_1, ..., L_k, B, D_h)`` order, which :meth:`MultiHeadSelfAttention.merge_heads`
        reads with one copy). :func:`attend_factorized_reference` is the same sum, one example at a time.
    """
    b, shared, n, d = v.shape
    heads, first, k = axes[0].shape[0], grid[0], len(grid)
    rest = n // first * b * d
    vt = v.reshape(b, shared, *grid, d).permute(1, *range(2, 2 + k), 0, 2 + k)  # (N_h or 1, L_1, ..., L_k, B, D_h)
    if shared == 1:  # (N_h L_1, L_1) @ (L_1, rest): every head and every example in one product
        out = axes[0].reshape(heads * first, first) @ vt.reshape(first, rest)
    else:
        out = axes[0] @ vt.reshape(heads, first, rest)  # (N_h, L_1, rest)
    for axis in range(1, k):
        before = math.prod(grid[:axis])
        after = math.prod(grid[axis + 1:]) * b * d
        out = axes[axis][:, None] @ out.reshape(heads, before, grid[axis], after)  # (N_h, before, L_a, after)
    return out.reshape(heads, n, b, d).permute(2, 0, 1, 3)


def attend_factorized_reference(axes: list[Tensor], v: Tensor, grid: tuple[int, ...]) -> Tensor:
    """:func:`attend_factorized` as the layer computed it before: one small batched matmul per example, head and
    leading coordinate (14,400 of them for a batch of 100 on a 16 x 16 grid with 9 heads). Kept as the reference
    that the fast path is tested and benchmarked against. Same arguments and result (contiguous here)."""
    b, shared, n, d = v.shape
    heads, first = axes[0].shape[0], grid[0]
    rest = n // first * d
    if shared == 1:  # (N_h L_1, L_1) @ (B, L_1, rest): the heads ride along in the matrix, v is not expanded
        out = (axes[0].reshape(heads * first, first) @ v.reshape(b, first, rest)).reshape(b, heads, first, rest)
    else:
        out = axes[0][None] @ v.reshape(b, heads, first, rest)  # (B, N_h, L_1, rest)
    for axis in range(1, len(grid)):
        before = math.prod(grid[:axis])
        after = math.prod(grid[axis + 1:]) * d
        p = axes[axis][None, :, None]  # (1, N_h, 1, L_a, L_a)
        out = p @ out.reshape(b, heads, before, grid[axis], after)  # (B, N_h, before, L_a, after)
    return out.reshape(b, heads, n, d)


def probs_like(probs: Tensor, v: Tensor) -> Tensor:
    """Probabilities normalised in float32 (:func:`~attnconv.taps.softmax_fp32`) back in the values' dtype, so that
    a float16 module multiplies float16 by float16; under autocast the matmul picks the dtype itself."""
    if probs.dtype == v.dtype or torch.is_autocast_enabled(v.device.type):
        return probs
    return probs.to(v.dtype)


def nan_marker(q: Tensor, k: Tensor) -> Tensor:
    """``(B, N_h, N, 1)``: 0, or NaN in the rows whose attention logits hold NaN, to add to the fused kernel's result.

    A logit q_i · k_j is NaN when query i or key j holds NaN or inf (a NaN weight in ``q_proj`` or ``k_proj``
    makes a whole head's queries or keys NaN). The softmax of such a row is NaN, and the explicit path returns NaN
    there, but the fused CPU kernel of ``scaled_dot_product_attention`` takes a row of NaN logits for a fully
    masked one and returns zeros: a broken parameter would pass for a finite output. ``0 * t`` is 0 for finite t
    and NaN otherwise, so adding this changes no finite result and keeps the NaN where the softmax has it (padded
    keys are already zero, :meth:`MultiHeadSelfAttention.zero_padded`). Two elementwise passes over q and k, no
    host synchronisation.
    """
    return (q * 0).sum(-1, keepdim=True) + (k * 0).sum((-2, -1), keepdim=True)


def _wide(t: Tensor) -> Tensor:
    """``t`` in float32 if it is float16 (whose range ends at 65504), else ``t`` itself."""
    return t.float() if t.dtype == torch.float16 else t


class MultiHeadSelfAttention(nn.Module):
    """Multi-head self-attention with an optional relative-position term.

    Args:
        embed_dim: C = D_in, the channels of every input token.
        num_heads: N_h.
        head_dim: D_h, channels of each head's query, key and value. Defaults to ``embed_dim // num_heads``
            (which must then divide evenly); any positive value is allowed, as Theorem 1 needs
            D_h >= rank W_Δ for every tap (D_h >= min(D_in, D_out) always suffices; ``conv_to_mhsa`` uses D_out).
        out_dim: D_out, channels of the output. Defaults to ``embed_dim``.
        bias: add biases to the query, key, value and output projections.
        positional: a :class:`~attnconv.positional.PositionalLogits` module whose logits P^(h) are added
            to every head's attention logits, or ``None``.
        content: include the content term X W_qry W_key^T X^T / sqrt(D_h). With ``content=False`` the
            attention depends on positions only (the setting of Cordonnier et al.'s Theorem 1), and the
            probabilities are computed once per forward pass for the whole batch.
        dropout: dropout probability on the attention probabilities during training.
        shared_values: one value projection X W_val (``embed_dim -> head_dim``) shared by every head, as in
            Cordonnier et al.'s implementation: the heads differ only in where they look, and W_out mixes
            the N_h concatenated copies. With ``head_dim = embed_dim = 400`` and 9 heads this is the paper's
            layer (a 3600 -> 400 output projection).
        value_proj: ``False`` drops the value projection: every head attends over the input tokens themselves
            (needs ``shared_values=True`` and ``head_dim == embed_dim``). This is exactly the official
            ``GaussianSelfAttention`` of Cordonnier et al., whose only weight besides the positional parameters is
            the ``N_h C -> D_out`` map, here ``out_proj``.

    Shapes:
        x: ``(B, N, C)`` for a sequence or ``(B, H, W, C)`` for an image (tokens are the H*W pixels,
        in row-major order). ``key_padding_mask``: bool, shaped like ``x`` without its channel axis,
        ``True`` where a key is padding. The output has the shape of ``x`` with ``out_dim`` channels; the
        attention probabilities, when asked for, are ``(B, N_h, N, N)``.
    """

    def __init__(
        self,
        embed_dim: int,
        num_heads: int,
        head_dim: int | None = None,
        out_dim: int | None = None,
        bias: bool = True,
        positional: PositionalLogits | None = None,
        content: bool = True,
        dropout: float = 0.0,
        shared_values: bool = False,
        value_proj: bool = True,
    ) -> None:
        super().__init__()
        self.embed_dim = positive_int("embed_dim", embed_dim)
        self.num_heads = positive_int("num_heads", num_heads)
        if head_dim is None:
            if embed_dim % num_heads:
                raise ValueError(
                    f"embed_dim ({embed_dim}) must be divisible by num_heads ({num_heads}) "
                    "when head_dim is not given"
                )
            head_dim = embed_dim // num_heads
        self.head_dim = positive_int("head_dim", head_dim)
        self.out_dim = positive_int("out_dim", embed_dim if out_dim is None else out_dim)
        self.dropout = probability("dropout", dropout)
        if positional is not None:
            if not isinstance(positional, PositionalLogits):
                raise ValueError(f"positional must be a PositionalLogits module or None, got {type(positional)}")
            if positional.num_heads != num_heads:
                raise ValueError(
                    f"positional computes logits for {positional.num_heads} heads but num_heads={num_heads}"
                )
        elif not content:
            raise ValueError("content=False needs a positional module: with neither term there are no logits")
        self.content = content
        self.positional = positional
        self.shared_values = shared_values

        inner = self.num_heads * self.head_dim
        need_q = content or (positional is not None and positional.uses_queries)
        need_k = content or (positional is not None and positional.uses_keys)
        self.q_proj = nn.Linear(embed_dim, inner, bias=bias) if need_q else None
        self.k_proj = nn.Linear(embed_dim, inner, bias=bias) if need_k else None
        if not value_proj and not (shared_values and self.head_dim == self.embed_dim):
            raise ValueError(f"value_proj=False needs shared_values=True and head_dim == embed_dim "
                             f"(got shared_values={shared_values}, head_dim={self.head_dim}, embed_dim={embed_dim}): "
                             "the values are then the input tokens themselves")
        self.v_proj = nn.Linear(embed_dim, self.head_dim if shared_values else inner, bias=bias) if value_proj \
            else None
        self.out_proj = nn.Linear(inner, self.out_dim, bias=bias)

    @classmethod
    def from_torch(cls, mha: nn.MultiheadAttention) -> "MultiHeadSelfAttention":
        """A layer with the weights of a ``torch.nn.MultiheadAttention`` (same outputs for self-attention)."""
        if not isinstance(mha, nn.MultiheadAttention):
            raise TypeError(f"mha must be a torch.nn.MultiheadAttention, got {type(mha).__name__}")
        if not mha._qkv_same_embed_dim or mha.bias_k is not None or mha.add_zero_attn:
            raise ValueError("mha must use one embed_dim for q, k, v, and no bias_k/bias_v or add_zero_attn")
        layer = cls(mha.embed_dim, mha.num_heads, bias=mha.in_proj_bias is not None, dropout=mha.dropout)
        layer = layer.to(device=mha.in_proj_weight.device, dtype=mha.in_proj_weight.dtype)
        with torch.no_grad():
            for proj, w in zip((layer.q_proj, layer.k_proj, layer.v_proj), mha.in_proj_weight.chunk(3)):
                proj.weight.copy_(w)
            layer.out_proj.weight.copy_(mha.out_proj.weight)
            if mha.in_proj_bias is not None:
                for proj, b in zip((layer.q_proj, layer.k_proj, layer.v_proj), mha.in_proj_bias.chunk(3)):
                    proj.bias.copy_(b)
                layer.out_proj.bias.copy_(mha.out_proj.bias)
        return layer

    # The forward pass, one step per method, so that a reader can run the steps one at a time.

    def split_heads(self, t: Tensor) -> Tensor:
        """``(B, N, N_h * D_h)`` -> ``(B, N_h, N, D_h)``; a shared ``(B, N, D_h)`` -> ``(B, 1, N, D_h)``."""
        b, n, width = t.shape
        return t.view(b, n, width // self.head_dim, self.head_dim).transpose(1, 2)

    def project(self, tokens: Tensor) -> tuple[Tensor | None, Tensor | None, Tensor]:
        """Queries and keys ``(B, N_h, N, D_h)`` (``None`` when unused) and values ``(B, N_h or 1, N, D_h)``."""
        q = None if self.q_proj is None else self.split_heads(self.q_proj(tokens))
        k = None if self.k_proj is None else self.split_heads(self.k_proj(tokens))
        return q, k, self.split_heads(tokens if self.v_proj is None else self.v_proj(tokens))

    def logits(self, grid: tuple[int, ...], q: Tensor | None, k: Tensor | None,
               pad: Tensor | None = None) -> Tensor:
        """Attention logits: ``(N_h, N, N)`` when they depend on positions only, else ``(B, N_h, N, N)``.

        ``pad`` is an additive mask ``(B, 1, 1, N)`` (0 or -inf) from :meth:`padding_bias`.
        """
        terms = []
        if self.content:  # float16 products overflow at |q||k| > 65504: they are taken in float32
            terms.append(_wide(q) @ _wide(k).transpose(-2, -1) / math.sqrt(self.head_dim))
        if self.positional is not None:
            terms.append(self.positional(grid, q, k))
        if pad is not None:
            terms.append(pad)
        out = terms[0]
        for t in terms[1:]:
            out = out + t
        return out

    def merge_heads(self, heads: Tensor, grid: tuple[int, ...]) -> Tensor:
        """``(B, N_h, N, D_h)`` -> concatenate heads, apply W_out -> ``(B, *grid, D_out)``."""
        b = heads.shape[0]
        merged = heads.transpose(1, 2).reshape(b, -1, self.num_heads * self.head_dim)
        return self.out_proj(merged).view(b, *grid, self.out_dim)

    def attend_factorized_merged(self, axes: list[Tensor], v: Tensor, grid: tuple[int, ...]) -> Tensor:
        """:func:`attend_factorized` and :meth:`merge_heads`, a slice of the batch at a time.

        The heads' results are ``N_h`` times larger than the values; slices of about ``FACTORIZED_CHUNK``
        elements of them stay in the CPU's cache between the products, the merge and W_out (and in the
        backward pass), instead of travelling to memory and back between every step. Returns ``(B, *grid, D_out)``.
        """
        per_example = self.num_heads * v.shape[2] * v.shape[3]
        step = max(1, FACTORIZED_CHUNK // per_example)
        # split, not slicing: its backward is one concatenation, not a zero-filled copy of v per slice
        outs = [self.merge_heads(attend_factorized(axes, part, grid), grid) for part in v.split(step)]
        return outs[0] if len(outs) == 1 else torch.cat(outs)

    @staticmethod
    def zero_padded(k: Tensor | None, v: Tensor, key_padding_mask: Tensor) -> tuple[Tensor | None, Tensor]:
        """Keys and values ``(B, N_h or 1, N, D_h)`` with zeros at padded tokens: a masked logit is then exactly
        -inf and a masked value exactly 0, whatever the padded token held (NaN included)."""
        padded = key_padding_mask.reshape(v.shape[0], 1, v.shape[2], 1)  # (B, 1, N, 1)
        return (None if k is None else k.masked_fill(padded, 0.0)), v.masked_fill(padded, 0.0)

    def padding_bias(self, key_padding_mask: Tensor, x_shape: torch.Size, dtype: torch.dtype) -> Tensor:
        """Check a boolean key padding mask and turn it into an additive ``(B, 1, 1, N)`` bias."""
        if not isinstance(key_padding_mask, Tensor):
            raise TypeError(f"key_padding_mask must be a bool torch.Tensor (True = padding) or None, got "
                            f"{type(key_padding_mask).__name__}: use torch.as_tensor(mask, dtype=torch.bool)")
        if key_padding_mask.dtype != torch.bool:
            raise ValueError(f"key_padding_mask must be a bool tensor (True = padding), got {key_padding_mask.dtype}")
        if tuple(key_padding_mask.shape) != tuple(x_shape[:-1]):
            raise ValueError(
                f"key_padding_mask must have shape {tuple(x_shape[:-1])} (x without its channel axis), "
                f"got {tuple(key_padding_mask.shape)}"
            )
        flat = key_padding_mask.reshape(x_shape[0], math.prod(x_shape[1:-1]))
        if values_readable(flat) and bool(flat.all(dim=1).any()):  # unread on meta, in vmap, jit.trace, compile
            raise ValueError("key_padding_mask masks every key of some batch element; at least one must be kept")
        bias = torch.zeros(flat.shape, dtype=dtype, device=flat.device).masked_fill(flat, float("-inf"))
        return bias[:, None, None, :]

    def forward(
        self, x: Tensor, key_padding_mask: Tensor | None = None, need_weights: bool = False
    ) -> tuple[Tensor, Tensor | None]:
        """Self-attention over the tokens of ``x``.

        Args:
            x: ``(B, N, C)`` or ``(B, H, W, C)``.
            key_padding_mask: optional bool ``(B, N)`` or ``(B, H, W)``, ``True`` marks padded keys.
            need_weights: also return the attention probabilities (slower: the fused kernel is skipped).

        Returns:
            ``(out, probs)``: ``out`` is ``(B, N, D_out)`` or ``(B, H, W, D_out)``; ``probs`` is
            ``(B, N_h, N, N)`` if ``need_weights`` else ``None``.

        Raises:
            ~attnconv._checks.NonFiniteResultError: (a ``ValueError``) ``x`` is finite but the logits or the output overflow its dtype
                (float32 inputs near 1e20, for example); float16 logits are computed in float32 and do not.
        """
        out, probs = self._attend(x, key_padding_mask, need_weights)
        # Off inside attnconv.finite.deferred_finite_checks (the caller checks once per step), and where values
        # cannot be read (meta tensors, vmap, jit.trace, torch.compile): see attnconv._checks.values_readable.
        check_finite_result("x", out, x, "the attention logits or outputs", self.named_parameters())
        return out, probs

    def _attend(self, x: Tensor, key_padding_mask: Tensor | None, need_weights: bool
                ) -> tuple[Tensor, Tensor | None]:
        grid = self.check_input(x)
        pad = None if key_padding_mask is None else self.padding_bias(key_padding_mask, x.shape, x.dtype)
        if x.shape[0] == 0:  # an empty batch: nothing to attend over, an empty output
            out = self.out_proj(x.new_zeros(0, self.num_heads * self.head_dim)).view(0, *grid, self.out_dim)
            n = math.prod(grid)
            return out, (x.new_zeros(0, self.num_heads, n, n) if need_weights else None)
        tokens = x.reshape(x.shape[0], -1, self.embed_dim)  # (B, N, C)
        if key_padding_mask is not None:  # not a product with the mask: 0 * NaN would still be NaN in backward
            tokens = tokens.masked_fill(key_padding_mask.reshape(tokens.shape[:2])[..., None], 0.0)
        q, k, v = self.project(tokens)  # (B, N_h, N, D_h) each
        if key_padding_mask is not None:
            k, v = self.zero_padded(k, v, key_padding_mask)
        p_drop = self.dropout if self.training else 0.0

        if self.content and not need_weights:
            bias = None if self.positional is None else self.positional(grid, q, k)
            if pad is not None:
                bias = pad if bias is None else bias + pad
            v = v.expand(-1, self.num_heads, -1, -1)  # a view when values are shared
            heads = F.scaled_dot_product_attention(q, k, v, attn_mask=bias, dropout_p=p_drop)
            return self.merge_heads(heads + nan_marker(q, k).to(heads.dtype), grid), None

        if not self.content and pad is None and not need_weights and not p_drop:
            axes = self.positional.factorized_probs(grid)
            if axes is not None:  # P^(h) = P_1 ⊗ P_2 ⊗ ...: attend one axis at a time, never forming N x N
                axes = [probs_like(p, v) for p in axes]  # float32 probabilities times bf16/fp16 values: one dtype
                return self.attend_factorized_merged(axes, v, grid), None

        logits = self.logits(grid, q, k, pad)  # (N_h, N, N) or (B, N_h, N, N)
        # A padded query may see no key at all (a window or causal mask plus padding): zeros, not NaN, there.
        probs = masked_softmax(logits) if pad is not None else softmax_fp32(logits, dim=-1)
        probs = probs_like(probs, v)
        attended = dropout(probs, p_drop) if p_drop else probs
        heads = attended @ v  # broadcasts a batch-free (N_h, N, N) over the batch: computed once
        out = self.merge_heads(heads, grid)
        if not need_weights:
            return out, None
        return out, probs.expand(x.shape[0], *probs.shape[-3:])

    def check_input(self, x: Tensor) -> tuple[int, ...]:
        """Check ``x`` (shape, at least one token, a floating dtype equal to the parameters') and return its grid."""
        if not isinstance(x, Tensor):
            raise TypeError(f"x must be a torch.Tensor, got {type(x).__name__}")
        if x.dim() not in (3, 4):
            raise ValueError(f"x must be (B, N, C) or (B, H, W, C), got shape {tuple(x.shape)}")
        if x.shape[-1] != self.embed_dim:
            raise ValueError(f"x must have embed_dim={self.embed_dim} channels in its last dim, got {x.shape[-1]}")
        grid = tuple(x.shape[1:-1])
        if 0 in grid:
            raise ValueError(f"x must hold at least one token (every grid size >= 1), got grid {grid}: "
                             "a softmax over no keys is undefined")
        floating_input("x", x, self.out_proj.weight.dtype)
        return grid

    def extra_repr(self) -> str:
        return (
            f"embed_dim={self.embed_dim}, num_heads={self.num_heads}, head_dim={self.head_dim}, "
            f"out_dim={self.out_dim}, content={self.content}, dropout={self.dropout}, "
            f"shared_values={self.shared_values}, value_proj={self.v_proj is not None}"
        )
