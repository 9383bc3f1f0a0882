"""Chapters 06 and 07: their opening diagrams, their from-scratch code against the library, and the readability of
their redrawn figures at 400 px."""

from __future__ import annotations

import io
import json
from dataclasses import replace

import matplotlib

matplotlib.use("Agg")

import numpy as np
import pytest
from PIL import Image

from attnconv.figures.bert_map import plot_variant_map, variant_places
from attnconv.figures.imitation import plot_imitation_summary, setting_label
from attnconv.figures.legibility import MIN_TEXT_PX, PHONE_COLUMN_PX, png_bytes, smallest_text_px
from attnconv.figures.vision_diagram import plot_vision_model
from attnconv.figures.vision_runs import plot_center_trajectories
from attnconv.models.bert import VARIANTS


def fits_a_phone(fig) -> bool:
    """Shown whole in a 400 px page (a 352 px column), is its smallest text still at least 9 px?"""
    width = Image.open(io.BytesIO(png_bytes(fig))).size[0]
    return smallest_text_px(fig) * min(1.0, PHONE_COLUMN_PX / width) >= MIN_TEXT_PX


def test_vision_diagram_is_legible_on_a_phone_and_draws_the_taps():
    fig = plot_vision_model()
    assert fits_a_phone(fig)
    head_axes = [ax for ax in fig.axes if ax.get_xlabel() == "column offset (cells)"]
    assert len(head_axes) == 1
    taps = [line for line in head_axes[0].lines if line.get_marker() == "+"]
    assert len(taps) == 9  # the 3x3 kernel
    fig = plot_vision_model(kernel_size=5)
    assert len([l for ax in fig.axes for l in ax.lines if l.get_marker() == "+"]) == 25


def test_vision_diagram_prints_no_text_over_another():
    """Fig. 6.1: the head panel's tick and axis labels stand clear of each other and of the flow chart; the
    earlier layout (the panels side by side with no gap, the row label one point off its ticks) fails."""
    from attnconv.figures.legibility import overprinted_texts

    assert overprinted_texts(plot_vision_model()) == []
    fig = plot_vision_model()
    chart, heads = fig.axes[0], next(ax for ax in fig.axes if ax.get_xlabel() == "column offset (cells)")
    chart.set_position((0.0, 0.0, 0.5, 0.93))
    heads.set_position((0.53, 0.38, 0.45, 0.55))
    heads.yaxis.labelpad = 1
    clashes = overprinted_texts(fig)
    assert any("box of another panel" in c for c in clashes), clashes


def test_a_wide_figure_with_small_text_would_not_fit_a_phone():
    """The check above can fail: the same diagram stretched to 10 inches shrinks its text below 9 px."""
    fig = plot_vision_model()
    fig.set_size_inches(10, 6.4)
    assert not fits_a_phone(fig)


def test_every_variant_has_a_place_on_the_map():
    places = variant_places(VARIANTS)
    assert {n for names in places.values() for n in names} == set(VARIANTS)
    assert places["mix"] == ["convolution"]
    assert {"composite", "composite-noabs", "fixed", "dynamic"} <= set(places["logits"])
    assert set(places["projection"]) == {n for n, v in VARIANTS.items() if v.conv_projections}
    assert "composite-noabs" in places["input"] and "composite" not in places["input"]


def test_the_map_marks_the_pretrained_variants_and_fits_a_phone():
    fig = plot_variant_map(VARIANTS, {"absolute", "composite"})
    texts = {t.get_text(): t for t in fig.axes[0].texts}
    assert texts["■ composite"].get_weight() == "bold" and "□ conv-key" in texts
    assert "17 variants" in "".join(texts) and "(2)" in "".join(texts)
    assert fits_a_phone(fig)


def test_a_variant_that_changes_nothing_is_refused():
    broken = dict(VARIANTS, plain=replace(VARIANTS["absolute"], absolute=True))
    with pytest.raises(ValueError, match="change no step"):
        plot_variant_map(broken)


def test_trajectory_arrows_are_magnified_about_the_start():
    snaps = [{"epoch": e, "centers": [[[0.0, 0.0], [1.0, 1.0]]] if e == 0 else [[[0.1, 0.0], [1.0, 1.2]]],
              "precision": [[np.eye(2).tolist()] * 2]} for e in (0, 1)]
    fig = plot_center_trajectories(snaps, layer=0, magnify=10)
    ends = sorted(tuple(np.round(a.xy, 6)) for a in fig.axes[0].texts)  # (column, row) of each arrow's head
    assert ends == [(0.0, 1.0), (3.0, 1.0)]  # start + 10 x displacement
    assert fig.axes[0].get_xlabel().startswith("column offset") and fig.axes[0].get_ylabel().startswith("row offset")
    assert "×10" in fig.axes[0].get_title()
    with pytest.raises(ValueError, match="magnify"):
        plot_center_trajectories(snaps, layer=0, magnify=0)


