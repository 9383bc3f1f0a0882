"""Relative positional encodings that plug into :class:`attnconv.attention.MultiHeadSelfAttention`."""

from .base import PositionalLogits, grid_positions, relative_offsets

__all__ = ["PositionalLogits", "grid_positions", "relative_offsets"]
