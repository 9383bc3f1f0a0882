"""A trained vision model's weights in a compact file the page can run: int8 matrices with one scale per row.

Every matrix of a :class:`~attnconv.models.vision.SelfAttentionNet` with quadratic attention (the linear maps) is
stored as int8, row r scaled by s_r = max_c abs(W_rc) / 127, so that W_rc ≈ s_r q_rc; everything else (biases,
layer norms, the heads' centres Δ^(h) and log α^(h)) stays float32. The cpu-long model's 114k parameters take
168 KB as a JSON file (base64 inside), where float32 would take 455 KB before base64.

The file is JSON: ``{"format", "config", "source", "tensors": [{"name", "shape", "kind", "offset"}], "int8",
"float32"}``, the last two base64 (little-endian). :func:`load_weights` rebuilds the model with the weights the
page uses, so that the page can be compared with PyTorch on the very same numbers.

Command line: ``python -m attnconv.explorables.weights CHECKPOINT OUT.json`` (a checkpoint of
``python -m attnconv.train vision``).
"""

from __future__ import annotations

import argparse
import base64
import json
import os
from pathlib import Path
from typing import Any

import numpy as np
import torch

from ..models.vision import SelfAttentionNet, VisionConfig

__all__ = ["FORMAT", "export_weights", "load_weights", "read_checkpoint", "write_weights"]

FORMAT = "attnconv-int8-rows-1"


def read_checkpoint(path: str | os.PathLike) -> tuple[SelfAttentionNet, dict[str, Any]]:
    """The model of a training checkpoint and where it comes from: ``(model, {"epoch", "epochs", "config"})``."""
    from ..train.checkpoint import load_checkpoint
    from ..train.runs import config_from_dict
    from ..train.vision_config import TrainConfig

    state = load_checkpoint(path, required=("config", "model", "epoch"))
    train = config_from_dict(TrainConfig, state["config"])
    if train.model != "sa-quadratic":
        raise ValueError(f"checkpoint {path}: the page runs quadratic attention only, this is {train.model!r}")
    model = SelfAttentionNet(train.sa)
    model.load_state_dict(state["model"])
    return model.eval(), {"epoch": int(state["epoch"]), "epochs": train.epochs, "config": train.name}


def _check(model: SelfAttentionNet) -> None:
    if not isinstance(model, SelfAttentionNet):
        raise TypeError(f"model must be a SelfAttentionNet, got {type(model).__name__}")
    c = model.config
    if c.attention != "quadratic" or not c.shared_values or c.in_channels != 3:
        raise ValueError("the page runs SelfAttentionNet with attention='quadratic', shared_values=True and RGB "
                         f"input; got attention={c.attention!r}, shared_values={c.shared_values}, "
                         f"in_channels={c.in_channels}")


