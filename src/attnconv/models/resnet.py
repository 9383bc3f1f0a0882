"""ResNet18 for 32x32 images (He et al. 2016), the convolutional baseline of Cordonnier et al.'s CIFAR-10 table.

The CIFAR variant keeps the full resolution at the start: one 3x3 convolution (no 7x7 stem, no max-pool),
then four stages of two basic residual blocks with ``width``, 2, 4 and 8 times ``width`` channels, the last
three starting with a stride-2 block, then global average pooling and a linear classifier. With
``width = 64`` it has 11.2M parameters.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor, nn

from .._checks import InputDtypeError, floating_input, positive_int

__all__ = ["BasicBlock", "ResNet", "ResNetConfig"]


@dataclass
class ResNetConfig:
    """Sizes of :class:`ResNet`; the defaults are ResNet18 for CIFAR-10.

    Attributes:
        width: channels of the first stage (64 in ResNet18); stage s has ``width * 2**s``.
        blocks: basic blocks per stage ((2, 2, 2, 2) in ResNet18).
        in_channels: channels of the input images.
        num_classes: outputs of the classifier.
    """

    width: int = 64
    blocks: tuple[int, ...] = (2, 2, 2, 2)
    in_channels: int = 3
    num_classes: int = 10

    def __post_init__(self) -> None:
        self.blocks = tuple(self.blocks)
        for name in ("width", "in_channels", "num_classes"):
            positive_int(name, getattr(self, name))
        if not self.blocks:
            raise ValueError("blocks must be a non-empty sequence of positive integers, got ()")
        for b in self.blocks:
            positive_int("every entry of blocks", b)


class BasicBlock(nn.Module):
    """Two 3x3 conv-BN layers with a residual connection; a 1x1 strided projection when the shape changes."""

    def __init__(self, in_channels: int, out_channels: int, stride: int = 1) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(in_channels, out_channels, 3, stride=stride, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(out_channels)
        self.conv2 = nn.Conv2d(out_channels, out_channels, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(out_channels)
        self.shortcut = nn.Identity()
        if stride != 1 or in_channels != out_channels:
            self.shortcut = nn.Sequential(nn.Conv2d(in_channels, out_channels, 1, stride=stride, bias=False),
                                          nn.BatchNorm2d(out_channels))
        self.relu = nn.ReLU(inplace=True)

    def forward(self, x: Tensor) -> Tensor:
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return self.relu(out + self.shortcut(x))


class ResNet(nn.Module):
    """CIFAR ResNet. Input: normalised images ``(B, H, W, C)``, channels last like the attention models.
    Output: logits ``(B, num_classes)``.
    """

    def __init__(self, config: ResNetConfig) -> None:
        super().__init__()
        self.config = config
        w = config.width
        self.stem = nn.Sequential(nn.Conv2d(config.in_channels, w, 3, padding=1, bias=False), nn.BatchNorm2d(w),
                                  nn.ReLU(inplace=True))
        stages, channels = [], w
        for s, n in enumerate(config.blocks):
            out = w * 2**s
            stride = 1 if s == 0 else 2
            stages += [BasicBlock(channels, out, stride)] + [BasicBlock(out, out) for _ in range(n - 1)]
            channels = out
        self.stages = nn.Sequential(*stages)
        self.head = nn.Linear(channels, config.num_classes)

    def forward(self, images: Tensor) -> Tensor:
        """Logits ``(B, num_classes)`` of normalised images ``(B, H, W, C)`` in the model's dtype.

        The model reads normalised values, ``(x / 255 - mean) / std`` per channel for 8-bit pixels ``x``, which is
        what ``attnconv.data.normalize`` returns (float32, CIFAR-10's mean and std); uint8 pixels are refused
        rather than converted, since a plain cast would feed it values 255 times too large.

        Raises:
            ValueError: ``images`` is not ``(B, H, W, C)``, or (``InputDtypeError`` of ``attnconv._checks``, also a
                ``TypeError``) not of the parameters' floating dtype, for example uint8 pixels or float16 images
                for a float32 model (the message names the dtype expected); under autocast any floating dtype
                that autocast casts (float64 is not one: refused unless the parameters are float64).
        """
        if not isinstance(images, Tensor):
            raise TypeError(f"images must be a torch.Tensor (B, H, W, {self.config.in_channels}), got "
                            f"{type(images).__name__}")
        if images.dim() != 4 or images.shape[-1] != self.config.in_channels:
            raise ValueError(f"images must be (B, H, W, {self.config.in_channels}), got shape {tuple(images.shape)}")
        dtype = self.head.weight.dtype
        if images.dtype == torch.uint8:
            raise InputDtypeError(f"images must be normalised images of the model's dtype {dtype}, got torch.uint8 "
                                  f"pixels: the model reads (x / 255 - mean) / std per channel, which "
                                  f"attnconv.data.normalize(images) returns in torch.float32")
        if images.dtype == torch.float64 != dtype and torch.is_autocast_enabled(images.device.type):
            raise InputDtypeError(f"images has dtype torch.float64, which autocast does not cast, but the model's "
                                  f"parameters are {dtype}: convert them, images.to({dtype})")
        floating_input("images", images, dtype)  # before conv2d's "expected scalar type"
        x = images.permute(0, 3, 1, 2)  # (B, C, H, W), a channels-last view: no copy
        x = self.stages(self.stem(x))  # (B, 8w, H/8, W/8)
        return self.head(x.mean(dim=(2, 3)))
