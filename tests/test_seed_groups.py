"""Chapter 08's experiments: the GPSA vision model and its recorded gates, attention distance, and runs read back
over seeds (attnconv.train.seed_groups) and drawn (attnconv.figures.seed_runs)."""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402

from attnconv.analysis import attention_distance  # noqa: E402
from attnconv.figures.seed_runs import plot_accuracy_and_locality, plot_gate_curves  # noqa: E402
from attnconv.gpsa import GatedPositionalSelfAttention  # noqa: E402
from attnconv.models import SelfAttentionNet, VisionConfig, build_model, gpsa_gates, make_attention  # noqa: E402
from attnconv.positional.base import grid_positions  # noqa: E402
from attnconv.train import train_vision  # noqa: E402
from attnconv.train.seed_groups import (gate_curves, group_summary, initial_distance, layer_locality,  # noqa: E402
                                        seed_groups, spread)

from .test_train import _config, _tiny_data  # noqa: E402

TINY = VisionConfig(hidden_dim=16, depth=2, num_heads=4, head_dim=8, mlp_dim=32, dropout=0.0, attention="gpsa")


# --- the model ---------------------------------------------------------------------------------------------------

def test_gpsa_kind_is_convits_layer_started_local():
    layer = make_attention(dataclasses.replace(TINY, num_heads=9, init_alpha=2.0))
    assert isinstance(layer, GatedPositionalSelfAttention) and layer.head_dim == 8 and layer.num_heads == 9
    centers = {tuple(c) for c in layer.positional.centers.tolist()}
    assert centers == {(a, b) for a in (-1.0, 0.0, 1.0) for b in (-1.0, 0.0, 1.0)}  # the 3 x 3 grid of shifts
    torch.testing.assert_close(layer.positional.alpha, torch.full((9,), 2.0))


def test_gpsa_gates_are_sigmoids_of_the_gating_logits():
    torch.manual_seed(0)
    model = build_model("sa-gpsa", dataclasses.replace(TINY, attention="quadratic"))
    gates = gpsa_gates(model)
    assert len(gates) == 2 and gates[0].shape == (4,)
    torch.testing.assert_close(gates[0], torch.full((4,), 1 / (1 + math.exp(-1))))  # σ(1) ≈ 0.731, not λ = 1
    with torch.no_grad():
        model.blocks[1].attn.gating.copy_(torch.tensor([-2.0, 0.0, 2.0, 5.0]))
    torch.testing.assert_close(gpsa_gates(model)[1], torch.sigmoid(torch.tensor([-2.0, 0.0, 2.0, 5.0])))
    assert gpsa_gates(SelfAttentionNet(dataclasses.replace(TINY, attention="quadratic"))) == []


def test_gpsa_kind_needs_a_square_number_of_heads():
    with pytest.raises(ValueError, match="num_heads must be a square"):
        VisionConfig(attention="gpsa", num_heads=6, head_dim=8)


def test_gpsa_head_dim_is_free_of_embed_dim():
    layer = GatedPositionalSelfAttention(64, 9, head_dim=32)
    assert layer(torch.randn(2, 4, 4, 64))[0].shape == (2, 4, 4, 64) and layer.head_dim == 32
    with pytest.raises(ValueError, match="divisible by num_heads"):
        GatedPositionalSelfAttention(64, 9)


def test_a_gpsa_run_records_its_gates_and_head_distances(tmp_path):
    config = _config(epochs=2, model="sa-gpsa", sa=dataclasses.replace(TINY, depth=1))
    train_vision(config, tmp_path / "run", data=_tiny_data())
    snaps = [json.loads(line) for line in (tmp_path / "run" / "centers.jsonl").read_text().splitlines()]
    assert [s["epoch"] for s in snaps] == [0.0, 0.5, 1.0, 1.5, 2.0]
    gates = np.array([s["gates"] for s in snaps])  # (T, L, N_h)
    assert gates.shape == (5, 1, 4)
    np.testing.assert_allclose(gates[0], 1 / (1 + math.exp(-1)), rtol=1e-6)
    assert not np.allclose(gates[-1], gates[0])  # the gates train
    heads = json.loads((tmp_path / "run" / "heads.json").read_text())
    assert all(0 <= h["distance"] <= 16 * math.sqrt(2) for h in heads[0])


# --- attention distance ------------------------------------------------------------------------------------------

def _shift_probs(grid, shift):
    """One head that puts all its attention on q + shift, or on q itself where q + shift is off the grid."""
    pos = grid_positions(grid)  # (N, d)
    n = len(pos)
    probs = torch.zeros(1, n, n, dtype=torch.float64)
    index = {tuple(p.tolist()): i for i, p in enumerate(pos)}
    inside = 0
    for q, p in enumerate(pos):
        k = index.get(tuple((p + torch.tensor(shift)).tolist()))
        probs[0, q, q if k is None else k] = 1.0
        inside += k is not None
    return probs, inside / n


