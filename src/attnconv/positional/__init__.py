"""Relative positional encodings that plug into :class:`attnconv.attention.MultiHeadSelfAttention`.

Image encodings (Cordonnier et al. 2020): :class:`QuadraticEncoding` (isotropic Gaussian, the encoding of
Theorem 1), :class:`AnisotropicGaussianEncoding`, and :class:`LearnedRelativeEncoding2d` (optionally
query-dependent, for the content-plus-position model).
"""

from .anisotropic import AnisotropicGaussianEncoding
from .base import PositionalLogits, grid_positions, relative_offsets
from .learned import LearnedRelativeEncoding2d
from .quadratic import QuadraticEncoding, hard_logit_floor, positional_query, quadratic_features

__all__ = [
    "AnisotropicGaussianEncoding",
    "LearnedRelativeEncoding2d",
    "PositionalLogits",
    "QuadraticEncoding",
    "grid_positions",
    "hard_logit_floor",
    "positional_query",
    "quadratic_features",
    "relative_offsets",
]
