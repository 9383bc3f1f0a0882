"""Relative positional encodings that plug into :class:`attnconv.attention.MultiHeadSelfAttention`.

Image encodings (Cordonnier et al. 2020): :class:`QuadraticEncoding` (isotropic Gaussian, the encoding of
Theorem 1), :class:`SignedQuadraticEncoding` (the same logits with α of any sign, as trained ConViT heads may have),
:class:`AnisotropicGaussianEncoding`, and :class:`LearnedRelativeEncoding2d` (optionally
query-dependent, for the content-plus-position model).

Sequence encodings (Chang et al. 2021), each a convolution kernel on the logits: :class:`RelativePositionBias`
(optionally T5-bucketed), :class:`QueryRelativeLogits` (Shaw et al.), :class:`KeyRelativeLogits` and :class:`ALiBi`;
the content-free ones derive from :class:`StaticRelativeLogits`.

Absolute positions that act through the offset (chapter 05): :func:`sinusoidal_encoding` (Vaswani et al. 2017) and
:class:`RotaryEmbedding` (RoPE, Su et al. 2021), with their frequencies :func:`rotary_frequencies`.

Modules: ``base`` (the interface and grids), ``quadratic``, ``signed_quadratic``, ``anisotropic``, ``learned`` (images); ``band`` (the
``(N, 2k+1)`` band and its spread over ``(N, N)``), ``sequence`` (sequences), ``rotary`` (sinusoidal and rotary).
"""

from .anisotropic import AnisotropicGaussianEncoding
from .base import PositionalLogits, grid_positions, relative_offsets
from .learned import LearnedRelativeEncoding2d
from .quadratic import QuadraticEncoding, hard_logit_floor, positional_query, quadratic_features
from .signed_quadratic import SignedQuadraticEncoding
from .band import band_to_logits, key_to_query_frame, logits_to_band, relative_index, relative_position_bucket
from .rotary import RotaryEmbedding, rotary_frequencies, sinusoidal_encoding
from .sequence import (
    ALiBi,
    KeyRelativeLogits,
    QueryRelativeLogits,
    RelativeLogits1d,
    RelativePositionBias,
    StaticRelativeLogits,
)

__all__ = [
    "ALiBi",
    "AnisotropicGaussianEncoding",
    "KeyRelativeLogits",
    "QueryRelativeLogits",
    "RelativeLogits1d",
    "RelativePositionBias",
    "RotaryEmbedding",
    "StaticRelativeLogits",
    "band_to_logits",
    "key_to_query_frame",
    "logits_to_band",
    "relative_index",
    "relative_position_bucket",
    "rotary_frequencies",
    "sinusoidal_encoding",
    "LearnedRelativeEncoding2d",
    "PositionalLogits",
    "QuadraticEncoding",
    "SignedQuadraticEncoding",
    "grid_positions",
    "hard_logit_floor",
    "positional_query",
    "quadratic_features",
    "relative_offsets",
]
