"""The gpu-10min config's code path, end to end on the CPU at tiny size: torch.compile, bfloat16 autocast, its
batch and evaluation sizes, the data held on the device, and its time limit.

``torch.compile`` runs with the ``aot_eager`` backend here: it traces the model with TorchDynamo and AOTAutograd,
as on the GPU, without the CPU's C++ code generation (half a minute), which a GPU run never uses (it generates
Triton kernels instead)."""

from __future__ import annotations

import json
from dataclasses import replace

import torch

from attnconv.data import generated_cifar10
from attnconv.models import VisionConfig
from attnconv.train import named_config, train_vision
from attnconv.train.runs import read_jsonl


def test_gpu_10min_runs_on_the_cpu_at_tiny_size(tmp_path, monkeypatch):
    compiled, compile_ = [], torch.compile

    def compile_traced(model, **kwargs):
        compiled.append(model)
        return compile_(model, backend="aot_eager")

    monkeypatch.setattr(torch, "compile", compile_traced)
    gpu = named_config("gpu-10min", "sa-quadratic")
    assert gpu.compile and gpu.amp and gpu.time_limit == 600.0 and gpu.device == "auto"
    tiny = replace(gpu, sa=VisionConfig(hidden_dim=16, depth=1, num_heads=4, head_dim=8, mlp_dim=32),
                   device="cpu", precision="bf16",  # what "auto" resolves to on CUDA with amp
                   train_images=gpu.batch_size * 2, test_images=gpu.eval_batch_size,  # one evaluation batch
                   time_limit=1e-3, progress=False, attention_images=8)
    data = generated_cifar10(n_train=tiny.train_images, n_test=tiny.test_images)
    final = train_vision(tiny, tmp_path / "run", data=data)
    history = read_jsonl(tmp_path / "run" / "metrics.jsonl")
    assert final["stopped_early"] is True and final["epochs"] == 1 < tiny.epochs  # the time limit stopped it
    assert history[0]["step"] == 2  # two batches of 256
    prov = json.loads((tmp_path / "run" / "provenance.json").read_text())
    assert prov["compiled"] is True and prov["bf16_autocast"] is True and len(compiled) == 1
    assert prov["config"]["batch_size"] == 256 and prov["config"]["eval_batch_size"] == 1000
    assert 0.0 <= final["test_acc"] <= 1.0
