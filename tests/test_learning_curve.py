"""Fine-tuned accuracy against pretraining tokens: pairing runs, the log-linear fit, and the statement of it."""

from __future__ import annotations

import math
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import pytest

from attnconv.figures import plot_learning_curve
from attnconv.train.learning_curve import (CurvePoint, extrapolation_statement, learning_curve, loglinear_fit,
                                           pretraining_tokens)
from attnconv.train.results import BertRun, load_bert_runs

RESULTS = Path(__file__).resolve().parents[1] / "results"
MODEL = {"variant": "absolute", "hidden_dim": 256, "depth": 4}


def _pre(name, config, steps, variant="absolute", hidden=256):
    prov = {"config": {"batch_size": 32, "max_length": 64, "model": {**MODEL, "variant": variant, "hidden_dim": hidden}}}
    return BertRun(name, {"variant": variant, "config": config, "steps": steps}, prov, [], None)


def _ft(pre, task, accs, config="cpu-quick"):
    mean = sum(accs) / len(accs)
    return BertRun(f"{pre.name}-{task}", {"task": task, "variant": pre.final["variant"], "config": config,
                                         "pretrained": f"results/{pre.name}", "test_acc": accs,
                                         "test_acc_mean": mean, "test_acc_std": 0.01}, {}, [], None)


def test_points_pair_runs_of_one_model_and_recipe():
    quick, long = _pre("q", "cpu-quick", 1500), _pre("l", "cpu-long", 4000)
    mini = _pre("m", "cpu-mini", 800, hidden=128)
    runs = [quick, long, mini, _ft(quick, "mr", [0.6, 0.62]), _ft(long, "mr", [0.66, 0.66, 0.66]),
            _ft(mini, "mr", [0.55]), _ft(long, "subj", [0.8], config="gpu-10min")]
    points = learning_curve(runs)
    assert [(p.pretraining, p.task, p.tokens, p.seeds) for p in points] == [
        ("q", "mr", 1500 * 32 * 64, 2), ("l", "mr", 4000 * 32 * 64, 3)]  # not the smaller model, not another recipe
    assert pretraining_tokens({"batch_size": 32, "max_length": 64}, 1500) == 3_072_000
    with pytest.raises(ValueError, match="no pretraining run of config 'cpu-long'"):
        learning_curve([quick], reference="cpu-long")


def test_a_record_older_than_an_option_pairs_with_one_at_its_default():
    """A run recorded before ``hidden_act`` existed had its default, so it shares a curve with a newer run that
    records ``"gelu"``; a newer run with another activation does not."""
    old, new = _pre("old", "cpu-quick", 1500), _pre("new", "cpu-longer", 8000)
    new.provenance["config"]["model"].update(hidden_act="gelu", conv_projections=None)
    other = _pre("other", "cpu-longer", 8000)
    other.provenance["config"]["model"]["hidden_act"] = "gelu_new"
    runs = [old, new, other] + [_ft(r, "mr", [0.6]) for r in (old, new, other)]
    assert [p.pretraining for p in learning_curve(runs)] == ["old", "new"]


def _point(tokens, acc):
    return CurvePoint("absolute", "mr", tokens, tokens // 2048, acc, 0.01, 3, "x", "cpu-quick")


def test_loglinear_fit_and_crossing():
    fit = loglinear_fit([_point(10**6, 0.60), _point(10**7, 0.65), _point(10**8, 0.70)])
    assert fit.per_decade == pytest.approx(0.05) and fit.budgets == 3
    assert fit.predict(10**9) == pytest.approx(0.75)
    assert fit.tokens_for(0.80) == pytest.approx(10**10)
    assert loglinear_fit([_point(10**6, 0.6), _point(10**7, 0.55)]).tokens_for(0.8) is None
    with pytest.raises(ValueError, match="two distinct"):
        loglinear_fit([_point(10**6, 0.6), _point(10**6, 0.61)])


def test_extrapolation_statement_says_what_the_fit_implies():
    one = extrapolation_statement([_point(3_072_000, 0.64)], 0.69, "bag of words")
    assert one == ("absolute on MR: 64.0% after 3.07M pretraining tokens, 5.0 points below bag of words (69.0%); "
                   "one budget, so no trend yet.")
    two = extrapolation_statement([_point(10**6, 0.60), _point(10**7, 0.65)], 0.70, "bag of words")
    assert "+5.0 points per tenfold more tokens" in two and "at about 100M tokens, 10 times" in two
    flat = extrapolation_statement([_point(10**6, 0.60), _point(10**7, 0.59)], 0.70)
    assert "does not rise" in flat
    above = extrapolation_statement([_point(10**6, 0.60), _point(10**7, 0.75)], 0.70)
    assert "above the baseline" in above and "would reach" not in above
    slow = extrapolation_statement([_point(3 * 10**6, 0.598), _point(8 * 10**6, 0.605)], 0.69)
    assert "at about" in slow and "e+" not in slow and "T tokens" in slow and "times the largest" in slow
    level = extrapolation_statement([_point(10**6, 0.60), _point(10**7, 0.7003)], 0.70)
    assert "level with the baseline (70.0%)" in level and "points above" not in level and "would reach" not in level
    flat = extrapolation_statement([_point(10**6, 0.5300), _point(10**7, 0.5296)], 0.56)
    assert "gains 0.0 points per tenfold" in flat and "-0.0" not in flat, flat
    with pytest.raises(ValueError, match="one variant and one task"):
        extrapolation_statement([_point(10**6, 0.6), CurvePoint("fixed", "mr", 10**7, 1, 0.6, 0, 1, "y", "c")], 0.7)


def test_committed_runs_give_three_budgets_for_the_long_variants():
    runs = load_bert_runs(RESULTS)
    points = learning_curve(runs)
    assert points and all(p.config in ("cpu-quick", "cpu-long", "cpu-longer") for p in points)
    quick = [p for p in points if p.config == "cpu-quick"]
    assert {p.tokens for p in quick} == {1500 * 32 * 64}
    for variant in ("composite-noabs", "absolute"):
        for task in ("mr", "subj", "rte"):
            budgets = {p.tokens for p in points if p.variant == variant and p.task == task}
            assert budgets == {1500 * 32 * 64, 4000 * 32 * 64, 8000 * 32 * 64}, (variant, task)
    assert all(p.pretraining.startswith("bert-cpu-") for p in points)
    fig = plot_learning_curve(points, {"mr": 0.7, "subj": 0.85, "rte": 0.55}, ("mr", "subj", "rte"))
    assert len(fig.axes) == 3 and fig.axes[0].get_xscale() == "log"
    assert not any(math.isnan(p.acc_mean) for p in points)
