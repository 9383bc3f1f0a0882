"""Deprecated path, kept for one release: the figures moved to :mod:`attnconv.figures.vision_runs`."""

from .figures.vision_runs import (MASS_LEVELS, gaussian_contour, plot_accuracy, plot_attention_maps,
                                  plot_augmentations, plot_center_trajectories, plot_centers, plot_head_shifts)

__all__ = ["MASS_LEVELS", "gaussian_contour", "plot_accuracy", "plot_attention_maps", "plot_augmentations",
           "plot_center_trajectories", "plot_centers", "plot_head_shifts"]
