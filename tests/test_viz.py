"""The chapter's figures and the reading of run folders."""

from __future__ import annotations

import json
import math

import matplotlib

matplotlib.use("Agg")

import numpy as np
import pytest

import torch

from attnconv.data import CropFlip, generated_cifar10
from attnconv.train.results import load_run, results_table
from attnconv.figures.vision_runs import (gaussian_contour, plot_accuracy, plot_attention_maps, plot_augmentations,
                          plot_center_trajectories, plot_centers, plot_head_shifts)


def _mass_inside(ellipse, center, precision, step=0.02):
    """Mass of exp(-(δ - Δ)ᵀ P (δ - Δ)) inside the drawn ellipse, on a fine grid (continuous limit)."""
    axis = np.arange(-8, 8, step)
    rows, cols = np.meshgrid(axis + center[0], axis + center[1], indexing="ij")
    d = np.stack([rows - center[0], cols - center[1]], -1)
    density = np.exp(-np.einsum("...i,ij,...j->...", d, precision, d))
    path = ellipse.get_transform().transform_path(ellipse.get_path())
    inside = path.contains_points(np.stack([cols.ravel(), rows.ravel()], -1)).reshape(rows.shape)
    return density[inside].sum() / density.sum()


@pytest.mark.parametrize("precision", [np.eye(2) * 0.7, np.array([[1.0, 0.6], [0.6, 0.5]])])
@pytest.mark.parametrize("mass", [0.5, 0.9])
def test_contours_hold_their_mass(precision, mass):
    center = (1.5, -2.0)
    ellipse = gaussian_contour(center, precision, mass)
    assert _mass_inside(ellipse, center, precision) == pytest.approx(mass, abs=0.01)
    if precision[0, 1] == 0:
        assert ellipse.width / 2 == pytest.approx(math.sqrt(-math.log(1 - mass) / 0.7))


def test_contour_errors():
    with pytest.raises(ValueError, match="mass must be in"):
        gaussian_contour((0, 0), np.eye(2), 1.0)
    with pytest.raises(ValueError, match="positive-definite"):
        gaussian_contour((0, 0), -np.eye(2), 0.5)


@pytest.fixture
def run_folder(tmp_path):
    run = tmp_path / "cpu-quick-sa-quadratic"
    run.mkdir()
    history = [{"epoch": e, "step": 10 * e, "test_acc": 0.2 + 0.1 * e, "wall_time_s": 30.0 * e,
                "train_images_per_s": 100.0} for e in (1, 2)]
    (run / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in history))
    (run / "final.json").write_text(json.dumps({"model": "sa-quadratic", "params": 114_000, "flops": 7e7,
                                                "weight_flops": 6e7, "epochs": 2, "test_acc": 0.4,
                                                "full_test_acc": 0.41, "full_test_images": 10_000,
                                                "wall_time_s": 60.0}))
    (run / "provenance.json").write_text(json.dumps({"device": "CPU: test", "data": "JPEG re-encoding",
                                                     "test_images": 2000}))
    snaps = [{"epoch": e, "step": e, "centers": np.random.default_rng(e).normal(size=(2, 4, 2)).tolist(),
              "precision": np.tile(np.eye(2), (2, 4, 1, 1)).tolist()} for e in (0, 1, 2)]
    (run / "centers.jsonl").write_text("".join(json.dumps(s) + "\n" for s in snaps))
    maps = np.full((2, 4, 2, 16, 16), 1 / 256, dtype=np.float32)
    np.savez(run / "attention.npz", query_maps=maps, queries=np.array([[8, 8], [4, 4]]), n_images=100)
    (run / "heads.json").write_text(json.dumps([[{"shift": [0, 1], "mass": 0.9}] * 4] * 2))
    return run


def test_load_run_and_table(run_folder):
    run = load_run(run_folder)
    assert run.label == "sa-quadratic" and len(run.history) == 2 and len(run.centers) == 3
    assert run.attention["query_maps"].shape == (2, 4, 2, 16, 16) and run.heads[1][3]["mass"] == 0.9
    table = results_table([run])
    assert "| sa-quadratic | 0.11M | 0.07 / 0.06 | 2 | 41.0% (10000 images) | 1.0 min | 100 | CPU: test |" in table
    html = results_table([run], fmt="html")
    assert "<table" in html and ">41.0% (10000 images)</td>" in html and "|---|" not in html
    with pytest.raises(ValueError, match="fmt must be"):
        results_table([run], fmt="latex")
    (run_folder / "final.json").unlink()
    with pytest.raises(FileNotFoundError, match="not a finished run"):
        load_run(run_folder)


def test_figures_draw(run_folder):
    run = load_run(run_folder)
    fig = plot_accuracy({"a": run.history, "b": run.history})
    assert len(fig.axes) == 2 and len(fig.axes[0].lines) == 2
    fig = plot_centers(run.centers[-1])
    assert len(fig.axes) == 2 and len(fig.axes[0].patches) == 8  # 4 heads x 2 contours
    fig = plot_center_trajectories(run.centers, layer=1)
    assert len(fig.axes[0].patches) == 4
    fig = plot_attention_maps(run.attention["query_maps"][:, :, 0], run.attention["queries"][0])
    assert len(fig.axes) == 8 + 1  # 2 layers x 4 heads, and the colour bar
    fig = plot_head_shifts(run.heads)
    assert len(fig.axes[0].texts) == 8


def test_augmentation_figure_undoes_the_normalisation():
    image = generated_cifar10(10, 10).train_images[3]
    fig = plot_augmentations(image, CropFlip(padding=0, flip=False), copies=3)
    shown = fig.axes[1].images[0].get_array()
    np.testing.assert_allclose(shown, image.float().numpy() / 255, atol=1e-6)  # no crop, no flip: the image
    assert len(fig.axes) == 4
    with pytest.raises(ValueError, match="must be positive"):
        generated_cifar10(0, 10)
    assert generated_cifar10(10, 10).description == "generated stand-in"
