"""A small CIFAR-10 CNN that trains in well under a minute on a CPU, for the conversion experiment.

The network folds 2 x 2 pixel patches into channels (as Cordonnier et al. do for their attention models),
then applies two 3 x 3 convolutions with ReLU and pooling, global average pooling and a linear classifier.
Every learned spatial operation is an ``nn.Conv2d``, so :func:`~attnconv.construct.network.convert_convolutions`
turns all of them into attention.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from .._checks import positive_int
from ..tokens import space_to_depth

__all__ = ["SmallCNN", "check_images", "fit", "predict_logits", "synthetic_images"]


def check_images(images: object) -> None:
    """Raise unless ``images`` is a channels-last ``(B, H, W, 3)`` tensor of pixel values 0..255 with even H, W."""
    if not isinstance(images, Tensor):
        raise TypeError(f"images must be a torch.Tensor (B, H, W, 3), got {type(images).__name__}: use "
                        "torch.as_tensor(images)")
    if images.dtype == torch.bool or images.is_complex():
        raise TypeError(f"images must hold pixel values 0..255 (uint8 or float), got {images.dtype}")
    if images.dim() == 4 and images.shape[1] == 3 and images.shape[-1] != 3:
        raise ValueError(f"images must be channels-last (B, H, W, 3), got channels-first shape "
                         f"{tuple(images.shape)}: use images.permute(0, 2, 3, 1)")
    if images.dim() != 4 or images.shape[-1] != 3 or images.shape[1] % 2 or images.shape[2] % 2:
        raise ValueError(f"images must be (B, H, W, 3) with even H and W, got shape {tuple(images.shape)}")


class SmallCNN(nn.Module):
    """``(B, 32, 32, 3)`` uint8 images -> ``(B, 10)`` logits.

    Layers: normalise, 2x2 space-to-depth (16 x 16 x 12), conv 3x3 12 -> ``width``, ReLU, max-pool (8 x 8),
    conv 3x3 ``width`` -> 2 ``width``, ReLU, global mean, linear to ``num_classes``.
    """

    def __init__(self, width: int = 24, num_classes: int = 10, mean: Tensor | None = None, std: Tensor | None = None):
        super().__init__()
        positive_int("width", width)
        positive_int("num_classes", num_classes)
        self.register_buffer("mean", torch.full((3,), 0.5) if mean is None else mean.float())
        self.register_buffer("std", torch.full((3,), 0.25) if std is None else std.float())
        self.conv1 = nn.Conv2d(12, width, 3, padding=1)
        self.conv2 = nn.Conv2d(width, 2 * width, 3, padding=1)
        self.head = nn.Linear(2 * width, num_classes)

    def forward(self, images: Tensor) -> Tensor:
        check_images(images)
        x = (images.to(self.head.weight.dtype) / 255 - self.mean) / self.std  # (B, 32, 32, 3), the model's dtype
        x = space_to_depth(x, 2).permute(0, 3, 1, 2)  # (B, 12, 16, 16)
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)  # (B, width, 8, 8)
        x = F.relu(self.conv2(x))  # (B, 2 width, 8, 8)
        return self.head(x.mean(dim=(2, 3)))


def fit(model: nn.Module, images: Tensor, labels: Tensor, epochs: int = 2, batch_size: int = 128,
        lr: float = 3e-3, seed: int = 0) -> list[float]:
    """Train with Adam and a cosine learning rate; returns the mean training loss of each epoch."""
    generator = torch.Generator().manual_seed(seed)
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    steps = epochs * math.ceil(len(images) / batch_size)
    schedule = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, steps)
    model.train()
    losses = []
    for _ in range(epochs):
        order, total = torch.randperm(len(images), generator=generator), 0.0
        for start in range(0, len(images), batch_size):
            idx = order[start:start + batch_size]
            loss = F.cross_entropy(model(images[idx]), labels[idx])
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            schedule.step()
            total += loss.item() * len(idx)
        losses.append(total / len(images))
    model.eval()
    return losses


@torch.no_grad()
def predict_logits(model: nn.Module, images: Tensor, batch_size: int = 500) -> Tensor:
    """Logits ``(N, num_classes)`` in evaluation mode, batch by batch."""
    model.eval()
    return torch.cat([model(images[i:i + batch_size]) for i in range(0, len(images), batch_size)])


def synthetic_images(n: int, seed: int = 0) -> tuple[Tensor, Tensor]:
    """A learnable stand-in for CIFAR-10 when no data is available: ``(n, 32, 32, 3)`` uint8 and labels.

    Class c is a sinusoidal grating with orientation 18c degrees and a class-dependent colour, with random
    phase, frequency jitter and noise.
    """
    g = torch.Generator().manual_seed(seed)
    labels = torch.randint(0, 10, (n,), generator=g)
    yy, xx = torch.meshgrid(torch.arange(32.0), torch.arange(32.0), indexing="ij")
    angle = labels.float() * math.pi / 10
    freq = 0.35 + 0.1 * torch.rand(n, generator=g)
    phase = 2 * math.pi * torch.rand(n, generator=g)
    wave = torch.sin(freq[:, None, None] * (xx * torch.cos(angle)[:, None, None] + yy * torch.sin(angle)[:, None, None])
                     + phase[:, None, None])  # (n, 32, 32)
    colour = torch.stack([torch.cos(angle), torch.sin(angle), torch.cos(2 * angle)], dim=-1)  # (n, 3)
    img = 0.5 + 0.3 * wave[..., None] * colour[:, None, None, :] + 0.08 * torch.randn(n, 32, 32, 3, generator=g)
    return (img.clamp(0, 1) * 255).round().to(torch.uint8), labels
