"""Deprecated path, kept for one release: the kernel analysis moved to :mod:`attnconv.analysis`, the figures to
:mod:`attnconv.figures.bert_runs` (``plot_dynamic_kernels`` is now ``plot_sentence_kernels``)."""

from .analysis import dynamic_kernels, fixed_kernels, kernel_record
from .figures.bert_runs import plot_fixed_kernels, plot_pretraining_curves
from .figures.bert_runs import plot_sentence_kernels as plot_dynamic_kernels

__all__ = ["dynamic_kernels", "fixed_kernels", "kernel_record", "plot_dynamic_kernels", "plot_fixed_kernels",
           "plot_pretraining_curves"]
