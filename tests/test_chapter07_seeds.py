"""Chapter 07's comparison across pretraining seeds (``attnconv.train.seeds``): runs grouped by pretraining seed,
the rule that ranks two variants only when three seeds separate them, and the committed seed-0 records still read
the same beside extra seeds."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from attnconv.train import bert_results_table, load_bert_runs
from attnconv.train.learning_curve import learning_curve
from attnconv.train.seeds import order, pretraining_seed, seed_runs, seed_table

RESULTS = Path(__file__).resolve().parents[1] / "results"


def _copy_seed(tmp: Path, variant: str, seed: int, shift: float) -> None:
    """A stand-in for pretraining seed ``seed`` of ``variant``: the seed-0 records with the seed set, the loss and
    every fine-tuned accuracy moved by ``shift``."""
    src = RESULTS / f"bert-cpu-quick-{variant}"
    pre = tmp / f"{src.name}-seed{seed}"
    shutil.copytree(src, pre)
    prov = json.loads((pre / "provenance.json").read_text())
    prov["config"]["seed"] = seed
    (pre / "provenance.json").write_text(json.dumps(prov))
    final = json.loads((pre / "final.json").read_text())
    final["val_loss"] += shift
    (pre / "final.json").write_text(json.dumps(final))
    for task in ("subj", "mr"):
        ft = tmp / f"{pre.name}-{task}"
        shutil.copytree(RESULTS / f"{src.name}-{task}", ft)
        f = json.loads((ft / "final.json").read_text())
        f["pretrained"] = f"results/{pre.name}"
        f["test_acc"] = [a + shift for a in f["test_acc"]]
        f["test_acc_mean"] = float(np.mean(f["test_acc"]))
        (ft / "final.json").write_text(json.dumps(f))


@pytest.fixture(scope="module")
def with_seeds(tmp_path_factory):
    """The committed BERT records, plus stand-ins for seeds 1 and 2 of absolute and composite-noabs."""
    tmp = tmp_path_factory.mktemp("seeds")
    for run in RESULTS.glob("bert-*"):
        if (run / "final.json").is_file() and "-seed" not in run.name:
            shutil.copytree(run, tmp / run.name, ignore=shutil.ignore_patterns("*.pt", "tokenizer.json"))
    for seed, shift in ((1, 0.004), (2, -0.003)):
        _copy_seed(tmp, "absolute", seed, shift)
        _copy_seed(tmp, "composite-noabs", seed, -shift)
    return tmp


def test_seed_runs_group_every_pretraining_seed(with_seeds):
    groups = seed_runs(load_bert_runs(with_seeds))
    assert groups["absolute"].seeds == (0, 1, 2) and groups["composite"].seeds == (0,)
    assert groups["absolute"].names[0] == "bert-cpu-quick-absolute"
    subj = groups["absolute"].accuracy["subj"]
    assert sorted(subj) == [0, 1, 2] and all(len(a) == 3 for a in subj.values())
    assert len(groups["absolute"].all_runs("subj")) == 9 and len(groups["absolute"].seed_means("subj")) == 3
    assert len(groups["absolute"].seed_means("rte")) == 1  # RTE was fine-tuned from seed 0 only
    headers, rows = seed_table(groups, ("mr", "subj", "rte"))
    row = dict(zip(headers, next(r for r in rows if r[0] == "absolute")))
    assert row["pretraining seeds"] == "0, 1, 2" and row["SUBJ"].endswith("(9)") and row["RTE"].endswith("(3)")
    assert "±" not in next(r for r in rows if r[0] == "composite")[2]  # one pretraining run: no loss spread


def test_a_second_run_of_a_seed_is_refused(with_seeds, tmp_path):
    runs = load_bert_runs(with_seeds)
    twin = next(r for r in runs if r.name == "bert-cpu-quick-absolute-seed1")
    with pytest.raises(ValueError, match="share a seed"):
        seed_runs(runs + [type(twin)("bert-twin", twin.final, twin.provenance, twin.history, twin.kernels)])
    with pytest.raises(ValueError, match="config"):
        seed_runs(runs, config="no-such-config")
    with pytest.raises(ValueError, match="pretraining run"):
        pretraining_seed(next(r for r in runs if not r.is_pretraining))


def test_order_ranks_only_what_three_seeds_separate():
    assert order([0.85, 0.86, 0.87], [0.83, 0.84, 0.845]) == 1
    assert order([0.83, 0.84, 0.845], [0.85, 0.86, 0.87]) == -1
    assert order([0.83, 0.86, 0.87], [0.84, 0.85, 0.845]) == 0  # overlapping seeds rank nothing
    with pytest.raises(ValueError, match="3 pretraining seeds, got 1"):
        order([0.86], [0.83, 0.84, 0.845])  # one pretraining run ranks nothing, however tight its fine-tunings
    # The wrong rule, fine-tuning seeds of one pretraining run taken as independent runs, would rank these two:
    # their fine-tuning seeds do not overlap, but their pretraining-seed means do.
    a, b = [[0.86, 0.861, 0.862], [0.82, 0.821, 0.822], [0.85, 0.85, 0.85]], [[0.84, 0.84, 0.84]] * 3
    assert min(a[0]) > max(b[0]) and order(np.mean(a, 1), np.mean(b, 1)) == 0


def test_extra_seeds_leave_the_seed0_tables_and_curve_as_they_were(with_seeds):
    committed = [r for r in load_bert_runs(RESULTS) if "-seed" not in r.name]
    extended = load_bert_runs(with_seeds)
    assert learning_curve(extended) == learning_curve(committed)  # the budgets are seed-0 runs
    assert len(learning_curve(extended, pretraining_seed=None)) > len(learning_curve(committed))
    for config in ("cpu-long", "cpu-longer", "cpu-mini"):
        assert bert_results_table(extended, config=config) == bert_results_table(committed, config=config)
    table = bert_results_table(extended, config="cpu-quick").splitlines()
    assert table[: len(bert_results_table(committed, config="cpu-quick").splitlines())] != []
    assert sum("(seed 1)" in line for line in table) == 2 and sum("(seed 2)" in line for line in table) == 2
    seed0 = [line for line in table if "(seed" not in line]
    assert seed0 == bert_results_table(committed, config="cpu-quick").splitlines()


def test_committed_seed_runs_are_grouped_with_seed0():
    """Whatever pretraining seeds are committed: each is a cpu-quick run of the seed-0 run's model and recipe."""
    from attnconv.train.seeds import recipe_differences

    runs = load_bert_runs(RESULTS)
    groups = seed_runs(runs)
    by_name = {r.name: r for r in runs}
    for variant, g in groups.items():
        assert g.seeds[0] == 0, variant
        for name in g.names[1:]:
            assert recipe_differences(by_name[g.names[0]], by_name[name]) == [], name
            assert by_name[name].provenance["commit"], name  # where it came from (a dirty tree is said in 07a)


