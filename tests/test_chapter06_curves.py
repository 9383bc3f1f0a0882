"""Chapter 06's learning curves, centre grid and papers' table: the twins of the chapter's checks, each shown to fail
for a plausible bug, and the readers of run folders on finished, partial and malformed runs."""

from __future__ import annotations

import io
import json
import math
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
from PIL import Image  # noqa: E402

from attnconv.figures import PhoneFigure, phone_figure  # noqa: E402
from attnconv.figures.center_grid import grid_half_width, plot_center_grid  # noqa: E402
from attnconv.figures.learning_curves import PANELS, plot_learning_curves  # noqa: E402
from attnconv.figures.legibility import MIN_TEXT_KEY, MIN_TEXT_PX, PHONE_COLUMN_PX  # noqa: E402
from attnconv.train import named_config  # noqa: E402
from attnconv.train.epoch_curves import curve_trend, read_curve, run_budget  # noqa: E402
from attnconv.train.runs import read_jsonl  # noqa: E402

RESULTS = Path(__file__).resolve().parents[1] / "results"
MODELS = ("sa-quadratic", "sa-learned", "resnet18")
RUNS = [f"{config}-{name}" for config in ("cpu-long", "cpu-quick") for name in MODELS]


def curves_match_records(fig, folders: dict[str, Path]) -> bool:
    """The chapter's check: every drawn line and star equals the metrics.jsonl and final.json of its run folder."""
    for panel, ax in enumerate(fig.axes[:3]):
        lines = {line.get_gid(): line for line in ax.lines}
        for name, folder in folders.items():
            raw = read_jsonl(folder / "metrics.jsonl")
            x = [r["epoch"] if panel < 2 else r["wall_time_s"] / 60 for r in raw]
            y = [r["train_loss"] if panel == 1 else 100 * r["test_acc"] for r in raw]
            line = lines.get(f"{name}/{'train_loss' if panel == 1 else 'test_acc'}")
            if line is None or len(line.get_xdata()) != len(x):
                return False
            if not (np.allclose(line.get_xdata(), x) and np.allclose(line.get_ydata(), y)):
                return False
            if panel != 1 and (folder / "final.json").is_file():
                star = lines.get(f"{name}/full_test_acc")
                full = json.loads((folder / "final.json").read_text())["full_test_acc"]
                if star is None or star.get_xdata()[0] != x[-1] or not np.isclose(star.get_ydata()[0], 100 * full):
                    return False
    return True


def grid_matches_snapshots(fig, snapshots) -> bool:
    """The chapter's check: each dot is a centre at (column, row), each circle has radius sqrt(ln 2 / α)."""
    artists = {a.get_gid(): a for ax in fig.axes for a in [*ax.lines, *ax.patches] if a.get_gid()}
    for t, snap in enumerate(snapshots):
        c, alpha = np.array(snap["centers"]), np.array(snap["precision"])[..., 0, 0]
        for layer, h in np.ndindex(*c.shape[:2]):
            dot, circle = artists[f"centre {t} {layer} {h}"], artists[f"circle {t} {layer} {h}"]
            if not np.allclose([dot.get_xdata()[0], dot.get_ydata()[0]], c[layer, h, ::-1]):
                return False
            if not np.isclose(circle.width / 2, math.sqrt(math.log(2) / alpha[layer, h])):
                return False
    return True


def shown_text_px(png: bytes, column_px: float = PHONE_COLUMN_PX) -> float:
    image = Image.open(io.BytesIO(png))
    return float(image.text[MIN_TEXT_KEY]) * min(1.0, column_px / image.width)


