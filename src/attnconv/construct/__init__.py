"""Exact constructions that turn convolutions into attention layers and back."""

from .image import ConvAsAttention, conv_to_mhsa, factorize_tap
from .network import convert_convolutions

__all__ = ["ConvAsAttention", "conv_to_mhsa", "convert_convolutions", "factorize_tap"]
