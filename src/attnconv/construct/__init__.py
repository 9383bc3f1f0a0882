"""Exact constructions that turn convolutions into attention layers and back."""

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