def test_attention_distance_of_a_shift_and_of_uniform_attention():
    probs, inside = _shift_probs((5, 6), (1, 1))
    # Euclidean: sqrt(2) on every query that has its key; the Manhattan distance would give 2
    assert attention_distance(probs, (5, 6)).item() == pytest.approx(math.sqrt(2) * inside)
    assert attention_distance(probs, (5, 6)).item() != pytest.approx(2 * inside)
    n = 7
    uniform = torch.full((2, 1, n, n), 1 / n)  # batched input is averaged over the batch
    assert attention_distance(uniform, (n,)).item() == pytest.approx((n * n - 1) / (3 * n))  # mean |i - j|
    grid = torch.full((1, 64, 64), 1 / 64)
    assert attention_distance(grid, (8, 8)).item() == pytest.approx(4.1365, abs=1e-4)  # the docstring's figure


def test_attention_distance_refuses_bad_input():
    with pytest.raises(TypeError, match="probs"):
        attention_distance(torch.ones(1, 4, 4, dtype=torch.long), (2, 2))
    with pytest.raises(ValueError, match="grid"):
        attention_distance(torch.ones(1, 4, 4), (3, 3))


# --- runs read back over seeds -----------------------------------------------------------------------------------

def _write_run(folder: Path, seed: int, acc: float, gates=None, distance=1.0, model="sa-gpsa", finished=True):
    folder.mkdir(parents=True)
    history = [{"epoch": 1, "test_acc": acc, "cpu_time_s": 60.0 + seed}]
    (folder / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in history))
    (folder / "provenance.json").write_text(json.dumps({"commit": "x"}))
    if finished:
        (folder / "final.json").write_text(json.dumps({"model": model, "full_test_acc": acc}))
    if gates is not None:
        snaps = [{"epoch": e, "step": i, "centers": [], "precision": [], "gates": g} for i, (e, g) in
                 enumerate(zip((0.0, 0.5, 1.0), gates))]
        (folder / "centers.jsonl").write_text("".join(json.dumps(s) + "\n" for s in snaps))
    heads = [[{"shift": [0, 0], "mass": 0.5, "distance": distance}, {"shift": [0, 1], "mass": 0.3,
                                                                      "distance": distance + 2}]] * 2
    (folder / "heads.json").write_text(json.dumps(heads))


@pytest.fixture
def results(tmp_path):
    for seed, acc in enumerate((0.5, 0.6, 0.7)):
        gates = [[[0.7, 0.7], [0.7, 0.7]], [[0.6, 0.8], [0.7, 0.9]], [[0.5, 0.9 - seed / 10], [0.75, 0.95]]]
        _write_run(tmp_path / f"ch08-gating-sa-gpsa-s{seed}", seed, acc, gates=gates)
        _write_run(tmp_path / f"ch08-position-sa-content-s{seed}", seed, acc - 0.1, distance=3.0, model="sa-content")
    _write_run(tmp_path / "ch08-gating-sa-gpsa-s3", 3, 0.9, finished=False)  # unfinished: left out
    _write_run(tmp_path / "ch08-gating-sa-gpsa-s10", 10, 0.4, gates=[[[0.7, 0.7]] * 2] * 3)  # sorted by number
    return tmp_path


def test_seed_groups_and_gate_curves(results):
    groups = seed_groups(results, "ch08-gating")
    assert list(groups) == ["sa-gpsa"]
    assert [r.name for r in groups["sa-gpsa"]] == [f"ch08-gating-sa-gpsa-s{s}" for s in (0, 1, 2, 10)]
    epochs, gates = gate_curves(groups["sa-gpsa"][:3])
    np.testing.assert_array_equal(epochs, [0.0, 0.5, 1.0])
    assert gates.shape == (3, 3, 2, 2) and gates[2, 2, 0, 1] == pytest.approx(0.7)
    with pytest.raises(ValueError, match="recorded no GPSA gates"):
        gate_curves(seed_groups(results, "ch08-position")["sa-content"])
    with pytest.raises(ValueError, match="prefix"):
        seed_groups(results, "")
    with pytest.raises(FileNotFoundError, match="results"):
        seed_groups(results / "missing", "ch08-gating")


def test_gate_curves_refuse_runs_that_do_not_line_up(results, tmp_path):
    groups = seed_groups(results, "ch08-gating")["sa-gpsa"]
    _write_run(tmp_path / "other" / "ch08-gating-sa-gpsa-s0", 0, 0.5, gates=[[[0.7, 0.7]]] * 3)  # one layer
    odd = seed_groups(tmp_path / "other", "ch08-gating")["sa-gpsa"]
    with pytest.raises(ValueError, match="other epochs or of another shape"):
        gate_curves([groups[0], odd[0]])


