"""Deprecated path, kept for one release: the figures moved to :mod:`attnconv.figures.image` as ``plot_*``."""

from .figures.image import plot_attention as show_attention
from .figures.image import plot_error_vs_alpha as show_error_vs_alpha
from .figures.image import plot_gaussian_head as show_gaussian_head
from .figures.image import plot_padding as show_padding
from .figures.image import plot_shifted_copies as show_shifted_copies
from .figures.image import plot_weight_matrices as show_weight_matrices

__all__ = ["show_attention", "show_error_vs_alpha", "show_gaussian_head", "show_padding", "show_shifted_copies",
           "show_weight_matrices"]
