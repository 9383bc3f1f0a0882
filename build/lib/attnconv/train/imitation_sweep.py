"""The imitation sweep: which settings let gradient descent find Theorem 1's construction (chapter 06).

    python -m attnconv.train.imitation_sweep --out results/imitation            # every setting, 3 seeds
    python -m attnconv.train.imitation_sweep --out DIR --quick                   # two settings, seconds

Writes ``records.jsonl`` (one line per run: the setting, the seed, the teacher and the records of
:func:`~attnconv.train.imitation.imitate`), ``summary.json`` (final numbers per setting: mean and standard
deviation over seeds) and ``provenance.json``. Crops come from CIFAR-10's training images (or a generated
stand-in when no copy is found); the language analogue reads MR sentences as characters.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import Tensor, nn

from ..tokens import space_to_depth
from .imitation import ImitationConfig, imitate, imitate_lightconv, rank_one_conv

__all__ = ["LANGUAGE", "SETTINGS", "QUICK_SETTINGS", "image_crops", "run_sweep", "summarize"]

# name -> (teacher, kernel size, config changes). "rank1": random taps of rank 1; "random": random taps of full
# rank (3); "cnn": the first layer of chapter 04's trained CNN (12 -> 24 channels on 2 x 2 space-to-depth).
SETTINGS: dict[str, tuple[str, int, dict[str, Any]]] = {
    "rank1 D_h=1": ("rank1", 3, {"head_dim": 1}),
    "rank1 D_h=C": ("rank1", 3, {}),
    "random D_h=C": ("random", 3, {}),
    "cnn D_h=C": ("cnn", 3, {}),
    "rank1 D_h=1 alpha=2": ("rank1", 3, {"head_dim": 1, "init_alpha": 2.0}),
    "rank1 D_h=C alpha=2": ("rank1", 3, {"init_alpha": 2.0}),
    "rank1 D_h=1 sigma=1": ("rank1", 3, {"head_dim": 1, "init_center_std": 1.0}),
    "rank1 D_h=1 lr=1e-3": ("rank1", 3, {"head_dim": 1, "lr": 1e-3}),
    "rank1 D_h=1 lr=3e-2": ("rank1", 3, {"head_dim": 1, "lr": 3e-2}),
    "rank1 D_h=1 16 heads": ("rank1", 3, {"head_dim": 1, "num_heads": 16}),
    "rank1 D_h=C 16 heads": ("rank1", 3, {"num_heads": 16}),
    "rank1 5x5 D_h=1": ("rank1", 5, {"head_dim": 1}),
    "rank1 5x5 D_h=C": ("rank1", 5, {}),
    "rank1 D_h=1 learned": ("rank1", 3, {"head_dim": 1, "encoding": "learned"}),
    "rank1 D_h=1 content": ("rank1", 3, {"head_dim": 1, "encoding": "quadratic_content"}),
}
QUICK_SETTINGS = ("rank1 D_h=1", "rank1 D_h=C")
LANGUAGE = "language lightconv"  # the 1-D analogue: relative-bias attention imitating a lightweight convolution
CROP, OUT_CHANNELS = 12, 8


def image_crops(images: Tensor, count: int, size: int, seed: int) -> Tensor:
    """``count`` random ``size`` x ``size`` crops of ``(N, H, W, C)`` float images, channels last."""
    g = torch.Generator().manual_seed(seed)
    idx = torch.randint(len(images), (count,), generator=g)
    top = torch.randint(images.shape[1] - size + 1, (count,), generator=g)
    left = torch.randint(images.shape[2] - size + 1, (count,), generator=g)
    return torch.stack([images[i, t:t + size, l:l + size] for i, t, l in zip(idx.tolist(), top.tolist(), left.tolist())])


def _normalised(images: Tensor) -> Tensor:
    x = images.float() / 255
    return (x - x.mean((0, 1, 2))) / x.std((0, 1, 2))


def _cnn_teacher(train_x: Tensor, train_y: Tensor) -> tuple[nn.Conv2d, Tensor]:
    """Chapter 04's CNN trained with chapter 04's recipe; its first conv and its normalised 12-channel inputs."""
    from ..models.smallcnn import SmallCNN, fit
    subset = torch.randperm(len(train_x), generator=torch.Generator().manual_seed(0))[:12000]
    pixels = train_x[subset].float() / 255
    cnn = SmallCNN(width=24, mean=pixels.mean((0, 1, 2)), std=pixels.std((0, 1, 2)))
    fit(cnn, train_x[subset], train_y[subset], epochs=2, batch_size=128, lr=3e-3, seed=0)
    x = (train_x[subset[:4000]].float() / 255 - cnn.mean) / cnn.std
    return cnn.conv1.requires_grad_(False), space_to_depth(x, 2)  # (N, 16, 16, 12)


def _text_tokens(count: int, length: int, dim: int, seed: int) -> tuple[Tensor, str]:
    """Windows of MR sentences as characters, each character a fixed random vector: ``(count, length, dim)``."""
    from ..data.tasks import load_task
    task = load_task("mr")
    text = " ".join(ex.text_a for ex in task.train)
    chars = sorted(set(text))
    g = torch.Generator().manual_seed(seed)
    table = torch.randn(len(chars), dim, generator=g)
    codes = torch.tensor([chars.index(ch) for ch in text[:200_000]])
    starts = torch.randint(len(codes) - length, (count,), generator=g)
    return table[torch.stack([codes[s:s + length] for s in starts.tolist()])], task.description


def summarize(records: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Final relative error, matched-tap distance, α and best-shift mass per setting: mean and std over seeds."""
    out: dict[str, dict[str, Any]] = {}
    for name in dict.fromkeys(r["setting"] for r in records):
        runs = [r for r in records if r["setting"] == name]
        stats: dict[str, Any] = {"seeds": len(runs), "wall_s": float(np.mean([r["wall_s"] for r in runs]))}
        keys = ("rel_error", "kernel_tv") if "kernel_tv" in runs[0] else ("rel_error", "matched")
        for key in keys:
            finals = np.array([r[key][-1] for r in runs])
            stats[key] = {"mean": float(finals.mean()), "std": float(finals.std()), "runs": finals.tolist()}
        if runs[0].get("mass"):
            stats["mass_min"] = float(np.mean([min(r["mass"][-1]) for r in runs]))
        if runs[0].get("alpha") and runs[0]["alpha"][-1] is not None:
            alphas = np.array([r["alpha"][-1] for r in runs])
            stats["alpha"] = {"median": float(np.median(alphas)), "min": float(alphas.min()), "max": float(alphas.max())}
        out[name] = stats
    return out


