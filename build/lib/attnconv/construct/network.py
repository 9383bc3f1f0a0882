"""Convert every convolution inside a network into the equivalent attention layer."""

from __future__ import annotations

import copy

from torch import nn

from .image import conv_to_mhsa

__all__ = ["convert_convolutions"]


def convert_convolutions(model: nn.Module, alpha: float | None = None, head_dim: int | str | None = "min") -> nn.Module:
    """A copy of ``model`` in which every ``nn.Conv1d`` / ``nn.Conv2d`` is replaced by its attention layer.

    Each convolution becomes :func:`~attnconv.construct.image.conv_to_mhsa` of it.

    Args:
        model: any module; it is not modified.
        alpha: passed to :func:`~attnconv.construct.image.conv_to_mhsa` (``None``: exact hard attention).
        head_dim: ``"min"`` uses D_h = min(D_in, D_out) per layer, the smallest dimension that expresses every
            convolution (Theorem 1); an int or ``None`` is passed on unchanged.

    Returns:
        The converted copy, in evaluation mode if ``model`` was.
    """
    if head_dim is not None and head_dim != "min" and not isinstance(head_dim, int):
        raise ValueError(f"head_dim must be 'min', an int or None, got {head_dim!r}")
    converted = copy.deepcopy(model)
    for name, child in list(converted.named_modules()):
        if isinstance(child, (nn.Conv1d, nn.Conv2d)):
            dim = min(child.in_channels, child.out_channels) if head_dim == "min" else head_dim
            parent = converted.get_submodule(name.rpartition(".")[0]) if "." in name else converted
            setattr(parent, name.rpartition(".")[2], conv_to_mhsa(child, alpha=alpha, head_dim=dim))
    return converted.train(model.training)
