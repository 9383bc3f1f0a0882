"""Deprecated path, kept for one release: the figures moved to :mod:`attnconv.figures.sequence` as ``plot_*``."""

from .figures.sequence import plot_bias_widget_frame as show_bias_widget_frame
from .figures.sequence import plot_boundary_effect as show_boundary_effect
from .figures.sequence import plot_dynamic_kernels as show_dynamic_kernels
from .figures.sequence import plot_kernel_and_attention as show_kernel_and_attention
from .figures.sequence import plot_kernel_terms as show_kernel_terms
from .figures.sequence import plot_relative_attention_benchmark as show_benchmark

__all__ = ["show_benchmark", "show_bias_widget_frame", "show_boundary_effect", "show_dynamic_kernels",
           "show_kernel_and_attention", "show_kernel_terms"]