def test_recipe_differences_see_through_added_defaults_but_not_other_steps():
    from dataclasses import replace as dc_replace

    from attnconv.train.seeds import recipe_differences

    runs = {r.name: r for r in load_bert_runs(RESULTS)}
    a = runs["bert-cpu-quick-absolute"]
    prov = json.loads(json.dumps(a.provenance))
    prov["config"].update(seed=1, progress=False, precision="fp32")  # what a later seed's record says
    prov["config"]["model"]["hidden_act"] = "gelu"  # a model field added since, at its default
    assert recipe_differences(a, dc_replace(a, provenance=prov)) == []
    prov["config"]["steps"] = 1000
    assert recipe_differences(a, dc_replace(a, provenance=prov)) == ["steps"]
    prov["config"].update(steps=a.provenance["config"]["steps"], precision="bf16")
    assert recipe_differences(a, dc_replace(a, provenance=prov)) == ["precision"]
    prov["config"]["precision"] = "fp32"
    prov["model_config"] = {**prov["model_config"], "depth": 2}
    assert recipe_differences(a, dc_replace(a, provenance=prov)) == ["model_config"]


def test_the_seed_figure_marks_each_seed_and_fits_a_phone(with_seeds):
    import matplotlib

    matplotlib.use("Agg")
    from attnconv.figures.bert_seeds import plot_seed_comparison
    from attnconv.figures.legibility import overprinted_texts

    from .test_chapters_06_07 import fits_a_phone

    groups = seed_runs(load_bert_runs(with_seeds))
    fig = plot_seed_comparison(groups, ("subj", "mr"))
    assert len(fig.axes) == 3 and fits_a_phone(fig) and overprinted_texts(fig) == []
    labels = fig.legends[0].get_texts()
    assert [t.get_text() for t in labels] == ["pretraining seed 0", "pretraining seed 1", "pretraining seed 2",
                                              "one fine-tuning run"]
    loss_markers = [line for line in fig.axes[0].lines]
    assert len(loss_markers) == sum(len(g.seeds) for g in groups.values())
    grey = [line for line in fig.axes[1].lines if line.get_color() == "0.6"]
    assert sum(len(line.get_xdata()) for line in grey) == sum(len(g.all_runs("subj")) for g in groups.values())
    with pytest.raises(ValueError, match="groups"):
        plot_seed_comparison({})


def test_ranking_sentences_state_only_what_three_seeds_separate():
    from attnconv.train.seeds import ranking_sentence

    v, s = ranking_sentence("On SUBJ", ("composite-noabs", [0.86, 0.85, 0.855]), ("absolute", [0.83, 0.84, 0.835]))
    assert v == 1 and "every one of the 3 pretraining seeds of `composite-noabs` is above" in s and "85.0% to 86.0%" in s
    v, s = ranking_sentence("In loss", ("a", [5.3, 5.31, 5.29]), ("b", [6.3, 6.29, 6.31]), fmt=lambda x: f"{x:.2f}")
    assert v == -1 and "is below every one" in s and "5.29 to 5.31" in s
    v, s = ranking_sentence("On MR", ("a", [0.6, 0.64, 0.62]), ("b", [0.61, 0.63, 0.6]))
    assert v == 0 and "no ranking is stated" in s and "above" not in s
    # Two seeds, however far apart, rank nothing; neither does one pretraining run.
    v, s = ranking_sentence("On MR", ("a", [0.70, 0.71]), ("b", [0.60, 0.61, 0.6]))
    assert v is None and "2 pretraining runs of `a` and 3 pretraining runs of `b`, no ranking" in s
    v, s = ranking_sentence("On MR", ("a", [0.70]), ("b", [0.60]))
    assert v is None and "1 pretraining run of `a`" in s
    with pytest.raises(ValueError, match="at least one value"):
        ranking_sentence("On MR", ("a", []), ("b", [0.6]))
