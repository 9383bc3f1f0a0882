"""How far a layer looks: Gaussian heads' attention and mean distance, stored maps, a ResNet's receptive field."""

from __future__ import annotations

import math
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import numpy as np
import pytest
import torch

from attnconv.figures import plot_reach
from attnconv.models import ResNetConfig, VisionConfig, build_model
from attnconv.models.vision import gaussian_parameters
from attnconv.reach import (gaussian_probs, layer_reach, mean_distance, query_map_distance, receptive_fields,
                            run_reach)
from attnconv.train.results import load_run
from attnconv.train.runs import read_jsonl

RESULTS = Path(__file__).resolve().parents[1] / "results"
SMALL = dict(image_size=12, block=2, hidden_dim=16, depth=2, num_heads=4, head_dim=8, mlp_dim=32, dropout=0.0)


@pytest.mark.parametrize("attention", ["quadratic", "anisotropic"])
def test_gaussian_probs_are_the_models_own_attention(attention):
    torch.manual_seed(0)
    model = build_model(f"sa-{attention}", VisionConfig(attention=attention, **SMALL)).eval()
    with torch.no_grad():
        for p in model.parameters():  # move off the symmetric start: an anisotropic, off-centre precision
            p.add_(0.3 * torch.randn_like(p))
        probs = model.attention_probs(torch.randn(2, 12, 12, 3))  # L x (B, N_h, N, N)
    for layer, params in zip(probs, gaussian_parameters(model)):
        ours = gaussian_probs(params["centers"], params["precision"], (6, 6))
        assert (ours - layer[0].double()).abs().max() < 1e-5
        mirrored = gaussian_probs(-params["centers"], params["precision"], (6, 6))  # a sign error in Δ
        assert (mirrored - layer[0].double()).abs().max() > 1e-2


def test_mean_distance_of_sharp_and_uniform_heads():
    grid = (5, 7)
    # A sharp head one cell to the right: distance 1 cell, except in the last column (no key there: it keeps q).
    sharp = gaussian_probs(torch.tensor([[0.0, 1.0]]), 60 * torch.eye(2)[None], grid)
    assert mean_distance(sharp, grid, block=2).item() == pytest.approx(2 * 6 / 7, abs=1e-9)
    assert mean_distance(gaussian_probs(torch.zeros(1, 2), 60 * torch.eye(2)[None], grid), grid).item() < 1e-9
    # A flat head: the mean distance between two cells of the grid, by brute force.
    flat = gaussian_probs(torch.zeros(1, 2), 1e-12 * torch.eye(2)[None], grid)
    cells = [(r, c) for r in range(5) for c in range(7)]
    brute = np.mean([math.dist(a, b) for a in cells for b in cells])
    assert mean_distance(flat, grid).item() == pytest.approx(brute, rel=1e-9)
    with pytest.raises(ValueError, match="probs must be"):
        mean_distance(flat, (5, 6))


def test_query_map_distance_agrees_with_the_closed_form():
    grid, queries = (6, 6), np.array([[3, 3], [1, 1]])
    probs = gaussian_probs(torch.tensor([[1.0, -2.0], [0.0, 0.5]]), torch.tensor([[[0.3, 0], [0, 0.3]],
                                                                                     [[2.0, 0.5], [0.5, 1.0]]]), grid)
    maps = probs[:, [3 * 6 + 3, 1 * 6 + 1]].reshape(1, 2, 2, 6, 6).numpy()  # (L=1, N_h, Q, H, W)
    dist = torch.tensor([[math.dist(q, (r, c)) for r in range(6) for c in range(6)] for q in queries.tolist()],
                        dtype=torch.float64)
    expected = (probs[:, [21, 7]] * dist).sum(-1).mean(-1)
    np.testing.assert_allclose(query_map_distance(maps, queries, block=2)[0], 2 * expected.numpy(), rtol=1e-9)


