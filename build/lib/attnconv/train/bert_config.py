"""The BERT trainers' configurations as plain data: pretraining and fine-tuning, and their named configs.

``--set key=value`` changes any field (``--set steps=100 --set model.depth=2``, through
:func:`attnconv.train.runs.apply_overrides`).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from .._checks import positive_int, real_number
from ..data.corpus import PRETRAIN_CORPORA
from ..data.hub import HUB_CORPORA, HUB_TASKS
from ..data.tasks import TASKS
from ..models.bert import BERT_SIZES, BertConfig
from .precision import check_precision
from .runs import check_device

__all__ = ["FINETUNE_CONFIGS", "PRETRAIN_CONFIGS", "FinetuneConfig", "PretrainConfig"]


def _check_common(config: Any) -> None:
    for name in ("lr", "weight_decay", "warmup"):  # a real, finite number first: then the ranges below
        real_number(name, getattr(config, name))
    if not config.lr > 0 or config.weight_decay < 0:
        raise ValueError(f"need lr > 0 and weight_decay >= 0, got {config.lr}, {config.weight_decay}")
    if not 0 <= config.warmup < 1:
        raise ValueError(f"warmup must be a fraction in [0, 1), got {config.warmup!r}")
    check_device(config.device)
    check_precision(config.precision)


@dataclass
class PretrainConfig:
    """Everything that determines a pretraining run (given the corpus).

    Attributes:
        name: the named config this came from.
        model: the BERT's sizes and attention variant (its ``vocab_size`` is the tokenizer's target size).
        steps: optimiser steps.
        batch_size: examples per step.
        lr: peak AdamW learning rate.
        weight_decay: AdamW decay on matrices (not on 1-D parameters).
        warmup: fraction of steps in linear warm-up.
        max_length: tokens per example including specials, at most ``model.max_length``.
        mask_prob: share of tokens to predict.
        validation_fraction: share of documents held out.
        eval_every: steps between validation evaluations and checkpoints.
        eval_examples: validation examples evaluated (a fixed subset).
        corpora: which NLTK corpora to read, or one name of ``attnconv.data.hub.HUB_CORPORA``
            (``wikitext-103``; needs ``datasets``) alone.
        seed: seeds the weights, example order, masking and dropout.
        device: ``"auto"``, ``"cpu"``, ``"cuda"`` or ``"cuda:N"``.
        precision: ``"fp32"``, ``"bf16"`` or ``"auto"``, as in :class:`attnconv.train.vision_config.TrainConfig`.
        amp: what ``precision="auto"`` means on CUDA: bfloat16 autocast (True) or float32.
        time_limit: stop at the first evaluation past this many seconds (``None``: none).
        progress: show a tqdm progress bar.
    """

    name: str = "custom"
    model: BertConfig = field(default_factory=lambda: replace(BERT_SIZES["cpu-quick"]))
    steps: int = 1000
    batch_size: int = 32
    lr: float = 5e-4
    weight_decay: float = 0.01
    warmup: float = 0.06
    max_length: int = 128
    mask_prob: float = 0.15
    validation_fraction: float = 0.02
    eval_every: int = 100
    eval_examples: int = 512
    corpora: tuple[str, ...] = PRETRAIN_CORPORA
    seed: int = 0
    device: str = "auto"
    precision: str = "auto"
    amp: bool = True
    time_limit: float | None = None
    progress: bool = True

    def __post_init__(self) -> None:
        if isinstance(self.model, dict):
            self.model = BertConfig(**self.model)
        self.corpora = (self.corpora,) if isinstance(self.corpora, str) else tuple(self.corpora)
        if not (self.corpora and all(c in PRETRAIN_CORPORA for c in self.corpora)) and not (
                len(self.corpora) == 1 and self.corpora[0] in HUB_CORPORA):
            raise ValueError(f"corpora must be a non-empty subset of {PRETRAIN_CORPORA}, or one of "
                             f"{tuple(HUB_CORPORA)} alone, got {self.corpora!r}")
        for name in ("steps", "batch_size", "max_length", "eval_every", "eval_examples"):
            positive_int(name, getattr(self, name))
        _check_common(self)
        if not 0 < real_number("mask_prob", self.mask_prob) < 1:
            raise ValueError(f"mask_prob must be in (0, 1): the share of tokens to predict, got {self.mask_prob!r}")
        if not 0 < real_number("validation_fraction", self.validation_fraction) < 1:
            raise ValueError(f"validation_fraction must be in (0, 1): the share of documents held out, got "
                             f"{self.validation_fraction!r}")
        if self.max_length > self.model.max_length:
            raise ValueError(f"max_length ({self.max_length}) must not exceed model.max_length ({self.model.max_length})")
        if self.time_limit is not None and not self.time_limit > 0:
            raise ValueError(f"time_limit must be > 0 seconds or None, got {self.time_limit!r}")


@dataclass
class FinetuneConfig:
    """Everything that determines a fine-tuning run (given the pretrained checkpoint).

    Attributes:
        name: the named config this came from.
        task: one of ``attnconv.data.tasks.TASKS`` (``mr``, ``subj``, ``rte``), or of
            ``attnconv.data.hub.HUB_TASKS`` (``glue-rte``, ``glue-sst2``; needs ``datasets``).
        epochs: passes over the training examples, per seed.
        batch_size: examples per step.
        lr: peak AdamW learning rate.
        weight_decay: AdamW decay on matrices.
        warmup: fraction of steps in linear warm-up.
        max_length: tokens per example including specials (at most the model's).
        train_examples: train on a fixed random subset of this many (``None``: all).
        seeds: one fine-tuning run per seed (head initialisation, order, dropout); the data split is fixed.
        split_seed: seeds the 90/10 split of MR and SUBJ.
        dropout: the classifier's dropout.
        eval_batch_size: examples per evaluation batch.
        device, precision, amp, progress: as in :class:`PretrainConfig`.
    """

    name: str = "custom"
    task: str = "mr"
    epochs: int = 2
    batch_size: int = 32
    lr: float = 1e-4
    weight_decay: float = 0.01
    warmup: float = 0.1
    max_length: int = 128
    train_examples: int | None = None
    seeds: tuple[int, ...] = (0, 1, 2)
    split_seed: int = 0
    dropout: float = 0.1
    eval_batch_size: int = 128
    device: str = "auto"
    precision: str = "auto"
    amp: bool = True
    progress: bool = True

    def __post_init__(self) -> None:
        self.seeds = tuple(self.seeds)
        if self.task not in TASKS and self.task not in HUB_TASKS:
            raise ValueError(f"task must be one of {TASKS + tuple(HUB_TASKS)}, got {self.task!r}")
        for name in ("epochs", "batch_size", "max_length", "eval_batch_size"):
            positive_int(name, getattr(self, name))
        _check_common(self)
        if not self.seeds:
            raise ValueError("seeds must hold at least one seed")
        if self.train_examples is not None:
            positive_int("train_examples (or None)", self.train_examples)
        if not 0 <= self.dropout < 1:
            raise ValueError(f"dropout must be in [0, 1), got {self.dropout!r}")


_TINY = replace(BERT_SIZES["tiny"], vocab_size=400)
_QUICK = replace(BERT_SIZES["cpu-quick"], max_length=128)
_MINI = replace(BERT_SIZES["cpu-quick"], hidden_dim=128, depth=2, num_heads=4, mlp_dim=512)
_GPU = replace(BERT_SIZES["base-small"])

#: The named pretraining configs of ``bert-pretrain --config``.
PRETRAIN_CONFIGS: dict[str, PretrainConfig] = {
    # Seconds on a CPU: the tests and the chapter run it to check the whole pipeline.
    "smoke": PretrainConfig(name="smoke", model=_TINY, steps=12, batch_size=8, lr=1e-3, max_length=64,
                            eval_every=6, eval_examples=32, validation_fraction=0.25, device="cpu", precision="fp32",
                            progress=False),
    # About ten minutes on two quiet CPU cores (2.5-3 steps/s): 4 layers, hidden 256, 4 heads, examples of up
    # to 64 tokens. No time limit, so that every variant gets the same number of updates on a busy machine too.
    "cpu-quick": PretrainConfig(name="cpu-quick", model=_QUICK, steps=1500, batch_size=32, lr=1e-3, max_length=64,
                                eval_every=100, eval_examples=512, device="cpu", precision="fp32"),
    # A quarter of cpu-quick's compute per step (2 layers, hidden 128) for CPUs shared with other work.
    "cpu-mini": PretrainConfig(name="cpu-mini", model=_MINI, steps=800, batch_size=32, lr=1e-3, max_length=64,
                               eval_every=100, eval_examples=512, device="cpu", precision="fp32", time_limit=900.0),
    # A larger model and full-length examples for one GPU, about ten minutes.
    "gpu-10min": PretrainConfig(name="gpu-10min", model=_GPU, steps=20_000, batch_size=128, lr=5e-4,
                                max_length=128, eval_every=1000, eval_examples=2048, time_limit=600.0),
}

#: The named fine-tuning configs of ``bert-finetune --config``.
FINETUNE_CONFIGS: dict[str, FinetuneConfig] = {
    "smoke": FinetuneConfig(name="smoke", epochs=1, batch_size=8, lr=1e-3, max_length=64, train_examples=32,
                            seeds=(0, 1), device="cpu", precision="fp32", progress=False),
    # Under a minute per seed on two CPU cores: 2,000 training sentences, 2 epochs.
    "cpu-quick": FinetuneConfig(name="cpu-quick", epochs=2, batch_size=32, lr=2e-4, max_length=64,
                                train_examples=2000, device="cpu", precision="fp32"),
    "cpu-mini": FinetuneConfig(name="cpu-mini", epochs=2, batch_size=32, lr=2e-4, max_length=64,
                               train_examples=2000, device="cpu", precision="fp32"),
    "gpu-10min": FinetuneConfig(name="gpu-10min", epochs=3, batch_size=32, lr=5e-5, max_length=128),
}
