"""Parameter counts and forward FLOPs of the vision models, counted by running them once.

FLOPs count 2 per multiply-add, for one image's forward pass. Two totals are reported:

- ``flops``: every matrix product and convolution PyTorch executes (``torch.utils.flop_counter``), including the
  attention products A V and Q Kᵀ;
- ``weight_flops``: only the products with weights (``nn.Linear``, ``nn.Conv2d``). This is 2 x parameters x
  tokens for a transformer, the convention behind the paper's 6.2 GFLOPs for its 12.1M-parameter model.

Elementwise work (softmax, normalisation, activations) is not counted by either.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import nn
from torch.utils.flop_counter import FlopCounterMode, sdpa_flop_count

__all__ = ["ModelCost", "count_parameters", "model_cost"]


@dataclass(frozen=True)
class ModelCost:
    """Size and forward cost of a model, per image.

    Attributes:
        params: trainable parameters.
        flops: forward FLOPs of all matrix products and convolutions.
        weight_flops: the part of ``flops`` spent in ``nn.Linear`` and ``nn.Conv2d`` layers.
    """

    params: int
    flops: int
    weight_flops: int

    @property
    def attention_flops(self) -> int:
        """FLOPs of products between activations (attention's Q Kᵀ and A V, positional scores)."""
        return self.flops - self.weight_flops

    def as_dict(self) -> dict[str, int]:
        return {"params": self.params, "flops": self.flops, "weight_flops": self.weight_flops,
                "attention_flops": self.attention_flops}


def count_parameters(model: nn.Module) -> int:
    """Number of trainable parameters."""
    return sum(p.numel() for p in model.parameters() if p.requires_grad)


def _sdpa_flops(query_shape, key_shape, value_shape, *args, out_shape=None, **kwargs) -> int:
    return sdpa_flop_count(query_shape, key_shape, value_shape)


# The CPU kernel of scaled_dot_product_attention, which torch's own table does not list.
_EXTRA_FORMULAS = {torch.ops.aten._scaled_dot_product_flash_attention_for_cpu: _sdpa_flops}


def _weight_flops_hook(totals: list[int]):
    def hook(module: nn.Module, inputs: tuple, output: torch.Tensor) -> None:
        if isinstance(module, nn.Linear):
            totals[0] += 2 * output.numel() * module.in_features
        else:  # Conv2d: every output value is a dot product over (C_in / groups) x K_h x K_w inputs
            totals[0] += 2 * output.numel() * (module.in_channels // module.groups) * math.prod(module.kernel_size)
    return hook


@torch.no_grad()
def model_cost(model: nn.Module, image_size: int = 32, in_channels: int = 3) -> ModelCost:
    """Count ``model``'s parameters and run one ``(1, image_size, image_size, in_channels)`` image through it.

    The model is run in eval mode on its own device and dtype, and left in the mode it was in.
    """
    param = next(model.parameters())
    x = torch.zeros(1, image_size, image_size, in_channels, device=param.device, dtype=param.dtype)
    totals = [0]
    hooks = [m.register_forward_hook(_weight_flops_hook(totals)) for m in model.modules()
             if isinstance(m, (nn.Linear, nn.Conv2d))]
    was_training = model.training
    model.eval()
    try:
        with FlopCounterMode(display=False, custom_mapping=_EXTRA_FORMULAS) as counter:
            model(x)
    finally:
        model.train(was_training)
        for h in hooks:
            h.remove()
    return ModelCost(count_parameters(model), int(counter.get_total_flops()), totals[0])
