"""Chapter 02's explorable, ``ch02-attention``: where one content-based head looks from a query pixel.

The reader taps a query pixel on a CIFAR-10 image (folded 2 x 2 into a 16 x 16 grid of 12-channel tokens), picks a
head and a temperature, and sees that head's attention over the image, coloured from 0 to its peak (or over three
decades, on a log scale) so that a nearly uniform map still shows its pattern.

``compute(inputs)`` in the page:

- inputs: ``image`` ``(32, 32, 3)`` in [0, 1]; ``wq``, ``wk`` ``(12, 12)`` and ``bq``, ``bk`` ``(12,)``, the query
  and key projections as ``nn.Linear`` stores them (weight ``(out, in)``); ``head`` h (0-based); ``temperature``
  τ > 0; ``query`` ``[row, col]`` on the token grid.
- outputs: ``attention`` ``(16, 16)``, head h's softmax over keys j of q_i · k_j / (√D_h τ) for the query i;
  ``heads`` ``(N_h, 16, 16)``, every head's map; ``tokens`` ``(256, 12)``, the space-to-depth tokens.

Odd input (τ zero, negative, NaN or so small that the logits overflow; a pixel outside [0, 1]; a query off the
grid; a head that does not exist; non-finite weights) is refused with a message (a ``RangeError``), never turned
into NaN. In the page τ and the query can also be typed; a value they cannot take (τ outside 0.001 to 1000, a
query off the 16 x 16 grid, an empty field) shows a message next to the field, and the page computes nothing, its
numbers reading "not computed", until the field holds a value it can take (or the slider or a tap replaces it): it
never goes on with a value the field no longer shows.

:func:`reference` computes the same outputs with :class:`attnconv.attention.MultiHeadSelfAttention`.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np
import torch

from ..attention import MultiHeadSelfAttention
from ..tokens import space_to_depth
from . import Explorable, b64

__all__ = ["attention_explorable", "chapter_layer", "colour_images", "reference"]

TEST_IMAGES = (3, 3000, 7000, 8000)


def colour_images(indices: Sequence[int] = TEST_IMAGES) -> list[dict[str, Any]]:
    """``[{"label", "index", "pixels" (32, 32, 3) uint8, "real"}]``: CIFAR-10 test images, or generated stand-ins."""
    from ..data.cifar10 import test_image

    out = []
    for i, index in enumerate(indices):
        ex = test_image(index)
        real = ex.source.startswith("CIFAR-10")
        label = f"test image {index}: {ex.label}" if real else f"generated image {i + 1} (no CIFAR-10 copy)"
        out.append({"label": label, "index": int(index), "pixels": ex.pixels.numpy().astype(np.uint8), "real": real,
                    "book": ex.book})
    return out


def chapter_layer(seed: int = 0, sharpen: float = 60.0) -> MultiHeadSelfAttention:
    """An untrained 4-head layer over 12-channel tokens, its queries scaled by ``sharpen`` (chapter 02's layer)."""
    torch.manual_seed(seed)
    layer = MultiHeadSelfAttention(embed_dim=12, num_heads=4).double()
    with torch.no_grad():
        layer.q_proj.weight.mul_(sharpen)
    return layer


def attention_explorable(layer: MultiHeadSelfAttention | None = None,
                         indices: Sequence[int] = TEST_IMAGES) -> Explorable:
    """The explorable of chapter 02 (see the module docstring): ``layer``'s query and key projections
    (default :func:`chapter_layer`) on CIFAR-10 test images ``indices`` (class order)."""
    layer = chapter_layer() if layer is None else layer
    if not isinstance(layer, MultiHeadSelfAttention) or layer.embed_dim != 12 or layer.q_proj is None \
            or layer.k_proj is None or layer.head_dim * layer.num_heads != 12 or layer.q_proj.bias is None:
        raise ValueError("layer must be a MultiHeadSelfAttention over 12-channel tokens with a content term, "
                         "biases and num_heads * head_dim = 12")
    images = colour_images(indices)
    real = all(im["real"] for im in images)
    w = {name: getattr(getattr(layer, f"{p}_proj"), part).detach().double().tolist()
         for name, p, part in (("wq", "q", "weight"), ("bq", "q", "bias"), ("wk", "k", "weight"), ("bk", "k", "bias"))}
    data = {"size": 32, "block": 2, "num_heads": layer.num_heads, **w,
            "images": [{"label": im["label"], "pixels": b64(im["pixels"], "uint8")} for im in images]}
    note = ("CIFAR-10 test images; an untrained layer; computed in this page" if real else
            "generated images (no CIFAR-10 copy was found when this page was built); computed in this page")
    return Explorable("ch02-attention", "explore_attention.js", data,
                      "Where one head looks: tap a query pixel", note)


def reference(inputs: dict[str, Any], num_heads: int = 4) -> dict[str, Any]:
    """The outputs of the page's ``compute`` for the same ``inputs`` (a layer of ``num_heads`` heads), with
    ``attnconv`` in float64."""
    layer = MultiHeadSelfAttention(embed_dim=12, num_heads=num_heads).double()
    with torch.no_grad():
        for p in ("q", "k"):
            getattr(layer, f"{p}_proj").weight.copy_(torch.tensor(inputs[f"w{p}"], dtype=torch.float64))
            getattr(layer, f"{p}_proj").bias.copy_(torch.tensor(inputs[f"b{p}"], dtype=torch.float64))
        image = torch.tensor(np.asarray(inputs["image"], dtype=np.float64))
        tokens = space_to_depth(image[None], 2)  # (1, 16, 16, 12)
        grid = tuple(tokens.shape[1:3])
        q, k, _ = layer.project(tokens.reshape(1, -1, 12))
        probs = torch.softmax(layer.logits(grid, q, k) / float(inputs["temperature"]), dim=-1)  # (1, N_h, N, N)
    r, c = (int(v) for v in inputs["query"])
    heads = probs[0, :, r * grid[1] + c].reshape(-1, *grid)
    return {"attention": heads[int(inputs["head"])].numpy(), "heads": heads.numpy(),
            "tokens": tokens.reshape(-1, 12).numpy()}