def test_committed_quadratic_run_reach_matches_its_stored_maps():
    run = load_run(RESULTS / "cpu-quick-sa-quadratic")
    sa = run.provenance["config"]["sa"]
    grid, block = (sa["image_size"] // sa["block"],) * 2, sa["block"]
    reach = run_reach(run.centers, grid, block)
    assert reach["step"] == run.final["steps"] and reach["init_step"] == 0
    assert [layer["share_alpha_above_1"] for layer in reach["init"]] == [0.0] * sa["depth"]  # every α started at 1
    # The stored maps of the two query pixels give the same distances as the recorded centres and α.
    queries = run.attention["queries"]
    rows = [int(r) * grid[1] + int(c) for r, c in queries]
    for layer, stored in zip(reach["trained"], query_map_distance(run.attention["query_maps"], queries, block)):
        probs = gaussian_probs(torch.tensor(layer["centers"]), torch.tensor(layer["alpha"])[:, None, None] *
                               torch.eye(2), grid)[:, rows]
        dist = torch.tensor([[math.dist(q, (r, c)) for r in range(grid[0]) for c in range(grid[1])]
                             for q in queries.tolist()])
        np.testing.assert_allclose(stored, block * (probs * dist).sum(-1).mean(-1).numpy(), atol=1e-4)


def test_layer_reach_reads_alpha_from_the_precision():
    snap = {"centers": [[[0.0, 0.0], [1.0, 1.0]]], "precision": [[[[2.0, 0.0], [0.0, 2.0]], [[0.5, 0], [0, 0.5]]]]}
    (layer,) = layer_reach(snap, (4, 4), 2)
    assert layer["alpha"].tolist() == [2.0, 0.5] and layer["share_alpha_above_1"] == 0.5
    assert layer["mean_distance"] == pytest.approx(layer["distance"].mean())
    with pytest.raises(ValueError, match="no Gaussian centres"):
        run_reach([], (4, 4), 2)


def test_resnet18_receptive_field_per_stage():
    # Stem 3x3: 3. Stage 1, four 3x3 at stride 1: 3 + 4·2 = 11. Stage 2 (jump 1 -> 2 at its first conv):
    # 11 + 2 + 3·4 = 25. Stage 3: 25 + 4 + 3·8 = 53. Stage 4: 53 + 8 + 3·16 = 109.
    fields = receptive_fields(build_model("resnet18", ResNetConfig(width=4)))
    assert [f["rf"] for f in fields] == [11, 25, 53, 109] and [f["jump"] for f in fields] == [1, 2, 4, 8]
    assert receptive_fields(build_model("resnet18", ResNetConfig(width=4, blocks=(1, 1))))[-1]["rf"] == 3 + 4 + 2 + 4
    with pytest.raises(TypeError, match="ResNet"):
        receptive_fields(torch.nn.Linear(2, 2))


def test_reach_figure_of_committed_records():
    reaches = {name: run_reach(read_jsonl(RESULTS / name / "centers.jsonl"), (16, 16), 2)
               for name in ("cpu-quick-sa-quadratic", "cpu-long-sa-quadratic")}
    fig = plot_reach(reaches, receptive_fields(build_model("resnet18", ResNetConfig(width=16))))
    assert len(fig.axes) == 3 and fig.axes[0].get_ylabel().startswith("mean attention distance")
    assert len(plot_reach(reaches).axes) == 2


def test_folder_reach_reads_any_vision_run_folder(tmp_path):
    from attnconv.reach import folder_reach

    gauss = folder_reach(RESULTS / "cpu-quick-sa-quadratic")
    assert gauss["kind"] == "gaussian" and gauss["step"] == 600 and len(gauss["trained"]) == 3
    maps = folder_reach(RESULTS / "cpu-quick-sa-learned")
    assert maps["kind"] == "maps" and maps["distance"].shape == (3, 9) and (maps["distance"] > 0).all()
    cnn = folder_reach(RESULTS / "cpu-quick-resnet18")
    assert cnn["kind"] == "cnn" and [f["rf"] for f in cnn["fields"]] == [11, 25, 53, 109]
    unfinished = tmp_path / "unfinished"  # a run that has written centres but no provenance yet
    unfinished.mkdir()
    (unfinished / "centers.jsonl").write_text((RESULTS / "cpu-long-sa-quadratic" / "centers.jsonl").read_text())
    with pytest.raises(ValueError, match="pass grid and block"):
        folder_reach(unfinished)
    partial = folder_reach(unfinished, grid=(16, 16), block=2)
    assert partial["kind"] == "gaussian" and partial["step"] > 600
    with pytest.raises(ValueError, match="holds no centres"):
        folder_reach(tmp_path / "empty")
