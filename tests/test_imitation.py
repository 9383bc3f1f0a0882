"""The imitation experiment of chapter 06: matching, distances, and the training loop at tiny size."""

import itertools

import numpy as np
import pytest
import torch
from torch import nn

from attnconv.construct.image import conv_to_mhsa
from attnconv.train.imitation import (ImitationConfig, _snapshot, imitate, imitate_lightconv, matched_tap_distance,
                                      min_cost_assignment, rank_one_conv, tap_shifts)
from attnconv.train.imitation_sweep import image_crops, summarize


def brute_force(cost):
    n, m = cost.shape
    return min(sum(cost[i, p[i]] for i in range(n)) for p in itertools.permutations(range(m), n))


def greedy(cost):  # a plausible wrong matcher: each row takes its cheapest free column
    taken, total = set(), 0.0
    for row in cost:
        j = min((j for j in range(len(row)) if j not in taken), key=lambda j: row[j])
        taken.add(j)
        total += row[j]
    return total


def test_assignment_is_optimal_on_random_and_tied_costs():
    rng = np.random.default_rng(0)
    for trial in range(200):
        n = int(rng.integers(1, 6))
        m = int(rng.integers(n, 7))
        cost = rng.random((n, m)) if trial % 2 else np.round(3 * rng.random((n, m)))
        cols = min_cost_assignment(cost)
        assert len(set(cols.tolist())) == n
        assert cost[np.arange(n), cols].sum() == pytest.approx(brute_force(cost))


def test_greedy_matching_would_fail_this_check():
    cost = np.array([[1.0, 2.0], [1.0, 10.0]])
    cols = min_cost_assignment(cost)
    assert cost[np.arange(2), cols].sum() == pytest.approx(3.0)
    assert greedy(cost) == pytest.approx(11.0)  # the check above tells the two apart


def test_assignment_rejects_more_rows_than_columns():
    with pytest.raises(ValueError, match="n <= m"):
        min_cost_assignment(np.zeros((3, 2)))


def test_tap_shifts():
    taps = tap_shifts(3)
    assert taps.shape == (9, 2) and taps[0].tolist() == [-1, -1] and taps[4].tolist() == [0, 0]
    assert tap_shifts(5).abs().max() == 2
    with pytest.raises(ValueError, match="odd"):
        tap_shifts(4)


def test_matched_tap_distance_on_a_hand_made_example():
    taps = tap_shifts(3)
    perm = torch.tensor([4, 0, 8, 1, 7, 2, 6, 3, 5])
    centers = taps[perm].clone()
    centers[3] += torch.tensor([0.3, 0.4])  # one head 0.5 away from its tap
    distance, heads = matched_tap_distance(centers, taps)
    assert distance == pytest.approx(0.5 / 9)
    assert torch.equal(perm[torch.as_tensor(heads)], torch.arange(9))
    unmatched = (centers - taps).norm(dim=1).mean().item()  # pairing head h with tap h ignores the permutation
    assert unmatched > 0.5
    extra = torch.cat([centers, torch.full((7, 2), 9.0)])  # 16 heads: the far ones are left out
    assert matched_tap_distance(extra, taps)[0] == pytest.approx(0.5 / 9)
    with pytest.raises(ValueError, match="at least as many heads"):
        matched_tap_distance(centers[:8], taps)


def test_the_construction_scores_zero_error_and_zero_distance():
    torch.manual_seed(0)
    teacher = rank_one_conv(3, 4, 3, seed=1).double()
    with torch.no_grad():  # make every tap rank 1 to float64 rounding, so that conv_to_mhsa factors it with D_h = 1
        w = teacher.weight.permute(2, 3, 0, 1)  # (K, K, C_out, C_in)
        u, sv, vh = torch.linalg.svd(w)
        teacher.weight.copy_((sv[..., :1, None] * u[..., :1] @ vh[..., :1, :]).permute(2, 3, 0, 1))
    x = torch.randn(6, 8, 8, 3, dtype=torch.float64)
    y = teacher(x.permute(0, 3, 1, 2)).permute(0, 2, 3, 1)[:, 1:-1, 1:-1]
    exact = conv_to_mhsa(teacher, alpha=None, head_dim=1).attention  # rank-1 taps: D_h = 1 suffices
    snap = _snapshot(exact, x, y, 1, tap_shifts(3))
    assert snap["rel_error"] < 1e-5 and snap["matched"] == 0.0 and min(snap["mass"]) == 1.0
    shifted = conv_to_mhsa(teacher, alpha=None, head_dim=1).attention
    shifted.positional.centers[0] += 1  # one head on the wrong tap: the error and the distance both see it
    snap = _snapshot(shifted, x, y, 1, tap_shifts(3))
    assert snap["rel_error"] > 0.05 and snap["matched"] > 0.0


def test_rank_one_conv_has_rank_one_taps():
    w = rank_one_conv(3, 5, 3).weight.detach()
    for a, b in itertools.product(range(3), repeat=2):
        assert torch.linalg.matrix_rank(w[:, :, a, b]) == 1


