"""The networks of the experiments: image classifiers (Cordonnier et al. 2020) and a small BERT (Chang et al. 2021).

- :mod:`attnconv.models.vision`: the attention-only network and its :class:`~attnconv.models.vision.VisionConfig`.
- :mod:`attnconv.models.resnet`: the CIFAR ResNet18 baseline.
- :mod:`attnconv.models.smallcnn`: a small CNN that trains in under a minute, for the conversion experiment.
- :mod:`attnconv.models.flops`: parameter and FLOP counts.
- :mod:`attnconv.models.bert`: the small BERT with convolutional attention variants, for masked-LM pretraining
  and sentence classification.

:func:`build_model` builds an image classifier by the name the command line uses (``MODEL_NAMES``).
"""

from __future__ import annotations

from dataclasses import replace

from torch import nn

from .bert import BERT_SIZES, VARIANTS, BertClassifier, BertConfig, BertForMaskedLM
from .flops import ModelCost, count_parameters, model_cost
from .resnet import ResNet, ResNetConfig
from .smallcnn import SmallCNN
from .vision import (ATTENTION_KINDS, SelfAttentionNet, VisionConfig, gaussian_parameters, gpsa_gates,
                     make_attention, no_weight_decay)

__all__ = [
    # image classifiers
    "ATTENTION_KINDS", "MODEL_NAMES", "ResNet", "ResNetConfig", "SelfAttentionNet", "SmallCNN", "VisionConfig",
    "build_model", "gaussian_parameters", "gpsa_gates", "make_attention", "no_weight_decay",
    # costs
    "ModelCost", "count_parameters", "model_cost",
    # BERT
    "BERT_SIZES", "VARIANTS", "BertClassifier", "BertConfig", "BertForMaskedLM",
]

MODEL_NAMES = ("resnet18",) + tuple(f"sa-{kind.replace('_', '-')}" for kind in ATTENTION_KINDS)


def build_model(name: str, config: VisionConfig | ResNetConfig) -> nn.Module:
    """A model by name: ``"resnet18"`` with a :class:`~attnconv.models.resnet.ResNetConfig`, or ``"sa-<kind>"``
    (e.g. ``"sa-quadratic"``, ``"sa-learned-content"``, ``"sa-gpsa"``) with a
    :class:`~attnconv.models.vision.VisionConfig`, whose ``attention`` is set to that kind.
    """
    if name not in MODEL_NAMES:
        raise ValueError(f"name must be one of {MODEL_NAMES}, got {name!r}")
    if name == "resnet18":
        if not isinstance(config, ResNetConfig):
            raise ValueError(f"resnet18 needs a ResNetConfig, got {type(config).__name__}")
        return ResNet(config)
    if not isinstance(config, VisionConfig):
        raise ValueError(f"{name} needs a VisionConfig, got {type(config).__name__}")
    kind = name[len("sa-"):].replace("-", "_")
    return SelfAttentionNet(replace(config, attention=kind))
