"""Chapter 06's explorable, ``ch06-model``: the attention-only classifier runs in the page.

The page holds a :class:`~attnconv.models.vision.SelfAttentionNet` with quadratic attention as int8 weights
(:mod:`attnconv.explorables.weights`) and ten CIFAR-10 test images. The reader picks an image or draws on it, and
taps a token; the page runs the network and shows the predicted class and every layer's heads' attention of that
token. The attention of a quadratic head depends on positions only, so it is the same for every image; the class
is not.

``compute(inputs)`` in the page:

- inputs: ``image`` ``(32, 32, 3)`` pixel values 0..255; ``query`` ``[row, col]`` on the 16 x 16 token grid.
- outputs: ``logits`` and ``probs`` ``(10,)``; ``predicted``, the class index; ``attention`` ``(L, N_h, 16, 16)``,
  head h of layer l's attention from the query token.

Odd input (a pixel that is not a whole number from 0 to 255, such as 1e200 or NaN; a query off the grid) is
refused with a message (a ``RangeError``). In the page the network runs in slices of a few milliseconds, one per
animation frame, so that the page answers its reader between them however long a pass takes: a stroke of
hundreds of moves paints at once, and when a run ends on an image the pen has since changed, the next run takes
the latest image ("computing…" shows meanwhile). It does not run at all when only the query moves. The query can
also be typed: a value off the grid is refused with a message next to it, and the page computes nothing, its
numbers reading "not computed", until the field holds a token of the grid (or a tap picks one).

:func:`reference` computes the same outputs with PyTorch on the model that
:func:`~attnconv.explorables.weights.load_weights` rebuilds from the same weights.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Sequence

import numpy as np
import torch

from ..data.augment import CIFAR10_MEAN, CIFAR10_STD, normalize
from ..data.cifar10_files import CIFAR10_CLASSES
from . import Explorable, b64
from .weights import export_weights, load_weights

__all__ = ["TEST_IMAGES", "embedded_images", "page_weights", "reference", "vision_explorable"]

TEST_IMAGES = tuple(1000 * c + 10 for c in range(10))  # one test image of each class (class order)


def embedded_images(indices: Sequence[int] = TEST_IMAGES) -> list[dict[str, Any]]:
    """``[{"label", "index", "pixels" (32, 32, 3) uint8, "real"}]``: CIFAR-10 test images, or generated stand-ins."""
    from .attention_map import colour_images

    return colour_images(indices)


def page_weights(path: str | os.PathLike, fallback: torch.nn.Module | None = None,
                 fallback_label: str = "") -> tuple[dict[str, Any], str]:
    """The weights a chapter shows and what to call them: the committed record at ``path`` when it exists (its
    ``source`` says which run and epoch), else ``fallback`` exported now, called ``fallback_label``."""
    path = Path(path)
    if path.is_file():
        weights = json.loads(path.read_text(encoding="utf-8"))
        return weights, weights["source"]
    if fallback is None:
        raise FileNotFoundError(f"no weights at {path} and no fallback model")
    return export_weights(fallback, fallback_label), fallback_label


def vision_explorable(weights: dict[str, Any], label: str, indices: Sequence[int] = TEST_IMAGES) -> Explorable:
    """The explorable of chapter 06 (see the module docstring).

    Args:
        weights: a record of :func:`~attnconv.explorables.weights.export_weights`.
        label: what the page says the weights are (a trained run and its epoch, or the smoke model).
        indices: CIFAR-10 test images (class order) to embed.
    """
    load_weights(weights)  # refuses a record the page could not run
    images = embedded_images(indices)
    real = all(im["real"] for im in images)
    note = f"weights: {label}; " + ("ten CIFAR-10 test images" if real else
                                    "generated images (no CIFAR-10 copy was found when this page was built)")
    data = {"weights": weights, "classes": list(CIFAR10_CLASSES), "mean": list(CIFAR10_MEAN), "std": list(CIFAR10_STD),
            "images": [{"label": im["label"], "pixels": b64(im["pixels"], "uint8")} for im in images]}
    return Explorable("ch06-model", "explore_model.js", data, "The trained attention network, running in this page",
                      note + "; computed in this page")


def reference(inputs: dict[str, Any], weights: dict[str, Any] | torch.nn.Module) -> dict[str, Any]:
    """The outputs of the page's ``compute`` for the same ``inputs``, with PyTorch in float64 (``weights``: a record
    of :func:`~attnconv.explorables.weights.export_weights`, or a model already loaded from one)."""
    model = weights if isinstance(weights, torch.nn.Module) else load_weights(weights)
    pixels = torch.tensor(np.asarray(inputs["image"], dtype=np.uint8))[None]  # (1, 32, 32, 3)
    x = normalize(pixels).double()
    with torch.no_grad():
        logits = model(x)[0]
        probs = model.attention_probs(x)  # L x (1, N_h, N, N)
    g = model.config.grid
    r, c = (int(v) for v in inputs["query"])
    attention = np.stack([p[0, :, r * g[1] + c].reshape(-1, *g).numpy() for p in probs])
    return {"logits": logits.numpy(), "probs": torch.softmax(logits, -1).numpy(),
            "predicted": int(logits.argmax()), "attention": attention}