def export_weights(model: SelfAttentionNet, source: str = "", check_images: Any = None,
                   check_indices: Any = None) -> dict[str, Any]:
    """The compact weights of ``model`` (see the module docstring); ``source`` says where they come from.

    ``check_images`` ``(B, 32, 32, 3)`` uint8 (optional, with their CIFAR-10 test indices ``check_indices``): the
    record keeps the classes that ``model`` itself, before rounding to int8, predicts for them, so that the page
    can be checked against the original model, not only against its int8 copy.
    """
    _check(model)
    checks = None
    if check_images is not None:
        from ..data.augment import normalize

        pixels = torch.as_tensor(np.asarray(check_images, dtype=np.uint8))
        with torch.no_grad():
            logits = model.eval()(normalize(pixels).to(next(model.parameters()).dtype))
        checks = {"indices": [int(i) for i in check_indices] if check_indices is not None else None,
                  "predicted": logits.argmax(-1).tolist()}
    int8, floats, tensors = [], [], []
    n_int, n_float = 0, 0
    for name, t in model.state_dict().items():
        a = t.detach().double().cpu().numpy()
        if a.ndim == 2 and "positional" not in name:  # a linear map (out, in): int8 rows and a scale per row
            scale = np.abs(a).max(axis=1) / 127
            scale = np.where(scale > 0, scale, 1.0).astype(np.float32)
            q = np.round(a / scale[:, None].astype(np.float64)).clip(-127, 127).astype(np.int8)
            tensors.append({"name": name, "shape": list(a.shape), "kind": "int8", "offset": n_int,
                            "scale_offset": n_float})
            int8.append(q.ravel())
            floats.append(scale)
            n_int += q.size
            n_float += scale.size
        else:
            tensors.append({"name": name, "shape": list(a.shape), "kind": "float32", "offset": n_float})
            floats.append(a.astype(np.float32).ravel())
            n_float += a.size
    c = model.config
    config = {k: getattr(c, k) for k in ("image_size", "block", "hidden_dim", "depth", "num_heads", "head_dim",
                                         "mlp_dim", "num_classes")}
    return {"format": FORMAT, "config": config, "source": source, "checks": checks, "tensors": tensors,
            "int8": base64.b64encode(np.concatenate(int8).astype("<i1").tobytes()).decode("ascii"),
            "float32": base64.b64encode(np.concatenate(floats).astype("<f4").tobytes()).decode("ascii")}


def unpack(weights: dict[str, Any]) -> dict[str, np.ndarray]:
    """name -> the float64 array the page computes with (int8 times its row's scale)."""
    if weights.get("format") != FORMAT:
        raise ValueError(f"weights must be a {FORMAT!r} record, got format {weights.get('format')!r}")
    ints = np.frombuffer(base64.b64decode(weights["int8"]), dtype="<i1")
    floats = np.frombuffer(base64.b64decode(weights["float32"]), dtype="<f4")
    out = {}
    for t in weights["tensors"]:
        size = int(np.prod(t["shape"]))
        if t["kind"] == "int8":
            q = ints[t["offset"]:t["offset"] + size].astype(np.float64).reshape(t["shape"])
            scale = floats[t["scale_offset"]:t["scale_offset"] + t["shape"][0]].astype(np.float64)
            out[t["name"]] = q * scale[:, None]
        else:
            out[t["name"]] = floats[t["offset"]:t["offset"] + size].astype(np.float64).reshape(t["shape"])
    return out


def load_weights(weights: dict[str, Any]) -> SelfAttentionNet:
    """A float64 :class:`~attnconv.models.vision.SelfAttentionNet` (eval mode) holding exactly the page's weights."""
    arrays = unpack(weights)
    model = SelfAttentionNet(VisionConfig(attention="quadratic", **weights["config"])).double().eval()
    model.load_state_dict({k: torch.from_numpy(v) for k, v in arrays.items()})
    return model


def write_weights(weights: dict[str, Any], path: str | os.PathLike) -> None:
    """Write the record as JSON, atomically (a temporary file renamed into place)."""
    from ..train.checkpoint import atomic_write_text

    atomic_write_text(Path(path), json.dumps(weights, separators=(",", ":")) + "\n")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Export a SelfAttentionNet checkpoint to the page's int8 weights.")
    parser.add_argument("checkpoint", help="checkpoint.pt of `python -m attnconv.train vision --model sa-quadratic`")
    parser.add_argument("out", help="the JSON file to write")
    parser.add_argument("--source", default="", help="where the weights come from, as the page should say it")
    args = parser.parse_args(argv)
    model, info = read_checkpoint(args.checkpoint)
    source = args.source or f"{info['config']} sa-quadratic, epoch {info['epoch']} of {info['epochs']}"
    from .vision_model import embedded_images

    images = embedded_images()
    real = all(im["book"] for im in images)  # the checks hold on the book's images only
    weights = export_weights(model, source, np.stack([im["pixels"] for im in images]) if real else None,
                             [im["index"] for im in images] if real else None)
    write_weights(weights, args.out)
    print(f"{args.out}: {Path(args.out).stat().st_size / 1000:.0f} KB ({source})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
