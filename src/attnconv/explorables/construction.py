"""Chapter 03's explorable, ``ch03-construction``: build a 3 x 3 convolution out of nine attention heads.

The reader picks an image and a kernel (a preset, or cells they type), moves α, clicks a query pixel and drags a
head's centre. The page computes, live, the convolution, the MHSA layer of Theorem 1
(:func:`~attnconv.construct.image.conv_to_mhsa`: one quadratic head per tap, on the zero-padded image) and the
largest difference, absolute and relative to the range of the convolution's output (the number its verdict reads).

``compute(inputs)`` in the page:

- inputs: ``image`` ``(H, W)`` grey levels in [0, 1]; ``kernel`` ``(3, 3)`` weights w; ``alpha`` α > 0, the
  same for every head; ``centers`` ``(9, 2)`` the centre Δ^(h) of head h (on its tap, (a - 1, b - 1) for tap
  h = 3a + b, unless the reader dragged it); ``query`` ``[row, col]``.
- outputs: ``conv`` ``(H, W)``, the convolution with zero padding 1; ``mhsa`` ``(H, W)``, the attention layer's
  output; ``difference`` ``(H, W)`` = mhsa - conv; ``max_difference``, its largest absolute value;
  ``relative_difference``, ``max_difference`` over the range max - min of ``conv`` (at least 1e-12), which the page's
  verdict reads (below 1e-3: the heads build the convolution; below 0.05: close);
  ``attention`` ``(9, H + 2, W + 2)``, every head's attention of the query over the zero-padded canvas (the query
  sits at canvas position query + 1).

Odd input (α zero, negative or NaN; a non-finite kernel weight, centre or grey level; a grey level outside
[0, 1]; a query off the image; inputs that overflow) is refused with a message (a ``RangeError``), never turned
into NaN. In the page α, each kernel weight and the query can be typed; a value they cannot take (α outside the
slider's 0.1 to 100, a weight outside -1000 to 1000 or too large to be a float64, such as 1e400, an empty field, a
query off the 32 x 32 image) shows a message next to the field, and the page computes nothing, its numbers reading
"not computed", until the field holds a value it can take again (or a preset, the slider or a tap replaces it): it
never goes on computing with a value the field no longer shows.

:func:`reference` computes the same outputs with the library.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np
import torch
from torch import nn

from ..construct.image import conv_to_mhsa
from . import Explorable, b64

__all__ = ["PRESETS", "construction_explorable", "grey_images", "reference"]

PRESETS = {
    "identity": [[0, 0, 0], [0, 1, 0], [0, 0, 0]],
    "box blur": [[1 / 9] * 3] * 3,
    "edge": [[-1, -1, -1], [-1, 8, -1], [-1, -1, -1]],
    "sharpen": [[0, -1, 0], [-1, 5, -1], [0, -1, 0]],
}
TEST_IMAGES = (0, 3000, 7000, 8000)  # CIFAR-10 test images in class order: an airplane, a cat, a horse, a ship


def grey_images(indices: Sequence[int] = TEST_IMAGES) -> list[dict[str, Any]]:
    """Small test images as grey levels: ``[{"label", "pixels" (32, 32) uint8, "real"}]``.

    Real CIFAR-10 test images when a local copy exists; otherwise generated stand-ins, labelled as such.
    """
    from ..data.cifar10 import test_image

    out = []
    for i, index in enumerate(indices):
        ex = test_image(index)
        rgb = ex.pixels.numpy().astype(np.float64)
        grey = np.round(rgb @ np.array([0.299, 0.587, 0.114])).clip(0, 255).astype(np.uint8)  # (32, 32)
        real = ex.source.startswith("CIFAR-10")
        label = f"test image {index}: {ex.label}" if real else f"generated image {i + 1} (no CIFAR-10 copy)"
        out.append({"label": label, "pixels": grey, "real": real, "book": ex.book})
    return out


def construction_explorable(alpha: float = 1.0, start: str = "edge",
                            indices: Sequence[int] = TEST_IMAGES) -> Explorable:
    """The explorable of chapter 03 (see the module docstring for what its ``compute`` takes and returns).

    Args:
        alpha: the α it starts at (the slider spans 0.1 to 100).
        start: the preset kernel it starts with, one of ``PRESETS`` (identity, box blur, edge, sharpen).
        indices: CIFAR-10 test images (class order) to embed.
    """
    if start not in PRESETS:
        raise ValueError(f"start must be one of {list(PRESETS)}, got {start!r}")
    if not (isinstance(alpha, (int, float)) and 0.1 <= alpha <= 100):
        raise ValueError(f"alpha must be a number in [0.1, 100], got {alpha!r}")
    images = grey_images(indices)
    real = all(im["real"] for im in images)
    data = {"size": 32, "alpha": float(alpha), "start": list(PRESETS).index(start),
            "presets": [{"name": k, "kernel": [[float(v) for v in row] for row in w]} for k, w in PRESETS.items()],
            "images": [{"label": im["label"], "pixels": b64(im["pixels"], "uint8")} for im in images]}
    note = ("CIFAR-10 test images, in grey; computed in this page" if real else
            "generated images (no CIFAR-10 copy was found when this page was built); computed in this page")
    return Explorable("ch03-construction", "explore_construction.js", data,
                      "Build a convolution from attention: nine heads, one per tap", note)


def reference(inputs: dict[str, Any]) -> dict[str, Any]:
    """The outputs of the page's ``compute`` for the same ``inputs``, with ``attnconv`` in float64."""
    image = torch.as_tensor(np.asarray(inputs["image"], dtype=np.float64))  # (H, W)
    kernel = torch.as_tensor(np.asarray(inputs["kernel"], dtype=np.float64))  # (3, 3)
    conv = nn.Conv2d(1, 1, 3, padding=1, bias=False).double()
    with torch.no_grad():
        conv.weight.copy_(kernel[None, None])
    layer = conv_to_mhsa(conv, alpha=float(inputs["alpha"]))
    with torch.no_grad():
        layer.attention.positional.centers.copy_(torch.as_tensor(np.asarray(inputs["centers"], dtype=np.float64)))
        expected = conv(image[None, None])[0, 0]
        out, probs = layer(image[None, None], need_weights=True)  # probs (1, 9, (H+2)(W+2), (H+2)(W+2))
    h, w = image.shape
    r, c = (int(v) + 1 for v in inputs["query"])
    maps = probs[0, :, r * (w + 2) + c].reshape(9, h + 2, w + 2)
    diff = out[0, 0] - expected
    worst = float(diff.abs().max())
    spread = max(float(expected.max() - expected.min()), 1e-12)
    return {"conv": expected.numpy(), "mhsa": out[0, 0].numpy(), "difference": diff.numpy(),
            "attention": maps.numpy(), "max_difference": worst, "relative_difference": worst / spread}
