"""Pretraining and fine-tuning loops: files written, exact interrupt-and-resume, the CLI, and config errors."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest
import torch

from attnconv.data.sample_text import write_sample_corpora
from attnconv.data.tasks import load_task
from attnconv.train.bert_config import FINETUNE_CONFIGS, PRETRAIN_CONFIGS, FinetuneConfig, PretrainConfig
from attnconv.train.bert_finetune import finetune_bert
from attnconv.train.bert_pretrain import prepare_pretraining, pretrain_bert
from attnconv.train.checkpoint import load_checkpoint
from attnconv.train.cli import main
from attnconv.train.runs import apply_overrides
from attnconv.train.schedule import warmup_linear

SMOKE = replace(PRETRAIN_CONFIGS["smoke"], steps=6, eval_every=3, batch_size=4, eval_examples=8,
                model=replace(PRETRAIN_CONFIGS["smoke"].model, variant="composite"), validation_fraction=0.25)
FT = replace(FINETUNE_CONFIGS["smoke"], task="subj", train_examples=16, epochs=2, batch_size=8, eval_batch_size=16)


class Interrupt(Exception):
    pass


def _stop_at(n: int):
    def hook(step: int) -> None:
        if step == n:
            raise Interrupt
    return hook


@pytest.fixture(scope="module")
def corpora(tmp_path_factory):
    return write_sample_corpora(tmp_path_factory.mktemp("corpora"))


@pytest.fixture(scope="module")
def data(corpora, tmp_path_factory):
    return prepare_pretraining(SMOKE, corpora, tmp_path_factory.mktemp("cache"))


@pytest.fixture(scope="module")
def pretrained(data, tmp_path_factory):
    out = tmp_path_factory.mktemp("pre")
    return out, pretrain_bert(SMOKE, out, data=data)


def test_warmup_then_linear_decay():
    assert [warmup_linear(s, 10, 2) for s in range(10)] == [0.5, 1.0] + [(10 - s) / 8 for s in range(2, 10)]
    assert warmup_linear(0, 5, 0) == 1.0
    with pytest.raises(ValueError, match="warmup_steps"):
        warmup_linear(0, 5, 6)
    with pytest.raises(ValueError, match="step must be"):
        warmup_linear(5, 5, 1)


def test_pretraining_writes_a_complete_run(pretrained):
    out, final = pretrained
    history = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in history] == [3, 6]
    assert all(r["val_loss"] > 0 and 0 <= r["val_acc"] <= 1 and r["tokens_per_s"] > 0 for r in history)
    assert final["steps"] == 6 and final["variant"] == "composite" and final["val_loss"] == history[-1]["val_loss"]
    prov = json.loads((out / "provenance.json").read_text())
    assert {"device", "torch", "commit", "data", "data_source", "wall_time_s", "config", "load_average_at_start"} <= set(prov)
    assert prov["config"]["model"]["variant"] == "composite" and "NLTK corpora" in prov["data"]
    kernels = json.loads((out / "kernels.json").read_text())
    k = SMOKE.model.max_distance
    assert kernels["offsets"] == list(range(-k, k + 1))
    assert len(kernels["fixed"]) == SMOKE.model.depth and len(kernels["dynamic"][0][0]) == len(kernels["tokens"])
    assert (out / "tokenizer.json").is_file() and (out / "checkpoint.pt").is_file()


def test_interrupted_pretraining_resumes_exactly(pretrained, data, tmp_path):
    out, _ = pretrained
    with pytest.raises(Interrupt):
        pretrain_bert(SMOKE, tmp_path, data=data, on_step=_stop_at(5))  # the checkpoint is at step 3
    assert load_checkpoint(tmp_path / "checkpoint.pt")["step"] == 3
    with pytest.raises(FileExistsError, match="resume"):
        pretrain_bert(SMOKE, tmp_path, data=data)
    with pytest.raises(ValueError, match="differs"):
        pretrain_bert(replace(SMOKE, lr=0.5), tmp_path, data=data, resume=True)
    pretrain_bert(SMOKE, tmp_path, data=data, resume=True)
    assert (tmp_path / "metrics.jsonl").read_text().splitlines()[-1].split('"tokens_per_s"')[0] == \
        (out / "metrics.jsonl").read_text().splitlines()[-1].split('"tokens_per_s"')[0]
    a, b = load_checkpoint(out / "checkpoint.pt")["model"], load_checkpoint(tmp_path / "checkpoint.pt")["model"]
    assert all(torch.equal(a[k], b[k]) for k in a)
    with pytest.raises(FileNotFoundError, match="no checkpoint"):
        pretrain_bert(SMOKE, tmp_path / "new", data=data, resume=True)


def test_finetuning_reports_each_seed_and_resumes_exactly(pretrained, corpora, tmp_path):
    out, _ = pretrained
    task = load_task("subj", corpora)
    final = finetune_bert(FT, out, tmp_path / "a", task=task)
    assert final["seeds"] == [0, 1] and len(final["test_acc"]) == 2 and final["test_examples"] == 8
    assert final["test_acc_std"] >= 0 and min(final["test_acc"]) <= final["test_acc_mean"] <= max(final["test_acc"])
    lines = [json.loads(x) for x in (tmp_path / "a" / "metrics.jsonl").read_text().splitlines()]
    assert [(r["seed"], r["epoch"]) for r in lines] == [(0, 1), (0, 2), (1, 1), (1, 2)]
    # Stop inside seed 1's second epoch: resuming restores seed 0's result and seed 1's model and optimiser.
    with pytest.raises(Interrupt):
        finetune_bert(FT, out / "checkpoint.pt", tmp_path / "b", task=task, on_step=_stop_at(7))
    saved = load_checkpoint(tmp_path / "b" / "checkpoint.pt")
    assert (saved["seed_index"], saved["epoch"], len(saved["results"])) == (1, 1, 1)
    resumed = finetune_bert(FT, out, tmp_path / "b", task=task, resume=True)
    assert resumed["test_acc"] == final["test_acc"]
    assert (tmp_path / "b" / "metrics.jsonl").read_text().count("\n") == 4
    a, b = load_checkpoint(tmp_path / "a" / "checkpoint.pt")["model"], load_checkpoint(tmp_path / "b" / "checkpoint.pt")["model"]
    assert all(torch.equal(a[k], b[k]) for k in a)  # the same final weights, bit for bit
    with pytest.raises(ValueError, match="task data"):
        finetune_bert(replace(FT, task="mr"), out, tmp_path / "c", task=task)


def test_command_line(corpora, tmp_path, capsys):
    assert main(["bert-pretrain", "--list"]) == 0
    assert "cpu-quick" in capsys.readouterr().out
    args = ["--config", "smoke", "--data", str(corpora), "--set", "steps=2", "--set", "eval_every=2",
            "--set", "eval_examples=4", "--set", "validation_fraction=0.25"]
    assert main(["bert-pretrain", "--variant", "fixed-noabs", "--out", str(tmp_path / "p"), "--cache",
                 str(tmp_path / "cache"), *args]) == 0
    assert json.loads(capsys.readouterr().out.splitlines()[-1])["variant"] == "fixed-noabs"
    assert main(["bert-finetune", "--config", "smoke", "--task", "rte", "--from", str(tmp_path / "p"),
                 "--out", str(tmp_path / "f"), "--data", str(corpora), "--set", "seeds=(3,)"]) == 0
    assert json.loads((tmp_path / "f" / "final.json").read_text())["seeds"] == [3]
    with pytest.raises(SystemExit):
        main(["bert-finetune", "--config", "smoke"])


def test_config_errors():
    with pytest.raises(ValueError, match="unknown config field"):
        apply_overrides(SMOKE, ["model.width=3"])
    with pytest.raises(ValueError, match="key=value"):
        apply_overrides(SMOKE, ["steps"])
    assert apply_overrides(SMOKE, ["model.depth=3"]).model.depth == 3
    with pytest.raises(ValueError, match="steps"):
        PretrainConfig(steps=0)
    with pytest.raises(ValueError, match="max_length"):
        PretrainConfig(max_length=1000)
    with pytest.raises(ValueError, match="warmup"):
        PretrainConfig(warmup=1.0)
    with pytest.raises(ValueError, match="task must be one of"):
        FinetuneConfig(task="cola")
    with pytest.raises(ValueError, match="seeds"):
        FinetuneConfig(seeds=())
    with pytest.raises(ValueError, match="train_examples"):
        FinetuneConfig(train_examples=0)


def test_runs_are_read_back_into_a_table(pretrained, corpora, tmp_path):
    import shutil

    from attnconv.train.results import bert_results_table, load_bert_runs
    out, final = pretrained
    shutil.copytree(out, tmp_path / "bert-pre")
    finetune_bert(replace(FT, seeds=(0,), epochs=1), tmp_path / "bert-pre", tmp_path / "bert-pre-subj",
                  task=load_task("subj", corpora))
    (tmp_path / "bert-unfinished").mkdir()
    runs = load_bert_runs(tmp_path)
    assert [r.name for r in runs] == ["bert-pre", "bert-pre-subj"]
    assert runs[0].is_pretraining and runs[0].kernels is not None and not runs[1].is_pretraining
    table = bert_results_table(runs).splitlines()
    assert table[0].endswith("| SUBJ |") and len(table) == 3
    assert table[2].startswith(f"| composite | smoke | 6 | {final['val_loss']:.3f} |") and "(1 seeds)" in table[2]
    assert bert_results_table(runs, config="smoke") == "\n".join(table)
    other = bert_results_table(runs, config="cpu-quick").splitlines()
    assert len(other) == 2 and "SUBJ" not in other[0]  # no runs of that config: a header only


def _nan_at(cls, method: str, n: int, monkeypatch):
    """Make the ``n``-th call of ``cls.method`` in training mode return a NaN (loss or logits)."""
    original, calls = getattr(cls, method), [0]

    def poisoned(self, *args, **kwargs):
        out = original(self, *args, **kwargs)
        if self.training:
            calls[0] += 1
            if calls[0] == n:
                return (out[0] * float("nan"), *out[1:]) if isinstance(out, tuple) else out * float("nan")
        return out

    monkeypatch.setattr(cls, method, poisoned)
    return calls


def test_a_non_finite_loss_stops_pretraining_and_finetuning(pretrained, data, corpora, tmp_path, monkeypatch):
    from attnconv.models.bert import BertClassifier, BertForMaskedLM
    from attnconv.train.runs import NonFiniteLossError

    out, _ = pretrained
    calls = _nan_at(BertForMaskedLM, "loss", 5, monkeypatch)  # the checkpoint is at step 3
    with pytest.raises(NonFiniteLossError, match="loss is nan at step 5; the last good checkpoint"):
        pretrain_bert(SMOKE, tmp_path / "pre", data=data)
    assert calls[0] == 5 and load_checkpoint(tmp_path / "pre" / "checkpoint.pt")["step"] == 3
    monkeypatch.undo()
    pretrain_bert(SMOKE, tmp_path / "pre", data=data, resume=True)  # and it resumes to the uninterrupted weights
    a, b = load_checkpoint(out / "checkpoint.pt")["model"], load_checkpoint(tmp_path / "pre" / "checkpoint.pt")["model"]
    assert all(torch.equal(a[k], b[k]) for k in a)

    calls = _nan_at(BertClassifier, "forward", 3, monkeypatch)  # 2 steps per epoch: seed 0, epoch 2
    with pytest.raises(NonFiniteLossError, match="loss is nan at seed 0, epoch 2, step 3"):
        finetune_bert(FT, out, tmp_path / "ft", task=load_task("subj", corpora))
    saved = load_checkpoint(tmp_path / "ft" / "checkpoint.pt")
    assert calls[0] == 3 and (saved["seed_index"], saved["epoch"]) == (0, 1)
    assert all(torch.isfinite(v).all() for v in saved["model"].values() if v.is_floating_point())


def test_bert_configs_accept_cuda_n():
    assert PretrainConfig(device="cuda:0").device == FinetuneConfig(device="cuda:0").device == "cuda:0"
    with pytest.raises(ValueError, match="cuda:N"):
        FinetuneConfig(device="tpu")


def test_bf16_pretraining_resumes_exactly_and_fine_tuning_records_its_precision(data, corpora, tmp_path):
    config = replace(SMOKE, precision="bf16")
    pretrain_bert(config, tmp_path / "straight", data=data)
    with pytest.raises(Interrupt):
        pretrain_bert(config, tmp_path / "resumed", data=data, on_step=_stop_at(5))
    with pytest.raises(ValueError, match="trained in bf16"):
        pretrain_bert(replace(config, precision="fp32"), tmp_path / "resumed", data=data, resume=True)
    pretrain_bert(config, tmp_path / "resumed", data=data, resume=True)
    a, b = (load_checkpoint(tmp_path / run / "checkpoint.pt") for run in ("straight", "resumed"))
    assert a["precision"] == b["precision"] == "bf16"
    assert all(torch.equal(a["model"][k], b["model"][k]) for k in a["model"])
    assert all(v.dtype == torch.float32 for v in a["model"].values() if v.is_floating_point())
    assert json.loads((tmp_path / "straight" / "provenance.json").read_text())["precision"]["used"] == "bf16"
    task = load_task("subj", corpora)
    finetune_bert(replace(FT, seeds=(0,), epochs=1, precision="bf16"), tmp_path / "straight", tmp_path / "ft", task=task)
    prov = json.loads((tmp_path / "ft" / "provenance.json").read_text())
    assert prov["precision"] == {"requested": "bf16", "used": "bf16", "reason": "requested"}
    with pytest.raises(ValueError, match="trained in bf16"):
        finetune_bert(replace(FT, seeds=(0,), epochs=1, precision="fp32"), tmp_path / "straight", tmp_path / "ft",
                      task=task, resume=True)