def write_run(folder: Path, epochs: int, finished: bool, model: str = "sa-quadratic") -> Path:
    folder.mkdir(parents=True)
    records = [{"epoch": e, "lr": 0.1 * (1 - e / epochs), "train_loss": 2.0 / e, "train_acc": 0.1 * e,
                "test_acc": 0.1 * e + 0.01, "wall_time_s": 60.0 * e} for e in range(1, epochs + 1)]
    (folder / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    if finished:
        (folder / "final.json").write_text(json.dumps({"model": model, "config": "smoke", "epochs": epochs,
                                                       "params": 1000, "weight_flops": 5000,
                                                       "full_test_acc": 0.5, "full_test_images": 10_000}))
        (folder / "provenance.json").write_text(json.dumps({"device": "CPU: test", "train_images": 256,
                                                            "test_images": 100, "wall_time_s": 60.0 * epochs,
                                                            "config": {"name": "smoke", "model": model}}))
    return folder


# --- the committed runs: the chapter's checks ---

def test_learning_curves_of_the_committed_runs_are_their_records():
    curves = [read_curve(RESULTS / name) for name in RUNS]
    fig = plot_learning_curves(curves)
    assert curves_match_records(fig, {name: RESULTS / name for name in RUNS})
    assert [ax.get_xlabel() for ax in fig.axes[:3]] == [p[2] for p in PANELS]
    plt.close(fig)


def test_the_curves_check_fails_for_a_run_drawn_under_another_name():
    """The check can fail: the cpu-quick run's records drawn as if they were the cpu-long run's."""
    quick = read_curve(RESULTS / "cpu-quick-sa-quadratic")
    fig = plot_learning_curves([quick])
    assert not curves_match_records(fig, {"cpu-quick-sa-quadratic": RESULTS / "cpu-long-sa-quadratic"})
    plt.close(fig)


def test_the_curves_check_fails_when_accuracy_is_drawn_as_a_fraction():
    curve = read_curve(RESULTS / "cpu-long-resnet18")
    fig = plot_learning_curves([curve])
    line = next(line for line in fig.axes[0].lines if line.get_gid() == "cpu-long-resnet18/test_acc")
    line.set_ydata(np.asarray(line.get_ydata()) / 100)  # a plausible bug: no conversion to percent
    assert not curves_match_records(fig, {"cpu-long-resnet18": RESULTS / "cpu-long-resnet18"})
    plt.close(fig)


def test_the_trend_under_the_figure_is_recomputed_from_metrics():
    for name in MODELS:
        curve = read_curve(RESULTS / f"cpu-long-{name}")
        t = curve_trend(curve, last=3)
        acc = [r["test_acc"] for r in read_jsonl(RESULTS / f"cpu-long-{name}" / "metrics.jsonl")]
        loss = [r["train_loss"] for r in read_jsonl(RESULTS / f"cpu-long-{name}" / "metrics.jsonl")]
        assert t["window"] == 3 and t["epochs"] == len(acc)
        assert np.isclose(t["gain"], acc[-1] - acc[-4]) and np.isclose(t["last_gain"], acc[-1] - acc[-2])
        assert np.isclose(t["loss_drop"], 1 - loss[-1] / loss[-4])
        assert np.isclose(t["noise"], math.sqrt(acc[-1] * (1 - acc[-1]) / 2000))
        assert not np.isclose(t["gain"], acc[-1] - acc[-3]), "a window one epoch short gives another gain"


def test_the_centre_grid_draws_the_first_and_last_snapshot():
    snapshots = read_jsonl(RESULTS / "cpu-long-sa-quadratic" / "centers.jsonl")
    first_last = [snapshots[0], snapshots[-1]]
    for layout in ("row", "column"):
        fig = plot_center_grid(first_last, layout=layout)
        assert grid_matches_snapshots(fig, first_last)
        assert not grid_matches_snapshots(fig, [snapshots[0], snapshots[-2]]), "another snapshot does not match"
        plt.close(fig)
    assert snapshots[0]["epoch"] == 0 and snapshots[-1]["epoch"] == named_config("cpu-long").epochs


def test_the_grid_check_fails_for_a_circle_drawn_with_alpha_upside_down():
    snapshots = read_jsonl(RESULTS / "cpu-long-sa-quadratic" / "centers.jsonl")
    fig = plot_center_grid([snapshots[-1]])
    circle = next(p for ax in fig.axes for p in ax.patches if p.get_gid() == "circle 0 0 0")
    alpha = snapshots[-1]["precision"][0][0][0][0]
    circle.width = circle.height = 2 * math.sqrt(math.log(2) * alpha)  # radius sqrt(ln 2 * α): a plausible slip
    assert not grid_matches_snapshots(fig, [snapshots[-1]])
    plt.close(fig)


def test_the_papers_table_rows_are_the_records():
    for name in RUNS:
        b = run_budget(read_curve(RESULTS / name))
        final = json.loads((RESULTS / name / "final.json").read_text())
        prov = json.loads((RESULTS / name / "provenance.json").read_text())
        assert b["full_test_acc"] == final["full_test_acc"] and b["full_test_images"] == 10_000
        assert b["epochs"] == final["epochs"] == len(read_jsonl(RESULTS / name / "metrics.jsonl"))
        assert b["train_images"] == prov["train_images"] and b["minutes"] == prov["wall_time_s"] / 60
        assert b["hardware"] == prov["device"]
    paper = named_config("paper")
    assert (paper.sa.depth, paper.sa.num_heads, paper.sa.hidden_dim, paper.epochs) == (6, 9, 400, 300)


# --- phone-friendly and legible ---

def test_both_figures_are_legible_on_a_phone():
    curves = [read_curve(RESULTS / name) for name in RUNS]
    snapshots = read_jsonl(RESULTS / "cpu-long-sa-quadratic" / "centers.jsonl")
    figures = [phone_figure(lambda n: plot_learning_curves(curves, ncols=n), wide=3, narrow=1),
               PhoneFigure(plot_center_grid([snapshots[0], snapshots[-1]], layout="row"),
                           plot_center_grid([snapshots[0], snapshots[-1]], layout="column"))]
    for figure in figures:
        assert shown_text_px(figure.narrow_png) >= MIN_TEXT_PX
        assert shown_text_px(figure.wide_png, column_px=768) >= MIN_TEXT_PX
        assert f"max-width: {figure.breakpoint_px}px" in figure._repr_html_()


def test_the_legibility_check_can_fail():
    """The same curves drawn wide, shown whole in a phone's column, have text under 9 px."""
    curves = [read_curve(RESULTS / name) for name in RUNS]
    fig = plot_learning_curves(curves, ncols=3)
    from attnconv.figures.legibility import png_bytes

    assert shown_text_px(png_bytes(fig)) < MIN_TEXT_PX
    plt.close(fig)


# --- run folders of every kind ---

def test_a_run_still_training_is_drawn_as_far_as_it_got(tmp_path):
    folder = write_run(tmp_path / "partial", epochs=2, finished=False)
    curve = read_curve(folder)
    assert not curve.finished and curve.model is None and curve.test_images is None
    assert curve.name == "partial" and list(curve.epoch) == [1, 2] and np.allclose(curve.minutes, [1, 2])
    fig = plot_learning_curves([curve], ncols=1)
    assert curves_match_records(fig, {"partial": folder})
    assert not any(line.get_gid().endswith("full_test_acc") for ax in fig.axes for line in ax.lines if line.get_gid())
    plt.close(fig)
    assert math.isnan(curve_trend(curve)["noise"]) and curve_trend(curve)["window"] == 1
    with pytest.raises(ValueError, match="finished run"):
        run_budget(curve)


def test_a_run_trained_again_into_the_same_folder_is_read_anew(tmp_path):
    folder = write_run(tmp_path / "run", epochs=3, finished=True)
    before = read_curve(folder)
    records = read_jsonl(folder / "metrics.jsonl") + [{"epoch": 4, "lr": 0.0, "train_loss": 0.4, "train_acc": 0.5,
                                                        "test_acc": 0.47, "wall_time_s": 250.0}]
    (folder / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    after = read_curve(folder)
    assert len(before.epoch) == 3 and len(after.epoch) == 4 and after.test_acc[-1] == 0.47
    t = curve_trend(after)
    assert np.isclose(t["gain"], 0.47 - 0.11) and np.isclose(t["noise"], math.sqrt(0.47 * 0.53 / 100))


def test_bad_run_folders_and_arguments_are_refused(tmp_path):
    with pytest.raises(FileNotFoundError, match="metrics.jsonl"):
        read_curve(tmp_path)
    folder = write_run(tmp_path / "gap", epochs=3, finished=False)
    records = read_jsonl(folder / "metrics.jsonl")
    (folder / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in [records[0], records[2]]))
    with pytest.raises(ValueError, match="epochs must run"):
        read_curve(folder)
    del records[1]["test_acc"]
    (folder / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    with pytest.raises(ValueError, match="lacks"):
        read_curve(folder)
    one = read_curve(write_run(tmp_path / "one", epochs=1, finished=False))
    with pytest.raises(ValueError, match="at least two epochs"):
        curve_trend(one)
    with pytest.raises(ValueError, match="last must be"):
        curve_trend(read_curve(RESULTS / "cpu-long-resnet18"), last=0)
    with pytest.raises(ValueError, match="curves must be"):
        plot_learning_curves([])
    with pytest.raises(ValueError, match="ncols"):
        plot_learning_curves([one], ncols=2)


def test_the_grid_refuses_bad_snapshots_and_widens_for_far_centres():
    snap = {"epoch": 1, "centers": [[[0.0, 0.0], [7.2, -1.0]]], "precision": [[np.eye(2).tolist()] * 2]}
    assert grid_half_width([snap]) == 7  # a 15 x 15 window holds the centre 7.2 cells away
    assert grid_half_width([{**snap, "centers": [[[0.0, 0.0], [1.0, 1.0]]]}]) == 4  # at least the paper's 9 x 9
    fig = plot_center_grid([snap])
    assert fig.axes[0].get_xlim() == (-7.5, 7.5) and grid_matches_snapshots(fig, [snap])
    plt.close(fig)
    with pytest.raises(ValueError, match="at least one"):
        plot_center_grid([])
    with pytest.raises(ValueError, match="layout"):
        plot_center_grid([snap], layout="grid")
    with pytest.raises(ValueError, match="labels"):
        plot_center_grid([snap], labels=["a", "b"])
    with pytest.raises(ValueError, match="precision"):
        plot_center_grid([{"epoch": 1, "centers": [[[0.0, 0.0]]], "precision": [[[1.0, 0.0]]]}])


def test_the_compute_ratio_under_the_table_uses_the_papers_flops():
    """The paper's weight FLOPs per image (6.2 G, its Table 2) times images seen, over the run's: the chapter's
    ratio. The model_cost of the paper-size model gives the paper's 6.2 G; counting all FLOPs would not."""
    import torch

    from attnconv.models import VisionConfig, build_model, model_cost

    torch.manual_seed(0)
    cost = model_cost(build_model("sa-quadratic", VisionConfig()))
    assert abs(cost.weight_flops - 6.2e9) / 6.2e9 < 0.01
    assert abs(cost.flops - 6.2e9) / 6.2e9 > 0.01, "all FLOPs are not the paper's count"
    b = run_budget(read_curve(RESULTS / "cpu-long-sa-quadratic"))
    ratio = cost.weight_flops * 300 * 50_000 / (b["weight_flops"] * b["epochs"] * b["train_images"])
    assert ratio == pytest.approx(6.2e9 * 300 * 50_000 / (b["weight_flops"] * b["epochs"] * b["train_images"]),
                                  rel=0.01)
