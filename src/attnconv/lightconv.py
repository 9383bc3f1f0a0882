"""Lightweight and dynamic convolutions (Wu et al. 2019), the convolutions of Chang et al. 2021.

A *lightweight convolution* is a depthwise 1-D convolution whose kernel has 2k+1 taps, is softmax-normalised
over those taps, and is shared by all channels of a head. For head h and token i,

    LightConv(X)_i = Σ_{δ=-k..k} β^(h)_δ X_{i+δ},      β^(h) = softmax(w^(h)) ∈ R^{2k+1}.

A *dynamic* lightweight convolution predicts the kernel from the current token, β_i = softmax(X_i W^D) with
W^D ∈ R^{C x (N_h (2k+1))}. Both are computed here from a **band**: a tensor ``(..., N_h, N, 2k+1)`` holding
the kernel β_i that token i applies (the same for every i in the lightweight case), so that

    out_i = Σ_t β_{i,t} X_{i+t-k}      (tap t reads offset δ = t - k, key minus query).

**Boundaries.** Near the ends of the sequence some taps read positions that do not exist. A zero-padded
convolution (``boundary="zeros"``, Wu et al.) reads zeros there and so loses that part of the kernel's mass.
A boundary-renormalised convolution (``boundary="renormalize"``) takes the softmax over the taps that exist,
which is exactly what an attention softmax does (chapter 05). Padded keys (``key_padding_mask``) are treated
like positions outside the sequence, and a padded token's features are read as zeros, so padding never changes
an unpadded token's output (even a NaN in a padded token).

**The reference's options.** As in fairseq's implementation of Wu et al.: ``weight_softmax=False`` uses the raw,
signed kernel w (no softmax; only with zero padding); ``causal=True`` places the K taps on the past,
δ = -(K-1)..0 (fairseq's ``padding_l = K - 1``, for decoders; any K ≥ 1), and in general tap t reads offset
δ = t - ``padding_l``, for any ``padding_l`` in 0..K-1; a bias on the output (``bias`` of :class:`LightweightConv1d`,
``conv_bias`` of :class:`DynamicConv1d`). Their attention-side counterparts are in
:mod:`attnconv.construct.sequence`: a causal kernel is causal windowed relative-bias attention, a bias is the
output projection's bias, and a signed kernel has no softmax counterpart (attention weights are positive and sum
to one); it is instead the dense convolution :meth:`LightweightConv1d.to_conv1d`, which Theorem 1 turns into
attention with one hard head per tap.

The band primitives (:func:`~attnconv.taps.tap_mask`, :func:`~attnconv.taps.masked_softmax`,
:func:`~attnconv.taps.apply_band`, :func:`~attnconv.taps.odd_kernel_size`) live in :mod:`attnconv.taps` and are
re-exported here, as is :class:`DepthwiseSeparableConv1d`, the convolutional projection of
``attnconv.conv_projections``.

Tensors are channels-last, ``(B, N, C)``; channel c belongs to head ``c // (C / N_h)``, as in
:class:`~attnconv.attention.MultiHeadSelfAttention`.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from ._checks import (all_finite, check_finite_result, finite_checks_apply, flag, floating_input, positive_int,
                      probability)
from .conv_projections import ACTIVATIONS, DepthwiseSeparableConv1d
from .taps import (apply_band, check_padding_mask, check_tokens, masked_softmax, odd_kernel_size, padding_left,
                   softmax_fp32, tap_mask)

__all__ = [
    "BOUNDARIES",
    "PADDED_KEYS",
    "odd_kernel_size",
    "tap_mask",
    "masked_softmax",
    "apply_band",
    "LightweightConv1d",
    "DynamicConv1d",
    "DepthwiseSeparableConv1d",
    "ProjectedConv1d",
    "ACTIVATIONS",
]

BOUNDARIES = ("zeros", "renormalize")
PADDED_KEYS = ("excluded", "zeros")  # how a renormalised kernel treats padded keys


def _boundary(boundary: str) -> str:
    if boundary not in BOUNDARIES:
        raise ValueError(f"boundary must be one of {BOUNDARIES}, got {boundary!r}")
    return boundary


def _check_overflow(module: nn.Module, out: Tensor, x: Tensor, values: Tensor | None = None) -> Tensor:
    """Return ``out``, or raise :class:`~attnconv._checks.NonFiniteResultError` if it holds NaN or inf although
    ``x`` (and ``values``) are finite: the kernel or the sum of its taps overflowed the dtype, or a parameter of
    ``module`` is NaN or inf (the error names it). Skipped inside ``attnconv.finite.deferred_finite_checks``, where
    the caller checks once per step, and where values cannot be read (:func:`~attnconv._checks.values_readable`:
    meta tensors, ``vmap``, ``jit.trace``, ``torch.compile``)."""
    if not finite_checks_apply(out, x, values) or all_finite(out):
        return out
    if values is not None and values is not x and not all_finite(values):
        return out  # non-finite values give a non-finite result: nothing overflowed
    check_finite_result("x", out, x, "the kernels or the convolution's sums", module.named_parameters())
    return out


class _HeadKernelConv1d(nn.Module):
    """What lightweight and dynamic convolutions share: heads over channel groups, odd kernels, the boundary rule."""

    def __init__(self, embed_dim: int, num_heads: int, kernel_size: int, boundary: str, weight_dropout: float,
                 weight_softmax: bool = True, causal: bool = False, padded_keys: str = "excluded",
                 padding_l: int | None = None) -> None:
        super().__init__()
        self.embed_dim = positive_int("embed_dim", embed_dim)
        self.num_heads = positive_int("num_heads", num_heads)
        if embed_dim % num_heads:
            raise ValueError(f"embed_dim ({embed_dim}) must be divisible by num_heads ({num_heads})")
        self.causal = bool(causal)
        self.padding_l = padding_left(kernel_size, self.causal, padding_l)
        self.kernel_size = kernel_size
        self.boundary = _boundary(boundary)
        self.weight_softmax = bool(weight_softmax)
        if not self.weight_softmax and self.boundary != "zeros":
            raise ValueError("weight_softmax=False needs boundary='zeros': renormalising over the existing taps is "
                             "a softmax, and a raw kernel has none")
        self.weight_dropout = probability("weight_dropout", weight_dropout)
        if padded_keys not in PADDED_KEYS:
            raise ValueError(f"padded_keys must be one of {PADDED_KEYS}, got {padded_keys!r}")
        self.padded_keys = padded_keys

    @property
    def max_distance(self) -> int:
        """k, the farthest offset a tap reads (the attention window): centred or causal kernels only."""
        if not (self.causal or 2 * self.padding_l == self.kernel_size - 1):
            raise ValueError(f"padding_l={self.padding_l} with kernel_size={self.kernel_size} is neither centred nor "
                             "causal: no symmetric or causal window (max_distance) covers its taps")
        return self.padding_l

    def normalise(self, logits: Tensor, n: int, key_padding_mask: Tensor | None = None) -> Tensor:
        """Kernel logits ``(B or 1, N_h, N or 1, K)`` -> kernels: the logits themselves (``weight_softmax=False``),
        a softmax over all taps (``"zeros"``) or over the taps that read an existing, unpadded token
        (``"renormalize"``, then ``(B or 1, N_h, N, K)``)."""
        if not self.weight_softmax:
            return logits
        if self.boundary == "zeros":
            return softmax_fp32(logits, dim=-1)
        if self.padded_keys == "zeros":  # fairseq: padded keys keep their share of the kernel and read zeros
            key_padding_mask = None
        dead = tap_mask(n, self.kernel_size, key_padding_mask, logits.device, self.padding_l)  # (B or 1, 1, N, K)
        return masked_softmax(logits.masked_fill(dead, float("-inf")))

    def dropped(self, band: Tensor, b: int, n: int) -> Tensor:
        """DropConnect on the kernels during training: one mask per sequence, head, token and tap."""
        if not (self.training and self.weight_dropout):
            return band
        return F.dropout(band.expand(b, -1, n, -1), self.weight_dropout)

    def check_input(self, x: Tensor, key_padding_mask: Tensor | None, dtype: torch.dtype) -> None:
        """Shape, dtype and mask checks shared by the forward passes; N = 0 has no token to convolve."""
        check_tokens(x, self.embed_dim, dtype=dtype)
        if x.shape[1] == 0:
            raise ValueError("x must hold at least one token (N >= 1), got N = 0")
        check_padding_mask(key_padding_mask, x)

    def extra_repr(self) -> str:
        return (f"embed_dim={self.embed_dim}, num_heads={self.num_heads}, kernel_size={self.kernel_size}, "
                f"boundary={self.boundary!r}, weight_dropout={self.weight_dropout}, "
                f"weight_softmax={self.weight_softmax}, causal={self.causal}, padded_keys={self.padded_keys!r}, "
                f"padding_l={self.padding_l}")


class LightweightConv1d(_HeadKernelConv1d):
    """Lightweight convolution: a softmax-normalised depthwise kernel shared by the channels of each head.

    Args:
        embed_dim: C, channels in and out.
        num_heads: N_h, kernels (channel groups); C must be divisible by N_h.
        kernel_size: 2k+1, odd; k is the ``max_distance`` of the equivalent relative-position bias.
        boundary: ``"zeros"`` (zero padding, Wu et al.) or ``"renormalize"`` (softmax over the taps that exist,
            equal to attention with a relative bias everywhere, not only in the interior).
        bias: add a learned ``(C,)`` bias to the output (the attention counterpart: the output projection's bias).
        weight_dropout: DropConnect on the normalised kernel during training, one mask per token and head
            (Wu et al.); the counterpart of attention dropout.
        weight_softmax: ``False``: the kernel is the raw, signed w (fairseq's ``weight_softmax=False``); needs
            ``boundary="zeros"``. No softmax attention has a signed kernel: see :meth:`to_conv1d`.
        causal: the K = ``kernel_size`` taps read offsets -(K-1)..0, the past only (any K ≥ 1); equal to causal
            windowed relative-bias attention (:func:`~attnconv.construct.sequence.lightconv_to_attention`).
        padding_l: fairseq's ``padding_l``, any int in 0..K-1: tap t reads offset t - ``padding_l`` (any K).
            Default K // 2 (a centred odd kernel), or K - 1 with ``causal``. Only those two have an attention
            window (``max_distance``); :meth:`to_conv1d` needs ``padding_l`` ≥ (K - 1) / 2.

    Attributes:
        weight: ``(N_h, K)`` kernel logits w; the kernel is β = softmax(w) (:attr:`kernel`), or w itself.

    Shapes:
        x: ``(B, N, C)``; ``key_padding_mask``: bool ``(B, N)``, ``True`` on padding. Output ``(B, N, C)``.
    """

    def __init__(self, embed_dim: int, num_heads: int, kernel_size: int, boundary: str = "zeros",
                 bias: bool = False, weight_dropout: float = 0.0, weight_softmax: bool = True,
                 causal: bool = False, padding_l: int | None = None) -> None:
        super().__init__(embed_dim, num_heads, kernel_size, boundary, weight_dropout, weight_softmax, causal,
                         padding_l=padding_l)
        scale = 0.5 if self.weight_softmax else kernel_size**-0.5
        self.weight = nn.Parameter(torch.randn(num_heads, kernel_size) * scale)
        self.bias = nn.Parameter(torch.zeros(embed_dim)) if bias else None

    @property
    def kernel(self) -> Tensor:
        """β = softmax(w) over the K taps (or w itself without ``weight_softmax``), ``(N_h, K)``; column t is
        offset δ = t - ``padding_l``."""
        return torch.softmax(self.weight, dim=-1) if self.weight_softmax else self.weight

    def band(self, n: int, key_padding_mask: Tensor | None = None) -> Tensor:
        """The kernel each token applies: ``(1, N_h, 1, K)`` for zero padding, else ``(B or 1, N_h, N, K)``
        renormalised over the taps that read an existing, unpadded token."""
        return self.normalise(self.weight[None, :, None, :], n, key_padding_mask)

    def forward(self, x: Tensor, key_padding_mask: Tensor | None = None) -> Tensor:
        """``(B, N, C)`` -> ``(B, N, C)``; padded tokens (``key_padding_mask`` True) read as zeros.

        Raises:
            ~attnconv._checks.NonFiniteResultError: (a ``ValueError``) ``x`` is finite but the output overflows its
                dtype (a signed kernel or a bias can push a sum past it), unless the checks are deferred.
        """
        self.check_input(x, key_padding_mask, self.weight.dtype)
        if key_padding_mask is not None:
            x = x.masked_fill(key_padding_mask[..., None], 0.0)  # a padded token reads as zero padding
        band = self.dropped(self.band(x.shape[1], key_padding_mask), x.shape[0], x.shape[1])
        # A float16/bfloat16 kernel is normalised in float32 and the taps are summed there; the result is x's dtype.
        out = apply_band(x, band, self.padding_l).to(x.dtype)
        return _check_overflow(self, out if self.bias is None else out + self.bias, x)

    def to_conv1d(self) -> nn.Conv1d:
        """The same zero-padded convolution as a dense ``nn.Conv1d`` (channels-first, ``groups=1``).

        Its weight is block-diagonal: output channel c reads only input channel c, with head c // (C / N_h)'s
        kernel. With ``padding=padding_l`` on both sides, the first N outputs are this layer's (all of them for a
        centred kernel; a causal kernel's extra K - 1 outputs at the end are dropped). This is how a signed kernel
        (``weight_softmax=False``) reaches attention: :func:`~attnconv.construct.image.conv_to_mhsa` (Theorem 1) turns the
        ``nn.Conv1d`` into multi-head attention with one hard head per tap.

        Raises:
            ValueError: ``boundary="renormalize"``: a renormalised kernel changes near the edges, which a fixed
                convolution cannot do.
        """
        if self.boundary != "zeros":
            raise ValueError("to_conv1d needs boundary='zeros': a renormalised kernel changes near the sequence edges")
        if 2 * self.padding_l < self.kernel_size - 1:
            raise ValueError(f"to_conv1d needs padding_l >= (kernel_size - 1) / 2, got padding_l={self.padding_l} "
                             f"with kernel_size={self.kernel_size}")
        c, group = self.embed_dim, self.embed_dim // self.num_heads
        conv = nn.Conv1d(c, c, self.kernel_size, padding=self.padding_l, bias=self.bias is not None)
        conv = conv.to(dtype=self.weight.dtype, device=self.weight.device)
        with torch.no_grad():
            conv.weight.zero_()
            channels = torch.arange(c, device=self.weight.device)
            conv.weight[channels, channels] = self.kernel.detach().repeat_interleave(group, dim=0)  # (C, K)
            if self.bias is not None:
                conv.bias.copy_(self.bias)
        return conv

    def extra_repr(self) -> str:
        return super().extra_repr() + f", bias={self.bias is not None}"


class DynamicConv1d(_HeadKernelConv1d):
    """Dynamic lightweight convolution: token i's kernel is predicted from token i, β_i = softmax(X_i W^D + b^D).

    A padded token's kernel is predicted from zeros (β = softmax(b^D)), as in the reference implementation, which
    zeroes padded tokens before the layer: padded outputs then do not depend on what the padding holds, and
    unpadded outputs never do.

    Args:
        embed_dim: C, channels of the input (and of the values the kernels are applied to).
        num_heads: N_h; C must be divisible by N_h.
        kernel_size: K = 2k+1, odd (any K ≥ 1 when ``causal`` or with ``padding_l``).
        boundary: ``"zeros"`` or ``"renormalize"``, as in :class:`LightweightConv1d`.
        bias: give the kernel predictor W^D a bias b^D.
        weight_dropout: DropConnect on the normalised kernels during training.
        weight_softmax: ``False``: the kernel is the raw X_i W^D + b^D (signed; needs ``boundary="zeros"``).
            No softmax attention has a signed kernel, so this option has no attention counterpart.
        causal: taps read offsets -(K-1)..0 only (a decoder's convolution).
        conv_bias: a learned ``(C',)`` bias added to the output, after the convolution (the output projection's
            bias, on the attention side); C' = ``value_dim``, the channels of the values.
        value_dim: C', the channels of the ``values`` the kernels are applied to (divisible by N_h; default C). In
            fairseq's terms C is ``query_size`` (what ``weight_linear`` reads) and C' is ``input_size`` (the
            convolved input, the output and ``conv_bias``); given C' ≠ C, ``forward`` needs ``values``.
        padded_keys: with ``boundary="renormalize"`` and a ``key_padding_mask``: ``"excluded"`` (default) leaves
            padded keys out of the softmax, as attention's padding mask does; ``"zeros"`` keeps them in it, reading
            zeros, which is fairseq's ``renorm_padding=True`` (it renormalises only at the sequence ends and zeroes
            padded tokens before the layer).
        padding_l: fairseq's ``padding_l`` (0..K-1), as in :class:`LightweightConv1d`.
        cut_long_kernel: ``causal`` only, and only when K > N: the softmax is over the last N taps, the only ones
            that can reach a token, as in fairseq's unfolded path (``DynamicConv1dTBC._forward_unfolded``, the one
            its decoder uses), instead of over all K (its expanded path, and the default, whose kernel does not
            depend on N). The two differ only while N < K.

    Attributes:
        kernel_proj: ``nn.Linear(C, N_h (2k+1))``, the matrix W^D (head-major: head h's taps are columns
            ``h (2k+1) .. h (2k+1) + 2k``).
    """

    def __init__(self, embed_dim: int, num_heads: int, kernel_size: int, boundary: str = "zeros",
                 bias: bool = True, weight_dropout: float = 0.0, weight_softmax: bool = True,
                 causal: bool = False, conv_bias: bool = False, padded_keys: str = "excluded",
                 cut_long_kernel: bool = False, padding_l: int | None = None, value_dim: int | None = None) -> None:
        super().__init__(embed_dim, num_heads, kernel_size, boundary, weight_dropout, weight_softmax, causal,
                         padded_keys, padding_l)
        self.value_dim = embed_dim if value_dim is None else positive_int("value_dim", value_dim)
        if self.value_dim % num_heads:
            raise ValueError(f"value_dim ({value_dim}) must be divisible by num_heads ({num_heads})")
        if flag("cut_long_kernel", cut_long_kernel) and not self.causal:
            raise ValueError("cut_long_kernel needs causal=True: fairseq cuts a kernel longer than the sequence only "
                             "when its taps all read the past (padding_l = K - 1)")
        self.cut_long_kernel = flag("cut_long_kernel", cut_long_kernel)
        self.kernel_proj = nn.Linear(embed_dim, num_heads * kernel_size, bias=bias)
        self.conv_bias = nn.Parameter(torch.zeros(self.value_dim)) if flag("conv_bias", conv_bias) else None

    def kernel_logits(self, x: Tensor) -> Tensor:
        """X W^D + b^D reshaped to ``(B, N_h, N, K)``."""
        check_tokens(x, self.embed_dim)
        b, n, _ = x.shape
        return self.kernel_proj(x).view(b, n, self.num_heads, self.kernel_size).transpose(1, 2)

    def band(self, x: Tensor, key_padding_mask: Tensor | None = None) -> Tensor:
        """β_i for every token, ``(B, N_h, N, K)``; renormalised over existing taps when ``boundary`` says so.
        Padded tokens' kernels are predicted from zeros."""
        if key_padding_mask is not None:
            x = x.masked_fill(key_padding_mask[..., None], 0.0)
        logits, n = self.kernel_logits(x), x.shape[1]
        if self.cut_long_kernel and self.weight_softmax and self.kernel_size > n:  # taps 0..K-N-1 reach no token
            cut = torch.arange(self.kernel_size, device=logits.device) < self.kernel_size - n
            logits = logits.masked_fill(cut, float("-inf"))
        return self.normalise(logits, n, key_padding_mask)

    def forward(self, x: Tensor, key_padding_mask: Tensor | None = None, values: Tensor | None = None) -> Tensor:
        """Convolve ``values`` (default ``x``) with the kernels predicted from ``x``.

        Args:
            x: ``(B, N, C)``, the tokens the kernels are predicted from.
            key_padding_mask: optional bool ``(B, N)``, ``True`` on padding.
            values: optional ``(B, N, C')`` (C' divisible by N_h; C' = ``value_dim`` when that was given or with
                ``conv_bias``) the kernels are applied to. Wu et al. apply them to ``x`` itself; an attention layer
                applies them to its values X W_val.

        Returns:
            ``(B, N, C')``.

        Raises:
            ~attnconv._checks.NonFiniteResultError: (a ``ValueError``) ``x`` and ``values`` are finite but the
                kernels or the output overflow the dtype, unless ``attnconv.finite.deferred_finite_checks``
                defers the check to the caller.
        """
        self.check_input(x, key_padding_mask, self.kernel_proj.weight.dtype)
        values = x if values is None else values
        if not isinstance(values, Tensor) or values.dim() != 3 or values.shape[:2] != x.shape[:2]:
            raise ValueError(f"values must be (B, N, C') with (B, N) = {tuple(x.shape[:2])}, "
                             f"got {getattr(values, 'shape', type(values).__name__)}")
        floating_input("values", values, x.dtype)
        if (self.conv_bias is not None or self.value_dim != self.embed_dim) and values.shape[-1] != self.value_dim:
            raise ValueError(f"values must have value_dim={self.value_dim} channels (the conv_bias and output "
                             f"channels), got {values.shape[-1]}: pass values= when value_dim != embed_dim")
        if key_padding_mask is not None:
            values = values.masked_fill(key_padding_mask[..., None], 0.0)
        band = self.dropped(self.band(x, key_padding_mask), x.shape[0], x.shape[1])
        out = apply_band(values, band, self.padding_l).to(values.dtype)  # float32 sums of a half kernel, cast back
        return _check_overflow(self, out if self.conv_bias is None else out + self.conv_bias, x, values)

    def extra_repr(self) -> str:
        return (super().extra_repr() + f", conv_bias={self.conv_bias is not None}, "
                f"cut_long_kernel={self.cut_long_kernel}, value_dim={self.value_dim}")


class ProjectedConv1d(nn.Module):
    """``W_out( conv( X W_val ) )``: a (dynamic) lightweight convolution between two pointwise maps.

    The form that a multi-head attention layer with position-only logits takes as a convolution: its value
    projection, one kernel per head, its output projection. For a :class:`DynamicConv1d` the kernels are
    predicted from the layer's input X and applied to the values X W_val.

    Args:
        conv: a :class:`LightweightConv1d` or :class:`DynamicConv1d`.
        in_proj: the value projection, or ``None`` for the identity.
        out_proj: the output projection, or ``None`` for the identity.
    """

    def __init__(self, conv: LightweightConv1d | DynamicConv1d, in_proj: torch.nn.Module | None = None,
                 out_proj: torch.nn.Module | None = None) -> None:
        super().__init__()
        if not isinstance(conv, (LightweightConv1d, DynamicConv1d)):
            raise ValueError(f"conv must be a LightweightConv1d or DynamicConv1d, got {type(conv).__name__}")
        self.conv, self.in_proj, self.out_proj = conv, in_proj, out_proj
        # C, the input channels: the value projection's, or the convolution's without one (None: not known)
        self.in_channels = conv.embed_dim if in_proj is None else getattr(
            in_proj, "in_features", getattr(in_proj, "in_channels", None))

    def forward(self, x: Tensor, key_padding_mask: Tensor | None = None) -> Tensor:
        channels = self.in_channels if self.in_channels is not None else x.shape[-1] if isinstance(x, Tensor) else -1
        check_tokens(x, channels, dtype=next(self.conv.parameters()).dtype)
        if x.shape[1] == 0:
            raise ValueError("x must hold at least one token (N >= 1), got N = 0")
        if key_padding_mask is not None:
            check_padding_mask(key_padding_mask, x)
            x = x.masked_fill(key_padding_mask[..., None], 0.0)  # padding never reaches the projections
        values = x if self.in_proj is None else self.in_proj(x)
        if isinstance(self.conv, DynamicConv1d):
            out = self.conv(x, key_padding_mask, values=values)
        else:
            out = self.conv(values, key_padding_mask)
        return out if self.out_proj is None else self.out_proj(out)