def test_setting_labels_carry_no_raw_underscores():
    settings = ["rank1 D_h=1", "rank1 D_h=C 16 heads", "rank1 D_h=1 alpha=2", "rank1 D_h=1 lr=1e-3", "cnn D_h=C"]
    for s in settings:
        label = setting_label(s)
        assert "_" not in label.replace("$D_h", ""), label  # an underscore only inside maths
    assert setting_label("rank1 D_h=C 16 heads") == "rank-1, $D_h = C$, 16 heads"
    summary = {s: {"matched": {"mean": 0.5, "std": 0.1, "runs": [0.5]}, "rel_error": {"mean": 0.02, "std": 0.01,
                                                                                      "runs": [0.02]}}
               for s in settings}
    fig = plot_imitation_summary(summary, settings)
    ticks = [t.get_text() for t in fig.axes[0].get_yticklabels()]
    assert not any("D_h=" in t for t in ticks) and fits_a_phone(fig)


def _composite_logits(q, keys, bias, table, max_distance):
    """Chapter 07's from-scratch logits of one head (the same lines as the chapter's)."""
    import torch

    n, head_dim = q.shape
    offset = torch.arange(n)[None, :] - torch.arange(n)[:, None]
    tap = offset.clamp(-max_distance, max_distance) + max_distance
    return q @ keys.T / head_dim**0.5 + bias[tap] + (q[:, None, :] * table[tap]).sum(-1) / head_dim**0.5


def test_chapter07_composite_logits_from_scratch_match_the_library():
    import torch

    from attnconv.composite import CompositeAttention

    torch.manual_seed(0)
    layer = CompositeAttention(16, 4, max_distance=2, max_length=64, fixed=True, query_dynamic=True).double()
    q, keys, _ = layer.project(torch.randn(1, 10, 16, dtype=torch.float64))
    fixed, dynamic = layer.terms
    lib = layer.logits((10,), q, keys)[0]
    for h in range(4):
        ours = _composite_logits(q[0, h], keys[0, h], fixed.weight[h], dynamic.embedding, 2)
        assert torch.allclose(ours, lib[h], atol=1e-12)
    # The check can fail: offsets read as query minus key (a reversed kernel) do not match.
    reversed_bias = _composite_logits(q[0, 1], keys[0, 1], fixed.weight[1].flip(0), dynamic.embedding, 2)
    assert not torch.allclose(reversed_bias, lib[1], atol=1e-6)


def test_chapter06_mean_distance_and_matching_from_scratch_match_the_library():
    """Chapter 06's from-scratch head attention, mean distance and brute-force matching, on a committed run."""
    import itertools
    import json
    from pathlib import Path

    import torch

    from attnconv.reach import layer_reach
    from attnconv.train.imitation import matched_tap_distance, tap_shifts

    snapshot = json.loads((Path(__file__).resolve().parents[1] / "results" / "cpu-long-sa-quadratic" /
                           "centers.jsonl").read_text().splitlines()[-1])
    centers, alphas = np.array(snapshot["centers"][0]), np.array(snapshot["precision"][0])[:, 0, 0]
    rows, cols = torch.meshgrid(torch.arange(16), torch.arange(16), indexing="ij")
    pos = torch.stack([rows.flatten(), cols.flatten()], -1).double()
    delta = pos[None] - pos[:, None]
    ours = []
    for c, a in zip(centers, alphas):
        probs = (-a * ((delta - torch.tensor(c)) ** 2).sum(-1)).softmax(-1)
        ours.append(2 * (probs * torch.cdist(pos, pos)).sum(-1).mean().item())
    assert np.allclose(ours, layer_reach(snapshot, (16, 16), 2)[0]["distance"], atol=1e-9)
    assert not np.allclose(np.array(ours) / 2, layer_reach(snapshot, (16, 16), 2)[0]["distance"], atol=1e-3), \
        "in cells rather than pixels, the check fails"
    taps = tap_shifts(3)
    cost = torch.cdist(taps.double(), torch.tensor(centers)).numpy()
    brute = min(cost[np.arange(9), list(p)].sum() for p in itertools.islice(itertools.permutations(range(9)), None)) / 9
    assert abs(brute - matched_tap_distance(torch.tensor(centers), taps)[0]) < 1e-9


def test_chapter06_explorer_says_its_centres_moved_in_cells():
    """The explorer's snapshot labels give the distance in grid cells (one cell is 2 pixels), as the chapter does."""
    import json
    from pathlib import Path

    from attnconv.figures.interactive import quadratic_run_viewer

    run = Path(__file__).resolve().parents[1] / "results" / "cpu-quick-sa-quadratic"
    records = [json.loads(line) for line in (run / "centers.jsonl").read_text().splitlines()]
    viewer = quadratic_run_viewer([records[0], records[-1]], stride=4)
    labels = viewer.labels["snapshot"]
    assert labels[-1] == "epoch 6: centres moved 0.13 cells" and not any("px" in label for label in labels)
