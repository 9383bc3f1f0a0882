"""Training: configs as plain data, a resumable single- or multi-process loop, and the command line.

- :mod:`attnconv.train.config`: :class:`TrainConfig` and the named configs (``smoke``, ``cpu-quick``,
  ``gpu-10min``, ``paper``).
- :mod:`attnconv.train.vision`: :func:`train_vision`, the CIFAR-10 loop.
- :mod:`attnconv.train.cli`: ``python -m attnconv.train vision --config NAME --out DIR [--resume]``.
"""

from .config import VISION_CONFIGS, TrainConfig, apply_overrides, named_config
from .schedule import warmup_cosine
from .vision import train_vision

__all__ = ["TrainConfig", "VISION_CONFIGS", "apply_overrides", "named_config", "train_vision", "warmup_cosine"]