def test_spread_and_summary(results):
    s = spread([0.5, 0.6, 0.7])
    assert s.mean == pytest.approx(0.6) and s.std == pytest.approx(0.1)  # ddof 1 (ddof 0 would give 0.0816)
    assert (s.low, s.high) == (0.5, 0.7) and s.text(100) == "60.0 ± 10.0 (50.0–70.0)"
    assert spread([0.3]).std == 0.0
    with pytest.raises(ValueError, match="values"):
        spread([])
    with pytest.raises(ValueError, match="values"):
        spread([float("nan")])
    groups = seed_groups(results, "ch08-position")
    summary = group_summary(groups)["sa-content"]
    assert summary["accuracy"].values == pytest.approx((0.4, 0.5, 0.6))
    assert summary["distance"].mean == pytest.approx(4.0) and summary["mass"].mean == pytest.approx(0.4)
    assert summary["cpu_min"].values == pytest.approx((1.0, 61 / 60, 62 / 60))
    local = layer_locality(groups["sa-content"][0])
    assert local["distance"].shape == (2, 2) and local["distance"][0, 1] == 5.0


def test_plots_draw_every_layer_and_every_model(results):
    epochs, gates = gate_curves(seed_groups(results, "ch08-gating")["sa-gpsa"][:3])
    fig = plot_gate_curves(epochs, gates, ncols=1, start=0.73, ylim=(0, 1))
    assert sum(ax.get_visible() for ax in fig.axes) == 2 and fig.axes[0].get_ylim() == (0, 1)
    assert len(fig.axes[0].lines) == 3 + 1  # a line per seed and the start
    plt.close(fig)
    with pytest.raises(ValueError, match="gates must be"):
        plot_gate_curves(epochs[:2], gates)
    groups = {**seed_groups(results, "ch08-position"), "sa-gpsa": seed_groups(results, "ch08-gating")["sa-gpsa"][:3]}
    fig = plot_accuracy_and_locality(groups, ncols=1, labels={"sa-content": "content"}, uniform=4.1,
                                     start={"sa-gpsa": [1.0, 1.5]})
    assert [t.get_text() for t in fig.axes[0].get_yticklabels()] == ["content", "sa-gpsa"]
    legend = [t.get_text() for t in fig.axes[1].get_legend().get_texts()]
    assert legend == ["content", "sa-gpsa", "sa-gpsa, at the start", "uniform attention"]
    plt.close(fig)
    with pytest.raises(ValueError, match="ncols"):
        plot_accuracy_and_locality(groups, ncols=3)


# --- the optimiser of the gating experiment -------------------------------------------------------------------

def test_gpsa_gates_get_no_weight_decay_and_adamw_is_a_choice():
    from attnconv.models import no_weight_decay
    from attnconv.train.runs import check_resumable, config_to_dict
    from attnconv.train.vision import _optimizer

    model = build_model("sa-gpsa", TINY)
    skip = no_weight_decay(model)
    assert {"blocks.0.attn.gating", "blocks.1.attn.gating"} <= skip
    assert "blocks.0.attn.positional.centers" in skip and "blocks.0.attn.q_proj.weight" not in skip
    config = _config(model="sa-gpsa", sa=TINY, optimizer="adamw", lr=1e-3, weight_decay=0.05)
    opt = _optimizer(model, config)
    assert isinstance(opt, torch.optim.AdamW) and [g["weight_decay"] for g in opt.param_groups] == [0.05, 0.0]
    gating = {id(model.blocks[0].attn.gating)}
    assert gating <= {id(p) for p in opt.param_groups[1]["params"]}
    assert isinstance(_optimizer(model, _config(model="sa-gpsa", sa=TINY)), torch.optim.SGD)
    with pytest.raises(ValueError, match="optimizer must be one of"):
        _config(optimizer="adam")
    # a checkpoint saved before the field existed resumes as SGD, and only as SGD
    old = {k: v for k, v in config_to_dict(_config()).items() if k != "optimizer"}
    check_resumable(old, config_to_dict(_config()))
    with pytest.raises(ValueError, match="optimizer"):
        check_resumable(old, config_to_dict(_config(optimizer="adamw")))


def test_initial_distance_rebuilds_the_run_before_training(tmp_path):
    from attnconv.train.runs import config_to_dict
    from attnconv.train.results import RunResult

    config = _config(model="sa-quadratic", sa=dataclasses.replace(TINY, attention="quadratic"), seed=3)
    run = RunResult("r", [], {}, {"config": config_to_dict(config)})
    images = torch.zeros(1, 32, 32, 3)
    torch.manual_seed(3)
    model = build_model("sa-quadratic", config.sa).eval()
    want = [attention_distance(p, (16, 16)).mean().item() for p in model.attention_probs(images)]
    np.testing.assert_allclose(initial_distance(run, images), want)
    other = RunResult("r", [], {}, {"config": config_to_dict(dataclasses.replace(config, seed=4))})
    assert not np.allclose(initial_distance(other, images), want)  # another seed, other centres
    resnet = RunResult("r", [], {}, {"config": config_to_dict(dataclasses.replace(config, model="resnet18"))})
    with pytest.raises(ValueError, match="not an attention model"):
        initial_distance(resnet, images)
