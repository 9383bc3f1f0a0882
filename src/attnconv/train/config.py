"""Deprecated path, kept for one release: the vision config is in :mod:`attnconv.train.vision_config`, the generic
config helpers in :mod:`attnconv.train.runs`."""

from __future__ import annotations

from typing import Any

from . import runs
from .runs import RUN_CONTROL_FIELDS, apply_overrides, config_to_dict, override_dict
from .vision_config import VISION_CONFIGS, TrainConfig, named_config

__all__ = ["RUN_CONTROL_FIELDS", "TrainConfig", "VISION_CONFIGS", "apply_overrides", "config_from_dict",
           "override_dict", "config_to_dict", "named_config"]


def config_from_dict(data: dict[str, Any]) -> TrainConfig:
    """A :class:`TrainConfig` from :func:`config_to_dict`'s data (``runs.config_from_dict(TrainConfig, data)``)."""
    return runs.config_from_dict(TrainConfig, data)
