"""Training it yourself: the budget setting, where the runs are kept, resume after a cut, and the CUDA-only
functions (through mocks where no GPU is present)."""

from __future__ import annotations

import json
import sys
import types
from unittest import mock

import pytest
import torch

from attnconv.data import generated_cifar10
from attnconv.data.sample_text import write_sample_corpora
from attnconv.figures.yourself import plot_my_pretraining, plot_my_vision_run
from attnconv.train import cuda, named_config, yourself
from attnconv.train.runs import read_jsonl

RESULTS = yourself.Path(__file__).resolve().parents[1] / "results"


@pytest.fixture
def plain(monkeypatch, tmp_path):
    for var in ("ATTNCONV_BUDGET", "ATTNCONV_RUNS", "ATTNCONV_DOWNLOAD"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.delitem(sys.modules, "google.colab", raising=False)
    monkeypatch.chdir(tmp_path)
    return monkeypatch


def _colab(monkeypatch, tmp_path):
    """A stand-in ``google.colab`` whose drive.mount makes the MyDrive folder under tmp_path."""
    colab, drive = types.ModuleType("google.colab"), types.ModuleType("google.colab.drive")
    mounted = []
    drive.mount = lambda where: mounted.append(where)
    colab.drive = drive
    monkeypatch.setitem(sys.modules, "google.colab", colab)
    monkeypatch.setitem(sys.modules, "google.colab.drive", drive)
    monkeypatch.setenv("ATTNCONV_DRIVE_MOUNT", str(tmp_path / "drive"))
    return mounted


def test_budget_defaults_to_committed_and_proposes_the_gpu_in_colab(plain, tmp_path):
    assert yourself.choose_budget() == "committed"
    _colab(plain, tmp_path)
    with mock.patch.object(yourself, "gpu_name", return_value=None):
        assert yourself.choose_budget() == "committed"  # Colab without a GPU: nothing is proposed
    with mock.patch.object(yourself, "gpu_name", return_value="NVIDIA A100"):
        assert yourself.choose_budget() == "gpu-10min"
        assert yourself.choose_budget("smoke") == "smoke"  # the reader's choice wins
    plain.setenv("ATTNCONV_BUDGET", "cpu-quick")
    assert yourself.choose_budget() == "cpu-quick"
    with pytest.raises(ValueError, match="budget must be one of"):
        yourself.choose_budget("gpu-1h")


def test_runs_are_kept_on_the_mounted_drive_in_colab(plain, tmp_path):
    assert yourself.runs_home() == yourself.Path("my-runs")
    mounted = _colab(plain, tmp_path)
    assert yourself.runs_home() == tmp_path / "drive" / "MyDrive" / "attnconv-runs" and mounted == [str(tmp_path / "drive")]
    plain.setenv("ATTNCONV_RUNS", str(tmp_path / "elsewhere"))
    assert yourself.runs_home() == tmp_path / "elsewhere"


def test_committed_trains_nothing(plain, tmp_path):
    assert yourself.train_yourself("committed", "sa-quadratic", tmp_path) is None
    assert yourself.pretrain_yourself("committed", "absolute", tmp_path) is None
    assert list(tmp_path.iterdir()) == []
    with pytest.raises(ValueError, match="for BERT"):
        yourself.pretrain_yourself("paper", "absolute", tmp_path)


def test_resume_continues_from_the_checkpoint(plain, tmp_path):
    data = generated_cifar10(n_train=256, n_test=128)
    folder = yourself.run_folder(tmp_path, "smoke", "sa-quadratic")
    from attnconv.train import vision

    real_eval = vision._evaluate
    calls = {"n": 0}

    def cut_after_first_epoch(*args, **kwargs):
        calls["n"] += 1
        if calls["n"] == 2:  # the second epoch's evaluation: the session drops
            raise KeyboardInterrupt
        return real_eval(*args, **kwargs)

    with mock.patch.object(vision, "_evaluate", side_effect=cut_after_first_epoch):
        with pytest.raises(KeyboardInterrupt):
            yourself.train_yourself("smoke", "sa-quadratic", tmp_path, data=data)
    assert (folder / "checkpoint.pt").is_file() and not (folder / "final.json").exists()
    assert [r["epoch"] for r in read_jsonl(folder / "metrics.jsonl")] == [1]
    assert yourself.train_yourself("smoke", "sa-quadratic", tmp_path, data=data) == folder
    history = read_jsonl(folder / "metrics.jsonl")
    assert [r["epoch"] for r in history] == [1, 2]
    assert json.loads((folder / "final.json").read_text())["epochs"] == 2
    before = (folder / "final.json").stat().st_mtime_ns  # a finished run is kept, not trained again
    assert yourself.train_yourself("smoke", "sa-quadratic", tmp_path, data=data) == folder
    assert (folder / "final.json").stat().st_mtime_ns == before
    figures = plot_my_vision_run(folder, RESULTS)  # the reader's run beside the committed ones
    assert set(figures) == {"accuracy", "centers", "reach"}
    labels = [line.get_label() for line in figures["accuracy"].axes[0].get_lines()]
    assert labels == ["committed cpu-quick sa-quadratic", "committed cpu-long sa-quadratic", "your run (smoke-sa-quadratic)"]
    assert [line.get_xdata().tolist() for line in figures["accuracy"].axes[0].get_lines()][-1] == [1, 2]
    assert figures["centers"].get_suptitle() == "your run (smoke-sa-quadratic)"
    with pytest.raises(FileNotFoundError, match="mine must be a run folder"):
        plot_my_vision_run(tmp_path, RESULTS)  # the home folder, not a run


def test_cuda_functions_without_and_with_a_mocked_gpu():
    cpu = torch.device("cpu")
    with mock.patch("torch.cuda.is_available", return_value=False):
        assert cuda.gpu_name() is None
    with mock.patch("torch.cuda.is_available", return_value=True), \
            mock.patch("torch.cuda.get_device_name", return_value="NVIDIA H200"):
        assert cuda.gpu_name() == "NVIDIA H200"
    assert cuda.enable_fast_kernels(cpu) is False and cuda.peak_memory_gib(cpu) is None
    cuda.synchronize(cpu)
    flags = (torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32, torch.backends.cudnn.benchmark)
    try:
        torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.benchmark = False
        assert cuda.enable_fast_kernels(torch.device("cuda", 0)) is True  # only flags: no kernel runs
        assert torch.backends.cuda.matmul.allow_tf32 and torch.backends.cudnn.benchmark
    finally:
        torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32, torch.backends.cudnn.benchmark = flags
    with mock.patch("torch.cuda.synchronize") as sync:
        cuda.synchronize(torch.device("cuda", 0))
    sync.assert_called_once()
    with mock.patch("torch.cuda.max_memory_allocated", return_value=3 * 2**30):
        assert cuda.peak_memory_gib(torch.device("cuda", 0)) == 3.0
    with pytest.raises(TypeError, match="torch.device"):
        cuda.enable_fast_kernels("cuda")


def test_pretraining_yourself_resumes_and_draws_beside_the_committed_curves(plain, tmp_path):
    write_sample_corpora(tmp_path / "data" / "nltk" / "corpora", sentences_per_file=30)
    plain.setenv("ATTNCONV_DATA", str(tmp_path / "data"))
    folder = yourself.pretrain_yourself("smoke", "composite", tmp_path / "runs")
    assert folder == tmp_path / "runs" / "bert-smoke-composite"
    final = json.loads((folder / "final.json").read_text())
    assert final["steps"] == 12
    figure = plot_my_pretraining(folder, RESULTS)
    lines = figure.axes[0].get_lines()
    assert [line.get_label() for line in lines][-1] == "your run (bert-smoke-composite)"
    assert lines[-1].get_xdata().tolist() == [6, 12]  # eval_every=6 in the smoke budget


def test_a_notebook_run_of_the_torchrun_budget_uses_every_core(tmp_path):
    """cpu-30min is sized for torchrun, one process of one thread per core; the chapter's cell is one process, so
    its run takes the cores' threads (None: all of them), not one."""
    from attnconv.train import vision

    seen = {}
    with mock.patch.object(vision, "train_vision", side_effect=lambda config, out, **kw: seen.update(config=config)):
        yourself.train_yourself("cpu-30min", "sa-quadratic", tmp_path, data=generated_cifar10(n_train=8, n_test=8))
    assert named_config("cpu-30min").threads == 1 and seen["config"].threads is None
    assert seen["config"].epochs == named_config("cpu-30min").epochs and seen["config"].device == "cpu"
