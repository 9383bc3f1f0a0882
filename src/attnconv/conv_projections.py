"""Convolutional projections (Chang et al. 2021): queries, keys or values computed by a convolution.

Chang et al. replace the linear query, key and value maps of self-attention by convolutions over the sequence:
a depthwise-separable one (``DepthwiseSeparableConv1d``, optionally with an activation such as a GELU between
its steps, and optionally with several depthwise channels per input channel), one grouped convolution
(:class:`GroupedConv1d`), or, in their "mixed" variant, a convolution for the first channels and a linear map for the
rest (:class:`MixedProjection`). :class:`~attnconv.composite.CompositeAttention` builds them from its
``conv_projections`` options, which may differ from one projection to the next (``projection_settings``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Mapping, Sequence

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from ._checks import flag, int_at_least, positive_int
from .taps import check_padding_mask, check_tokens, odd_kernel_size

__all__ = ["Activation", "DepthwiseSeparableConv1d", "GroupedConv1d", "MixedProjection", "ProjectionSettings",
           "conv_projection", "activation_function", "ACTIVATIONS", "CONV_PROJECTIONS", "MIXED_SPLITS",
           "VALUE_CONV_SCALES", "projection_kernel_sizes", "projection_settings", "value_branch"]

CONV_PROJECTIONS = ("query", "key", "value")
MIXED_SPLITS = ("heads", "channels")
# Between the depthwise and pointwise steps of a DepthwiseSeparableConv1d: None, or one of the names of the
# activations of Chang et al.'s code base (its config's ``hidden_act``, HuggingFace's ``ACT2FN`` names).
ACTIVATIONS = (None, "gelu", "gelu_new", "gelu_fast", "relu", "swish", "mish", "tanh", "sigmoid")
VALUE_CONV_SCALES = ("zero", "fixed", "per_head")
_SQRT_2_OVER_PI_FAST = 0.7978845608  # the rounded √(2/π) of "gelu_fast"


def _gelu_fast(x: Tensor) -> Tensor:
    return 0.5 * x * (1.0 + torch.tanh(_SQRT_2_OVER_PI_FAST * x * (1.0 + 0.044715 * x * x)))


def activation_function(name: str | None) -> Callable[[Tensor], Tensor] | None:
    """The elementwise function named ``name`` (``None`` for none).

    ``"gelu"``: x Φ(x) with the exact normal CDF (erf). ``"gelu_new"``: its tanh approximation
    ½ x (1 + tanh(√(2/π) (x + 0.044715 x³))). ``"gelu_fast"``: the same with √(2/π) rounded to 0.7978845608
    (within about 4·10⁻¹² of ``"gelu_new"``). ``"swish"``: x σ(x). ``"mish"``: x tanh(softplus(x)). ``"relu"``,
    ``"tanh"``, ``"sigmoid"``: as named.

    Raises:
        ValueError: ``name`` is not one of ``ACTIVATIONS``.
    """
    if not isinstance(name, (str, type(None))) or name not in ACTIVATIONS:
        raise ValueError(f"activation must be one of {ACTIVATIONS}, got {name!r}")
    return {None: None, "gelu": F.gelu, "gelu_new": lambda x: F.gelu(x, approximate="tanh"), "gelu_fast": _gelu_fast,
            "relu": F.relu, "swish": F.silu, "mish": F.mish, "tanh": torch.tanh, "sigmoid": torch.sigmoid}[name]


class Activation(nn.Module):
    """The elementwise function ``activation_function(name)`` as a module (no parameters), e.g. in an MLP.

    ``Activation("gelu")`` computes exactly what ``nn.GELU()`` does."""

    def __init__(self, name: str) -> None:
        super().__init__()
        if name is None or activation_function(name) is None:
            raise ValueError(f"activation must be one of {ACTIVATIONS[1:]}, got {name!r}")
        self.name = name

    def forward(self, x: Tensor) -> Tensor:
        return activation_function(self.name)(x)

    def extra_repr(self) -> str:
        return repr(self.name)


class DepthwiseSeparableConv1d(nn.Module):
    """A depthwise 1-D convolution ("same" zero padding) followed by a pointwise linear map.

    A drop-in replacement for the ``nn.Linear`` query, key or value projection of an attention layer: the
    convolutional injection points of Chang et al. 2021. Each output token then mixes the 2k+1 tokens around it
    before the pointwise map.

    Args:
        in_channels: C_in.
        out_channels: C_out.
        kernel_size: 2k+1, odd.
        bias: biases on the depthwise and pointwise steps.
        activation: ``None`` (a linear map of the window, so equal to one ``nn.Conv1d``) or one of
            ``ACTIVATIONS`` between the two steps (``activation_function``); ``"gelu"`` is the default of
            Chang et al.'s code, which uses its model's ``hidden_act``. With one the projection is no longer linear
            in X, so it has no single-convolution (or attention) counterpart.
        depth_multiplier: m, depthwise output channels per input channel: the depthwise step is
            ``nn.Conv1d(C_in, m C_in, K, groups=C_in)`` (output channel o filters input channel o // m) and the
            pointwise step maps m C_in channels to C_out. Chang et al.'s code takes m = N_h D_h / C (its depthwise
            step always has N_h D_h outputs).

    Shapes:
        x: ``(B, N, C_in)`` -> ``(B, N, C_out)``. Pass ``key_padding_mask`` (bool ``(B, N)``) so that padded
        tokens read as zero padding, which makes a padded batch agree with its unpadded sequences.
    """

    def __init__(self, in_channels: int, out_channels: int, kernel_size: int, bias: bool = True,
                 activation: str | None = None, depth_multiplier: int = 1) -> None:
        super().__init__()
        self.in_channels = positive_int("in_channels", in_channels)
        self.out_channels = positive_int("out_channels", out_channels)
        self.max_distance = odd_kernel_size(kernel_size)
        self.kernel_size = kernel_size
        activation_function(activation)  # checks the name
        self.activation = activation
        self.depth_multiplier = positive_int("depth_multiplier", depth_multiplier)
        mid = in_channels * depth_multiplier
        self.depthwise = nn.Conv1d(in_channels, mid, kernel_size, padding=self.max_distance, groups=in_channels,
                                   bias=bias)
        self.pointwise = nn.Linear(mid, out_channels, bias=bias)

    def forward(self, x: Tensor, key_padding_mask: Tensor | None = None) -> Tensor:
        check_tokens(x, self.in_channels, dtype=self.pointwise.weight.dtype)
        if x.shape[1] == 0:
            raise ValueError("x must hold at least one token (N >= 1), got N = 0")
        check_padding_mask(key_padding_mask, x)
        if key_padding_mask is not None:
            x = x.masked_fill(key_padding_mask[..., None], 0.0)
        mixed = self.depthwise(x.transpose(1, 2)).transpose(1, 2)  # (B, N, m C_in)
        act = activation_function(self.activation)
        if act is not None:
            mixed = act(mixed)
        return self.pointwise(mixed)

    def extra_repr(self) -> str:
        return (f"in_channels={self.in_channels}, out_channels={self.out_channels}, kernel_size={self.kernel_size}, "
                f"activation={self.activation!r}, depth_multiplier={self.depth_multiplier}")


class GroupedConv1d(nn.Module):
    """One grouped 1-D convolution ("same" zero padding) used as a projection: Chang et al.'s non-depthwise
    convolutional queries, keys or values (``nn.Conv1d(C_in, C_out, K, groups=G)``, no pointwise step).

    Args:
        in_channels: C_in, divisible by ``groups``.
        out_channels: C_out, divisible by ``groups``.
        kernel_size: K = 2k+1, odd.
        groups: G; output channel o reads the C_in / G input channels of group o // (C_out / G).
        bias: a bias per output channel.

    Shapes:
        x: ``(B, N, C_in)`` -> ``(B, N, C_out)``; padded tokens (``key_padding_mask`` True) read as zeros.
    """

    activation = None

    def __init__(self, in_channels: int, out_channels: int, kernel_size: int, groups: int, bias: bool = True) -> None:
        super().__init__()
        self.in_channels = positive_int("in_channels", in_channels)
        self.out_channels = positive_int("out_channels", out_channels)
        self.groups = positive_int("groups", groups)
        if in_channels % groups or out_channels % groups:
            raise ValueError(f"groups={groups} must divide in_channels={in_channels} and out_channels={out_channels}")
        self.max_distance = odd_kernel_size(kernel_size)
        self.kernel_size = kernel_size
        self.conv = nn.Conv1d(in_channels, out_channels, kernel_size, padding=self.max_distance, groups=groups,
                              bias=bias)

    def forward(self, x: Tensor, key_padding_mask: Tensor | None = None) -> Tensor:
        if key_padding_mask is not None:
            x = x.masked_fill(key_padding_mask[..., None], 0.0)
        return self.conv(x.transpose(1, 2)).transpose(1, 2)

    def extra_repr(self) -> str:
        return f"in_channels={self.in_channels}, out_channels={self.out_channels}, groups={self.groups}"


def conv_projection(in_channels: int, out_channels: int, kernel_size: int, bias: bool = True,
                    activation: str | None = None, groups: int | None = None,
                    depth_multiplier: int = 1) -> nn.Module:
    """A convolutional projection: depthwise-separable (``groups=None``) or one grouped convolution."""
    if groups is None:
        return DepthwiseSeparableConv1d(in_channels, out_channels, kernel_size, bias, activation, depth_multiplier)
    if activation is not None:
        raise ValueError("conv_activation needs depthwise-separable projections (conv_groups=None): a grouped "
                         "convolution has no step between which to put it")
    if depth_multiplier != 1:
        raise ValueError("conv_depth_multiplier needs depthwise-separable projections (conv_groups=None): a grouped "
                         "convolution has no depthwise step")
    return GroupedConv1d(in_channels, out_channels, kernel_size, groups, bias)


class MixedProjection(nn.Module):
    """A projection whose first channels are a convolution and whose other channels are linear.

    Chang et al.'s "mixed" convolutional projections: of the N_h heads' query (key, value) channels, the first
    ones come from a ``DepthwiseSeparableConv1d`` (or a :class:`GroupedConv1d`) and the
    rest from an ``nn.Linear``. By default the split falls between heads, after ``conv_heads`` heads; Chang et al.'s
    code splits at (N_h D_h) // 2 channels, which for an odd N_h falls inside a head (``conv_channels``).

    Args:
        in_channels: C.
        head_dim: D_h.
        num_heads: N_h.
        conv_heads: how many heads (the first ones) are convolutional, 1 ≤ ``conv_heads`` < N_h.
        kernel_size, bias, activation, depth_multiplier: as in ``DepthwiseSeparableConv1d``.
        groups: ``None`` (depthwise-separable) or G, a grouped convolution (:class:`GroupedConv1d`).
        conv_channels: the number of convolutional channels, if not ``conv_heads`` D_h (1 ≤ it < N_h D_h).

    Shapes:
        x: ``(B, N, C)`` -> ``(B, N, N_h D_h)``, head-major like ``nn.Linear(C, N_h D_h)``.
    """

    def __init__(self, in_channels: int, head_dim: int, num_heads: int, conv_heads: int, kernel_size: int,
                 bias: bool = True, activation: str | None = None, groups: int | None = None,
                 conv_channels: int | None = None, depth_multiplier: int = 1) -> None:
        super().__init__()
        positive_int("num_heads", num_heads)
        if isinstance(conv_heads, bool) or not isinstance(conv_heads, int) or not 1 <= conv_heads < num_heads:
            raise ValueError(f"conv_heads must be an int in [1, num_heads={num_heads}), got {conv_heads!r}: "
                             "mixed projections need some convolutional and some linear heads")
        total = num_heads * positive_int("head_dim", head_dim)
        split = conv_heads * head_dim if conv_channels is None else int_at_least("conv_channels", conv_channels, 1)
        if split >= total:
            raise ValueError(f"conv_channels must be below num_heads * head_dim = {total}, got {split}")
        self.conv_heads, self.conv_channels = conv_heads, split
        self.conv = conv_projection(in_channels, split, kernel_size, bias, activation, groups, depth_multiplier)
        self.linear = nn.Linear(in_channels, total - split, bias=bias)
        self.out_features = total

    def forward(self, x: Tensor, key_padding_mask: Tensor | None = None) -> Tensor:
        return torch.cat([self.conv(x, key_padding_mask), self.linear(x)], dim=-1)

    def extra_repr(self) -> str:
        return f"conv_heads={self.conv_heads}, conv_channels={self.conv_channels}"


@dataclass(frozen=True)
class ProjectionSettings:
    """The settings of one convolutional projection (one name's ``conv_*`` options of ``CompositeAttention``)."""

    kernel_size: int
    activation: str | None = None
    groups: int | None = None
    mixed: bool = False
    depth_multiplier: int = 1

    def build(self, in_channels: int, head_dim: int, num_heads: int, bias: bool, mixed_split: str) -> nn.Module:
        """The projection ``(B, N, C) -> (B, N, N_h D_h)`` these settings describe."""
        total = num_heads * head_dim
        out = (total // 2 if mixed_split == "channels" else (num_heads // 2) * head_dim) if self.mixed else total
        if self.groups is not None and (in_channels % self.groups or out % self.groups):
            raise ValueError(f"conv_groups={self.groups} must divide the projection's input channels ({in_channels}) "
                             f"and its convolution's output channels ({out})")
        if self.mixed:
            split = total // 2 if mixed_split == "channels" else None
            return MixedProjection(in_channels, head_dim, num_heads, num_heads // 2, self.kernel_size, bias,
                                   self.activation, self.groups, split, self.depth_multiplier)
        return conv_projection(in_channels, total, self.kernel_size, bias, self.activation, self.groups,
                               self.depth_multiplier)


def _per_projection(option: str, value: object, names: tuple[str, ...], default: object) -> dict[str, object]:
    """``value`` for every name, or, from a mapping, each name's own value (``default`` where it has none)."""
    if isinstance(value, Mapping):
        unknown = set(value) - set(names)
        if unknown:
            raise ValueError(f"{option} maps names of conv_projections {names} to settings, got {sorted(unknown)}")
        return {name: value.get(name, default) for name in names}
    return dict.fromkeys(names, value)


def projection_settings(names: Sequence[str], kernel_size: int | Mapping[str, int],
                        activation: str | None | Mapping[str, str | None], groups: int | None | Mapping[str, int | None],
                        mixed: bool | Mapping[str, bool], depth_multiplier: int | Mapping[str, int],
                        num_heads: int) -> dict[str, ProjectionSettings]:
    """One :class:`ProjectionSettings` per name of ``conv_projections``.

    Each option is one value for every convolutional projection, or a mapping from projection name to its own
    value (names left out get the default: 3, ``None``, ``None``, ``False``, 1); Chang et al. configure their
    query/key convolutions (``qk``) and their value convolution (``value_forward``) separately.

    Raises:
        ValueError: an unknown name, a mapping naming a projection that is not convolutional, a bad value, or an
            option that needs convolutional projections without any.
    """
    if isinstance(names, str) or not isinstance(names, Sequence):
        raise ValueError(f"conv_projections must be a sequence of names from {CONV_PROJECTIONS}, got {names!r}")
    names = tuple(names)
    for name in names:
        if name not in CONV_PROJECTIONS:
            raise ValueError(f"conv_projections must name some of {CONV_PROJECTIONS}, got {name!r}")
    sizes = projection_kernel_sizes(kernel_size)
    if isinstance(kernel_size, Mapping) and set(kernel_size) - set(names):
        raise ValueError(f"conv_kernel_size maps names of conv_projections {names} to sizes, got "
                         f"{sorted(set(kernel_size) - set(names))}, which are not convolutional")
    acts = _per_projection("conv_activation", activation, names, None)
    for act in (acts.values() if names or isinstance(activation, Mapping) else [activation]):
        if not isinstance(act, (str, type(None))) or act not in ACTIVATIONS:
            raise ValueError(f"conv_activation must be one of {ACTIVATIONS} (or a mapping to them), got {act!r}")
    if not names and activation is not None and not isinstance(activation, Mapping):
        raise ValueError("conv_activation applies to convolutional projections: name some conv_projections")
    mixes = _per_projection("mixed_projections", mixed, names, False)
    for m in (mixes.values() if names or isinstance(mixed, Mapping) else [mixed]):
        flag("mixed_projections (or each value of its mapping)", m)
    if (not names and mixed and not isinstance(mixed, Mapping)) or (any(mixes.values()) and num_heads < 2):
        raise ValueError("mixed_projections needs num_heads >= 2 and some conv_projections: half of the heads "
                         "are convolutional, the other half linear")
    group = {name: None if g is None else positive_int("conv_groups", g)
             for name, g in _per_projection("conv_groups", groups, names, None).items()}
    if groups is not None and not isinstance(groups, Mapping):
        positive_int("conv_groups", groups)
    mults = {name: positive_int("conv_depth_multiplier", m)
             for name, m in _per_projection("conv_depth_multiplier", depth_multiplier, names, 1).items()}
    if not isinstance(depth_multiplier, Mapping):
        positive_int("conv_depth_multiplier", depth_multiplier)
    return {name: ProjectionSettings(sizes[name], acts[name], group[name], mixes[name], mults[name]) for name in names}


def projection_kernel_sizes(conv_kernel_size: int | Mapping[str, int]) -> dict[str, int]:
    """One odd kernel size per projection name, from an int or a mapping (missing names get 3)."""
    if isinstance(conv_kernel_size, Mapping):
        unknown = set(conv_kernel_size) - set(CONV_PROJECTIONS)
        if unknown:
            raise ValueError(f"conv_kernel_size maps projection names {CONV_PROJECTIONS} to sizes, got "
                             f"{sorted(unknown)}")
        sizes = {name: conv_kernel_size.get(name, 3) for name in CONV_PROJECTIONS}
    else:
        sizes = dict.fromkeys(CONV_PROJECTIONS, conv_kernel_size)
    for size in sizes.values():
        odd_kernel_size(size, "conv_kernel_size")
    return sizes


def value_branch(num_heads: int, head_dim: int, on: bool, kernel_size: int | None,
                 default: int | Mapping[str, int], bias: bool,
                 scale: str) -> tuple[nn.Conv1d | None, nn.Parameter | None]:
    """Chang et al.'s ``convolution`` branch: a depthwise convolution of the N_h D_h value channels and its scalar
    γ (``None, None`` when ``on`` is false); ``default`` is ``conv_kernel_size``."""
    if scale not in VALUE_CONV_SCALES:
        raise ValueError(f"value_conv_scale must be one of {VALUE_CONV_SCALES}, got {scale!r}")
    if not on:
        return None, None
    if kernel_size is None:
        if isinstance(default, Mapping):
            raise ValueError("value_conv_kernel_size is needed when conv_kernel_size is a mapping")
        kernel_size = default
    odd_kernel_size(kernel_size, "value_conv_kernel_size" if kernel_size is not default else "conv_kernel_size")
    inner = num_heads * head_dim
    conv = nn.Conv1d(inner, inner, kernel_size, padding=kernel_size // 2, groups=inner, bias=bool(bias))
    if scale == "zero":
        return conv, nn.Parameter(torch.zeros(()))
    return conv, nn.Parameter(torch.ones(num_heads), requires_grad=scale == "per_head")
