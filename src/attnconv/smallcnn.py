"""Deprecated path, kept for one release: the small CNN moved to :mod:`attnconv.models.smallcnn`."""

from .models.smallcnn import SmallCNN, fit, predict_logits, synthetic_images

__all__ = ["SmallCNN", "fit", "predict_logits", "synthetic_images"]