def run_sweep(out_dir: str | os.PathLike | None, quick: bool = False, seeds: int = 3,
              settings: tuple[str, ...] | None = None, language: bool | None = None,
              steps: int | None = None) -> dict[str, Any]:
    """Run the settings (default: all and the language analogue, or ``QUICK_SETTINGS`` with ``quick``), one run
    per seed. Naming ``settings`` runs the language analogue only when ``LANGUAGE`` is among them.

    ``quick`` shortens every run (600 steps, one seed, 8 x 8 crops from 2,000 images) so the book can rerun it
    in seconds; otherwise each run takes ``steps`` Adam steps (default 3,000) on 12 x 12 crops. Runs use one
    thread. Returns ``{"records", "summary", "data"}`` and writes them to ``out_dir`` when given.
    """
    start, threads = time.perf_counter(), torch.get_num_threads()
    torch.set_num_threads(1)  # layers this small only lose time to thread synchronisation, most on a busy machine
    try:
        return _sweep(out_dir, quick, seeds, settings, language, steps, start)
    finally:
        torch.set_num_threads(threads)


def _sweep(out_dir: str | os.PathLike | None, quick: bool, seeds: int, settings: tuple[str, ...] | None,
           language: bool | None, steps: int | None, start: float) -> dict[str, Any]:
    from ..data.cifar10 import generated_cifar10, load_cifar10
    from .provenance import device_description, git_commit
    try:
        data = load_cifar10(download=False)
    except FileNotFoundError:
        data = generated_cifar10(512, 8)
    if settings is not None:
        unknown = sorted(set(settings) - set(SETTINGS) - {LANGUAGE})
        if unknown:
            raise ValueError(f"settings must be among {sorted(SETTINGS) + [LANGUAGE]}, got {unknown}")
        language = LANGUAGE in settings if language is None else language
        settings = tuple(name for name in settings if name != LANGUAGE)
    names = settings if settings is not None else (QUICK_SETTINGS if quick else tuple(SETTINGS))
    seeds = 1 if quick else seeds
    crop, steps = (8, 600) if quick else (CROP, steps or 3000)
    images = _normalised(data.train_images[:2000 if quick else 20000])
    rgb_train = image_crops(images, 1024 if quick else 4096, crop, seed=1)
    rgb_eval = image_crops(images, 256, crop, seed=2)
    cnn = None
    records: list[dict[str, Any]] = []
    partial = None if out_dir is None else Path(out_dir) / "records.partial.jsonl"  # survives an interrupted sweep
    if partial is not None:
        partial.parent.mkdir(parents=True, exist_ok=True)
        partial.write_text("")

    def keep(record: dict[str, Any]) -> None:
        records.append(record)
        if partial is not None:
            with partial.open("a") as f:
                f.write(json.dumps(record) + "\n")
    for name in names:
        teacher_kind, k, changes = SETTINGS[name]
        if teacher_kind == "cnn":
            if cnn is None:
                conv, grid = _cnn_teacher(data.train_images, data.train_labels)
                cnn = (conv, image_crops(grid, 4096, crop, seed=1), image_crops(grid, 256, crop, seed=2))
            teacher, train, held = cnn
        for seed in range(seeds):
            if teacher_kind == "rank1":
                teacher, train, held = rank_one_conv(3, OUT_CHANNELS, k, seed=100 + seed), rgb_train, rgb_eval
            elif teacher_kind == "random":
                torch.manual_seed(100 + seed)
                teacher, train, held = nn.Conv2d(3, OUT_CHANNELS, k, padding=k // 2), rgb_train, rgb_eval
            config = replace(ImitationConfig(steps=steps, log_every=max(1, steps // 30), seed=seed), **changes)
            t0 = time.perf_counter()
            rec = imitate(teacher.requires_grad_(False), train, config, held)
            keep({"setting": name, "teacher": teacher_kind, "seed": seed, "wall_s": time.perf_counter() - t0, **rec})
    text_source = None
    if language if language is not None else not quick:
        try:
            tokens, text_source = _text_tokens(4096 + 256, 40, 16, seed=0)
        except FileNotFoundError:
            tokens = None
        for seed in range(seeds if tokens is not None else 0):
            t0 = time.perf_counter()
            rec = imitate_lightconv(tokens[:4096], tokens[4096:], steps=steps, log_every=max(1, steps // 30), seed=seed)
            keep({"setting": LANGUAGE, "teacher": "lightconv", "seed": seed,
                  "wall_s": time.perf_counter() - t0, **rec})
    result = {"records": records, "summary": summarize(records), "data": data.description}
    if out_dir is not None:
        out = Path(out_dir)
        out.mkdir(parents=True, exist_ok=True)
        (out / "records.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
        (out / "summary.json").write_text(json.dumps(result["summary"], indent=2) + "\n")
        prov = {"device": device_description(torch.device("cpu")), "torch": torch.__version__, **git_commit(),
                "data": data.description, "data_source": data.source, "text_source": text_source, "quick": quick,
                "wall_time_s": time.perf_counter() - start, "date": time.strftime("%Y-%m-%d %H:%M:%S %Z")}
        (out / "provenance.json").write_text(json.dumps(prov, indent=2) + "\n")
        partial.unlink()
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m attnconv.train.imitation_sweep", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", required=True, help="folder for records.jsonl, summary.json and provenance.json")
    parser.add_argument("--quick", action="store_true", help="two short settings, one seed, 600 steps (seconds)")
    parser.add_argument("--seeds", type=int, default=3, help="runs per setting")
    parser.add_argument("--steps", type=int, default=3000, help="Adam steps per run")
    parser.add_argument("--only", action="append", default=None, choices=sorted(SETTINGS) + [LANGUAGE],
                        help="run these settings (repeatable; the language analogue only when named)")
    args = parser.parse_args(argv)
    torch.set_flush_denormal(True)
    result = run_sweep(args.out, quick=args.quick, seeds=args.seeds, settings=tuple(args.only) if args.only else None,
                       steps=args.steps)
    print(json.dumps({k: {m: v[m]["mean"] for m in ("rel_error", "matched", "kernel_tv") if m in v}
                      for k, v in result["summary"].items()}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
