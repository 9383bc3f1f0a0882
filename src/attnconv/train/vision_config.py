"""The vision trainer's configuration as plain data: one dataclass, and the named configs of the command line.

A named config fixes the recipe and the sizes of every model; ``--model`` picks which model trains, and
``--set key=value`` changes any field (``--set epochs=3 --set sa.hidden_dim=64``, through
:func:`attnconv.train.runs.apply_overrides`).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from .._checks import positive_int, real_number
from ..models import MODEL_NAMES, ResNetConfig, VisionConfig
from .precision import check_precision
from .runs import check_device, named_copy

__all__ = ["OPTIMIZERS", "TrainConfig", "VISION_CONFIGS", "named_config"]

OPTIMIZERS = ("sgd", "adamw")


@dataclass
class TrainConfig:
    """Everything that determines a training run (given the data).

    Attributes:
        name: the named config this came from (for records).
        model: one of ``attnconv.models.MODEL_NAMES``, e.g. ``"sa-quadratic"`` or ``"resnet18"``.
        sa: sizes of the attention models.
        resnet: sizes of the ResNet.
        epochs: passes over the (sub)set of training images.
        batch_size: the global batch, split evenly over the processes.
        lr: peak learning rate.
        momentum: SGD momentum (unused by AdamW).
        weight_decay: L2 penalty with SGD, decoupled decay with AdamW (neither applied to Gaussian centres and
            spreads nor to GPSA gates: :func:`attnconv.models.vision.no_weight_decay`).
        optimizer: ``"sgd"`` (SGD with momentum, the paper's) or ``"adamw"`` (AdamW with PyTorch's β and ε, as
            ConViT and DeiT train).
        warmup: fraction of all steps spent in linear warm-up before the cosine decay.
        label_smoothing: the training loss's label smoothing (0: plain cross-entropy).
        flip_test: the final accuracy on the full test set averages each image's logits with its mirror's.
        train_images: train on a fixed random subset of this many images (``None``: all 50,000).
        test_images: evaluate on a fixed random subset of this many test images (``None``: all 10,000).
        eval_batch_size: images per evaluation batch (per process).
        seed: seeds the initial weights, the data order, the augmentation and dropout.
        device: ``"auto"`` (CUDA when present), ``"cpu"``, ``"cuda"`` or ``"cuda:N"``.
        precision: ``"fp32"``, ``"bf16"`` (autocast, on the CPU or CUDA) or ``"auto"``: on CUDA bf16 when ``amp``,
            on a CPU float32, with a start-up probe's bf16 speed in the record (:mod:`attnconv.train.precision`).
        amp: what ``precision="auto"`` means on CUDA: bfloat16 autocast (True) or float32 (ignored elsewhere).
        compile: wrap the model in ``torch.compile``.
        threads: CPU threads of each process (``None``: the available cores, shared by the processes on the
            machine, and no more than ``OMP_NUM_THREADS`` where that is set); set when the run starts and recorded
            in ``provenance.json``.
        snapshots_per_epoch: how often the attention centres of Gaussian models are recorded.
        attention_images: test images averaged over for the final attention maps.
        time_limit: stop after the first epoch that ends past this many seconds of training (``None``: no limit).
        progress: show a tqdm progress bar.
    """

    name: str = "custom"
    model: str = "sa-quadratic"
    sa: VisionConfig = field(default_factory=VisionConfig)
    resnet: ResNetConfig = field(default_factory=ResNetConfig)
    epochs: int = 300
    batch_size: int = 100
    lr: float = 0.1
    momentum: float = 0.9
    weight_decay: float = 1e-4
    optimizer: str = "sgd"
    warmup: float = 0.05
    label_smoothing: float = 0.0
    flip_test: bool = False
    train_images: int | None = None
    test_images: int | None = None
    eval_batch_size: int = 500
    seed: int = 0
    device: str = "auto"
    precision: str = "auto"
    amp: bool = True
    compile: bool = False
    threads: int | None = None
    snapshots_per_epoch: int = 1
    attention_images: int = 100
    time_limit: float | None = None
    progress: bool = True

    def __post_init__(self) -> None:
        if self.model not in MODEL_NAMES:
            raise ValueError(f"model must be one of {MODEL_NAMES}, got {self.model!r}")
        for name, kind in (("sa", VisionConfig), ("resnet", ResNetConfig)):
            if not isinstance(getattr(self, name), kind):
                raise TypeError(f"{name} must be a {kind.__name__}, got {type(getattr(self, name)).__name__} "
                                f"{getattr(self, name)!r}: set its fields with --set {name}.FIELD=VALUE")
        for name in ("epochs", "batch_size", "eval_batch_size", "snapshots_per_epoch", "attention_images"):
            positive_int(name, getattr(self, name))
        for name in ("train_images", "test_images", "threads"):
            if getattr(self, name) is not None:
                positive_int(f"{name} (or None)", getattr(self, name))
        for name in ("lr", "momentum", "weight_decay", "warmup"):  # a real, finite number first: then the ranges
            real_number(name, getattr(self, name))
        if not self.lr > 0 or not 0 <= self.momentum < 1 or self.weight_decay < 0:
            raise ValueError(f"need lr > 0, 0 <= momentum < 1, weight_decay >= 0; got {self.lr}, "
                             f"{self.momentum}, {self.weight_decay}")
        if self.optimizer not in OPTIMIZERS:
            raise ValueError(f"optimizer must be one of {OPTIMIZERS}, got {self.optimizer!r}")
        real_number("label_smoothing", self.label_smoothing)
        if not 0 <= self.label_smoothing < 1:
            raise ValueError(f"label_smoothing must be in [0, 1), got {self.label_smoothing!r}")
        if not 0 <= self.warmup < 1:
            raise ValueError(f"warmup must be a fraction in [0, 1), got {self.warmup!r}")
        if self.train_images is not None and self.batch_size > self.train_images:
            raise ValueError(f"batch_size ({self.batch_size}) must not exceed train_images ({self.train_images}): "
                             "an epoch would have no step")
        check_device(self.device)
        check_precision(self.precision)
        if self.time_limit is not None and not self.time_limit > 0:
            raise ValueError(f"time_limit must be > 0 seconds or None, got {self.time_limit!r}")

    @property
    def model_config(self) -> VisionConfig | ResNetConfig:
        """The sizes of the model that trains."""
        return self.resnet if self.model == "resnet18" else self.sa


_PAPER_SA = VisionConfig()  # 400 hidden, 6 blocks, 9 heads of 400, 512-wide MLP, dropout 0.1
_QUICK_SA = VisionConfig(hidden_dim=64, depth=3, num_heads=9, head_dim=32, mlp_dim=128)

VISION_CONFIGS: dict[str, TrainConfig] = {
    # A few seconds: the test suite and the chapter run it to check the whole pipeline.
    "smoke": TrainConfig(
        name="smoke", sa=VisionConfig(hidden_dim=16, depth=1, num_heads=4, head_dim=8, mlp_dim=32),
        resnet=ResNetConfig(width=4, blocks=(1, 1, 1, 1)), epochs=2, batch_size=32, lr=0.05,
        train_images=256, test_images=128, eval_batch_size=128, snapshots_per_epoch=2, attention_images=16,
        device="cpu", precision="fp32"),
    # About five minutes on two idle CPU cores: the paper's recipe on narrow models and a fifth of the data.
    # Each epoch is evaluated on 2,000 test images; the final accuracy on all 10,000.
    "cpu-quick": TrainConfig(
        name="cpu-quick", sa=_QUICK_SA, resnet=ResNetConfig(width=16), epochs=6, batch_size=100, lr=0.1,
        train_images=10_000, test_images=2_000, eval_batch_size=500, snapshots_per_epoch=4, device="cpu",
        precision="fp32"),
    # The quick widths on all 50,000 training images: about two hours on two idle CPU cores (resumable).
    "cpu-long": TrainConfig(
        name="cpu-long", sa=_QUICK_SA, resnet=ResNetConfig(width=16), epochs=12, batch_size=100, lr=0.1,
        test_images=2_000, eval_batch_size=500, snapshots_per_epoch=2, device="cpu", precision="fp32"),
    # The cpu-long widths on all 50,000 images in bfloat16, one process per core of a two-core CPU
    # (torchrun --nproc_per_node 2), 22 epochs: under half an hour on two idle cores. No dropout (the narrow model
    # underfits in so few epochs, and dropout's masks made each epoch 12% longer, 75 -> 85 s), label smoothing 0.1,
    # and a mirrored second look at each test image for the final number. results/benchmarks/cpu30_recipe_steps.md
    # gives what each change bought in 6-epoch runs back to back. Not compiled: in this recipe's two processes
    # torch.compile made the steps 10% slower and spent 66 s compiling (results/benchmarks/cpu30_compile.md), though
    # one process's step at batch 100 ran 6% faster (results/benchmarks/training_roofline_compiled.md).
    "cpu-30min": TrainConfig(
        name="cpu-30min", sa=replace(_QUICK_SA, dropout=0.0), resnet=ResNetConfig(width=16), epochs=22,
        batch_size=100, lr=0.1, label_smoothing=0.1, flip_test=True,
        test_images=2_000, eval_batch_size=500, snapshots_per_epoch=2, device="cpu", precision="bf16", threads=1),
    # The paper's model on one large GPU, as many epochs as fit in about ten minutes (bf16, compiled).
    "gpu-10min": TrainConfig(
        name="gpu-10min", sa=_PAPER_SA, epochs=40, batch_size=256, lr=0.15, eval_batch_size=1000,
        compile=True, snapshots_per_epoch=2, time_limit=600.0),
    # The paper's full recipe: 300 epochs, SGD 0.1 / 0.9 / 1e-4, batch 100, cosine with 5% warm-up.
    "paper": TrainConfig(name="paper", sa=_PAPER_SA, epochs=300, batch_size=100, lr=0.1),
}


def named_config(name: str, model: str | None = None) -> TrainConfig:
    """A copy of the named config, training ``model`` (default: the config's own)."""
    config = named_copy(VISION_CONFIGS, name)
    return config if model is None else replace(config, model=model)
