"""Chapter 08's experiments on the book's models: the from-scratch code of the section against the library, and
every claim the section makes of the committed records (results/ch08-*), each with a wrong variant that fails."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
import torch

from attnconv.analysis import attention_distance
from attnconv.models import VisionConfig, build_model, make_attention
from attnconv.train.seed_groups import gate_curves, group_summary, initial_distance, layer_locality, seed_groups
from attnconv.train.seeds import order

RESULTS = Path(__file__).resolve().parents[1] / "results"
START = 1 / (1 + math.exp(-1))  # every gate starts at sigma(1)


def _gated_attention(q, k, position_logits, gate_logit, swap=False):
    content = torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1]), dim=-1)
    gate = torch.sigmoid(gate_logit)[:, None, None]
    if swap:  # the wrong variant: the gate weighs content
        return gate * content + (1 - gate) * torch.softmax(position_logits, dim=-1)
    return (1 - gate) * content + gate * torch.softmax(position_logits, dim=-1)


def test_the_gated_mix_from_scratch_is_the_library_layer():
    torch.manual_seed(0)
    layer = make_attention(VisionConfig(attention="gpsa", hidden_dim=64, num_heads=9, head_dim=32, block=4,
                                        init_alpha=1.0))
    x = torch.randn(2, 8, 8, 64)
    q, k, _ = layer.project(x.reshape(2, 64, 64))
    position = layer.positional((8, 8), None, None)
    library = layer(x, need_weights=True)[1]
    torch.testing.assert_close(_gated_attention(q, k, position, layer.gating), library)
    assert not torch.allclose(_gated_attention(q, k, position, layer.gating, swap=True), library)


def _mean_distance(probs, grid, norm=2):
    rows, cols = torch.meshgrid(torch.arange(grid[0]), torch.arange(grid[1]), indexing="ij")
    pos = torch.stack([rows.flatten(), cols.flatten()], dim=-1).double()
    return (probs.double() * torch.cdist(pos, pos, p=norm)).sum(-1).mean(-1)


def test_mean_distance_from_scratch_is_the_library_and_position_only_attention_ignores_the_image():
    torch.manual_seed(0)
    model = build_model("sa-quadratic", VisionConfig(hidden_dim=64, depth=3, num_heads=9, head_dim=32, mlp_dim=128,
                                                     block=4)).eval()
    probs = model.attention_probs(torch.randn(2, 32, 32, 3))[0]
    torch.testing.assert_close(_mean_distance(probs.mean(0), (8, 8)), attention_distance(probs, (8, 8)))
    assert not torch.allclose(_mean_distance(probs.mean(0), (8, 8), norm=1), attention_distance(probs, (8, 8)))
    torch.testing.assert_close(probs[0], probs[1])
    content = build_model("sa-content", VisionConfig(hidden_dim=64, depth=3, num_heads=9, head_dim=32, mlp_dim=128,
                                                     block=4)).eval()
    probs = content.attention_probs(torch.randn(2, 32, 32, 3))[0]
    assert not torch.allclose(probs[0], probs[1])


# --- the committed records -------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def gating():
    return seed_groups(RESULTS, "ch08-gating")["sa-gpsa"]


@pytest.fixture(scope="module")
def position():
    return seed_groups(RESULTS, "ch08-position")


def test_three_seeds_of_one_recipe(gating, position):
    runs = gating + [r for rs in position.values() for r in rs]
    assert [r.provenance["config"]["seed"] for r in gating] == [0, 1, 2]
    assert {"sa-quadratic", "sa-content"} <= set(position)
    assert all([r.provenance["config"]["seed"] for r in rs] == [0, 1, 2] for rs in position.values())
    for r in runs:
        c = r.provenance["config"]
        assert (c["name"], c["epochs"], c["train_images"], c["precision"], c["threads"]) == \
            ("cpu-quick", 4, 5000, "bf16", 1), r.name
        assert (c["sa"]["block"], c["sa"]["hidden_dim"], c["sa"]["depth"], c["sa"]["num_heads"]) == (4, 64, 3, 9)
        assert r.final["full_test_images"] == 10_000 and r.provenance["data_source"].startswith("$ATTNCONV_DATA")
        assert r.provenance["commit"] and all("cpu_time_s" in h for h in r.history)
    assert all(r.provenance["config"].get("optimizer", "sgd") == "sgd" for rs in position.values() for r in rs)
    assert all(r.provenance["config"]["optimizer"] == "adamw" for r in gating)
    _, gates = gate_curves(gating)
    assert np.allclose(gates[:, 0], START) and not np.allclose(gates[:, 0], 1.0)  # sigma(1), not lambda = 1


def test_gating_claims(gating):
    """The gates hardly move in 200 steps, and the deeper the layer the lower its mean gate ends, in every seed."""
    _, gates = gate_curves(gating)
    final = gates[:, -1]  # (seeds, layers, heads)
    assert np.abs(final - START).max() < 0.02
    assert not np.abs(final - START).max() < 0.001  # but they do move
    means = final.mean(-1)  # (seeds, layers)
    assert all(np.all(np.diff(m) < 0) for m in means)  # layer 1 > layer 2 > layer 3 in every seed
    assert not all(np.all(np.diff(m) > 0) for m in means)  # the wrong way round fails
    assert np.all(means[:, -1] < START)  # the last layer leans towards content in every seed


def test_position_claims(position):
    """Position only ends above content only in every seed; content heads look as far as uniform attention; the
    position-only heads stay near their random start."""
    summary = group_summary(position)
    quad, content = summary["sa-quadratic"], summary["sa-content"]
    assert order(quad["accuracy"].values, content["accuracy"].values) == 1
    assert order(content["accuracy"].values, quad["accuracy"].values) == -1
    params = [position[m][0].final["params"] for m in ("sa-quadratic", "sa-content")]
    assert 0.45 < params[0] / params[1] < 0.55  # half the parameters
    assert 4 < content["cpu_min"].mean / quad["cpu_min"].mean < 8  # several times less CPU time a run
    uniform = attention_distance(torch.full((1, 64, 64), 1 / 64), (8, 8)).item()
    assert abs(content["distance"].mean - uniform) < 0.1
    assert quad["distance"].high < uniform - 1.5  # the position-only heads look about half as far
    assert quad["mass"].low > 5 * content["mass"].high  # and put far more on one shift
    blank = torch.zeros(1, 32, 32, 3)
    for run in position["sa-quadratic"]:  # 200 steps barely move the random centres
        start, end = initial_distance(run, blank), layer_locality(run)["distance"].mean(-1)
        assert np.abs(end - start).max() < 0.1 and np.abs(end - uniform).min() > 1.5