@pytest.mark.parametrize("encoding", ["quadratic", "learned", "quadratic_content"])
def test_imitation_error_drops_at_tiny_size(encoding):
    torch.manual_seed(0)
    images = torch.randn(64, 16, 16, 3)
    crops, held = image_crops(images, 256, 8, seed=1), image_crops(images, 32, 8, seed=2)
    config = ImitationConfig(encoding=encoding, head_dim=2, steps=150, log_every=50, lr=3e-2)
    rec = imitate(rank_one_conv(3, 4, 3), crops, config, held)
    assert rec["steps"] == [0, 50, 100, 150]
    assert np.array(rec["centers"]).shape == (4, 9, 2) and len(rec["mass"][-1]) == 9
    assert rec["rel_error"][-1] < 0.6 * rec["rel_error"][0]
    assert (rec["alpha"] is None or rec["alpha"][0] is None) == (encoding == "learned")


def test_imitation_checks_its_inputs():
    with pytest.raises(ValueError, match="encoding"):
        ImitationConfig(encoding="sinusoidal")
    crops = torch.randn(8, 8, 8, 3)
    with pytest.raises(ValueError, match="odd square kernel"):
        imitate(nn.Conv2d(3, 4, 2), crops, ImitationConfig(steps=1), crops)
    with pytest.raises(ValueError, match="C_in=3"):
        imitate(rank_one_conv(3, 4, 3), crops[..., :2], ImitationConfig(steps=1), crops)


def test_lightconv_analogue_learns_the_kernel_at_tiny_size():
    torch.manual_seed(0)
    tokens = torch.randn(300, 20, 8)
    rec = imitate_lightconv(tokens[:256], tokens[256:], num_heads=2, kernel_size=3, max_distance=4, steps=200,
                            log_every=100, lr=3e-2)
    target = torch.tensor(rec["target"])
    assert target.shape == (2, 9) and torch.allclose(target.sum(1), torch.ones(2))
    assert target[:, [0, 1, 2, 6, 7, 8]].abs().max() == 0  # zero outside the 3 taps
    assert rec["rel_error"][-1] < 0.5 * rec["rel_error"][0]
    assert rec["kernel_tv"][-1] < rec["kernel_tv"][0]


def test_summarize_gives_mean_and_spread_over_seeds():
    records = [{"setting": "a", "wall_s": 1.0, "rel_error": [1.0, e], "matched": [2.0, d], "mass": [[0.5], [0.9]],
                "alpha": [[0.5], [a]]} for e, d, a in ((0.1, 0.2, 4.0), (0.3, 0.4, 8.0))]
    s = summarize(records)["a"]
    assert s["seeds"] == 2 and s["rel_error"]["mean"] == pytest.approx(0.2) and s["rel_error"]["std"] == pytest.approx(0.1)
    assert s["matched"]["mean"] == pytest.approx(0.3) and s["alpha"]["median"] == pytest.approx(6.0)


def test_imitation_figures_draw_from_records():
    import matplotlib

    matplotlib.use("Agg")
    from attnconv.figures.imitation import (plot_imitation_curves, plot_imitation_paths, plot_imitation_summary,
                                            plot_init_comparison, plot_kernel_imitation)

    rec = {"setting": "s", "kernel_size": 3, "steps": [0, 1], "rel_error": [1.0, 0.1], "matched": [1.0, 0.2],
           "centers": [[[0.0, 0.0]] * 9, [[1.0, 1.0]] * 9], "wall_s": 1.0, "mass": [[0.1] * 9, [0.5] * 9]}
    assert len(plot_imitation_paths([rec, rec], ["a", "b"]).axes) == 2
    with pytest.raises(ValueError, match="one title per record"):
        plot_imitation_paths([rec], ["a", "b"])
    assert len(plot_imitation_curves([rec], ["s"]).axes) == 2
    with pytest.raises(ValueError, match="no records"):
        plot_imitation_curves([rec], ["other"])
    assert len(plot_imitation_summary(summarize([rec]), ["s"]).axes) == 2
    kernels = {"target": [[0.0, 1.0, 0.0]] * 2, "kernels": [[[1 / 3] * 3] * 2, [[0.0, 1.0, 0.0]] * 2], "steps": [0, 5]}
    assert len(plot_kernel_imitation(kernels).axes) == 2
    history = [{"epoch": 1, "test_acc": 0.2}, {"epoch": 2, "test_acc": 0.3}]
    assert len(plot_init_comparison({"grid": [history, history]}).axes) == 1


def test_quick_sweep_writes_its_records_and_restores_the_thread_count(tmp_path, monkeypatch):
    import json

    from attnconv.train.imitation_sweep import QUICK_SETTINGS, run_sweep

    monkeypatch.setenv("ATTNCONV_DATA", str(tmp_path / "nothing"))  # no CIFAR-10: the generated stand-in
    threads = torch.get_num_threads()
    result = run_sweep(tmp_path / "out", quick=True)
    assert torch.get_num_threads() == threads
    assert [r["setting"] for r in result["records"]] == list(QUICK_SETTINGS)
    assert all(r["rel_error"][-1] < r["rel_error"][0] for r in result["records"])
    prov = json.loads((tmp_path / "out" / "provenance.json").read_text())
    assert prov["quick"] is True and "dirty" in prov and not (tmp_path / "out" / "records.partial.jsonl").exists()
    with pytest.raises(ValueError, match="settings must be among"):
        run_sweep(None, settings=("no such setting",))
