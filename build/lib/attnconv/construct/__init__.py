"""Exact constructions that turn convolutions into attention layers and back: the theorems as functions.

- :mod:`attnconv.construct.image`: Theorem 1 (Cordonnier et al. 2020), :func:`~attnconv.construct.image.conv_to_mhsa`: an ``nn.Conv1d`` or
  ``nn.Conv2d`` as multi-head self-attention with one quadratic head per kernel tap.
- :mod:`attnconv.construct.network`: :func:`~attnconv.construct.network.convert_convolutions`, every convolution of a network at once.
- :mod:`attnconv.construct.sequence`: Chang et al. 2021's equivalences both ways: a lightweight or dynamic
  convolution as relative-position attention, and position-only attention back as a convolution.

Each function states its preconditions and raises ``ValueError`` when they fail.
"""

from .image import ConvAsAttention, conv_to_mhsa, factorize_tap
from .network import convert_convolutions
from .sequence import (
    attention_to_dynamic_conv,
    attention_to_lightconv,
    dynamic_conv_to_attention,
    lightconv_to_attention,
)

__all__ = [
    "ConvAsAttention",
    "attention_to_dynamic_conv",
    "attention_to_lightconv",
    "conv_to_mhsa",
    "convert_convolutions",
    "dynamic_conv_to_attention",
    "factorize_tap",
    "lightconv_to_attention",
]
