"""Training precision: float32 or bfloat16 autocast, the start-up probe behind "auto", and resume rules."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest
import torch

from attnconv.models import ResNetConfig, build_model
from attnconv.positional.base import softmax_flushed
from attnconv.taps import softmax_fp32
from attnconv.train import TrainConfig, named_config, train_vision
from attnconv.train.bert_config import FinetuneConfig, PretrainConfig
from attnconv.train.checkpoint import load_checkpoint, save_checkpoint
from attnconv.train.precision import (MIN_SPEEDUP, precision_autocast, probe_speed, resolve_precision,
                                      resume_precision)
from attnconv.train.runs import config_to_dict

from .test_train import _config, _strip, _tiny_data

CPU = torch.device("cpu")


def test_precision_is_checked_and_the_cpu_configs_keep_float32():
    for cls in (TrainConfig, PretrainConfig, FinetuneConfig):
        assert cls().precision == "auto" and cls(precision="bf16").precision == "bf16"
        with pytest.raises(ValueError, match="precision must be one of"):
            cls(precision="fp16")
    for name in ("smoke", "cpu-quick", "cpu-long"):
        assert named_config(name).precision == "fp32", "existing CPU records were float32 runs of these configs"


def test_softmax_normaliser_stays_float32_under_bf16():
    logits = torch.tensor([0.0, -14.0, -14.0, -14.0], dtype=torch.bfloat16)
    probs = softmax_fp32(logits)
    assert probs.dtype == torch.float32 and abs(float(probs.sum()) - 1) < 1e-6
    assert softmax_fp32(logits.double()).dtype == torch.float64  # never narrows
    # A tail probability of ~8e-7 survives the flush: the threshold is float32's eps², not bfloat16's (6e-5).
    flushed = softmax_flushed(logits)
    assert flushed.dtype == torch.float32 and 0 < float(flushed[1]) < 1e-6
    assert float(torch.softmax(logits, -1)[1]) < 6.2e-5 - 1e-9  # the bfloat16 softmax's own tail is under that line


def test_probe_measures_both_precisions_and_leaves_the_run_alone():
    torch.manual_seed(0)
    net = build_model("resnet18", ResNetConfig(width=4, blocks=(1, 1, 1, 1)))
    before = {k: v.clone() for k, v in net.state_dict().items()}
    x, y = torch.randn(8, 32, 32, 3), torch.randint(0, 10, (8,))
    state = torch.get_rng_state()
    figures = probe_speed(net, lambda m: torch.nn.functional.cross_entropy(m(x).float(), y), CPU, repeats=2)
    assert torch.equal(torch.get_rng_state(), state)
    assert all(torch.equal(before[k], v) for k, v in net.state_dict().items())  # batch-norm statistics too
    assert all(p.grad is None for p in net.parameters())
    assert len(figures["fp32_s"]) == len(figures["bf16_s"]) == 2 and min(figures["fp32_s"] + figures["bf16_s"]) > 0
    assert figures["speedup"] == pytest.approx(figures["fp32_median_s"] / figures["bf16_median_s"])


def test_auto_follows_the_probe_on_cpu_records_it_and_follows_amp_on_cuda():
    fast = {"speedup": MIN_SPEEDUP + 0.5}
    slow = {"speedup": MIN_SPEEDUP - 0.05}
    choice = resolve_precision("auto", True, CPU, lambda: fast)
    assert choice["used"] == "bf16" and choice["probe"] == fast and "1.60x" in choice["reason"]
    assert "parity" in choice["reason"] and "at least" in choice["reason"] and "residual stream" in choice["reason"]
    edge = resolve_precision("auto", True, CPU, lambda: {"speedup": MIN_SPEEDUP})
    assert edge["used"] == "bf16", "at least MIN_SPEEDUP: bf16"
    choice = resolve_precision("auto", True, CPU, lambda: slow)
    assert choice["used"] == "fp32" and choice["probe"] == slow and "below" in choice["reason"]

    def no_probe():
        raise AssertionError("an explicit precision, or CUDA, must not probe")

    assert resolve_precision("bf16", False, CPU, no_probe)["used"] == "bf16"
    assert resolve_precision("fp32", True, torch.device("cuda"), no_probe)["used"] == "fp32"
    assert resolve_precision("auto", True, torch.device("cuda"), no_probe)["used"] == "bf16"
    assert resolve_precision("auto", False, torch.device("cuda"), no_probe)["used"] == "fp32"
    with pytest.raises(ValueError, match="once resolved"):
        precision_autocast("auto", CPU)


def test_a_bf16_run_resumes_exactly_keeps_float32_state_and_refuses_fp32(tmp_path):
    data = _tiny_data()
    config = _config(epochs=2, precision="bf16")
    train_vision(config, tmp_path / "straight", data=data)

    def interrupt(step):
        if step == 6:  # inside epoch 2; the checkpoint holds epoch 1
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        train_vision(config, tmp_path / "resumed", data=data, on_step=interrupt)
    with pytest.raises(ValueError, match="trained in bf16 and this run asks for precision='fp32'"):
        train_vision(replace(config, precision="fp32"), tmp_path / "resumed", data=data, resume=True)
    train_vision(replace(config, precision="auto"), tmp_path / "resumed", data=data, resume=True)  # no new probe

    a = load_checkpoint(tmp_path / "straight" / "checkpoint.pt")
    b = load_checkpoint(tmp_path / "resumed" / "checkpoint.pt")
    assert a["precision"] == b["precision"] == "bf16"
    assert all(torch.equal(a["model"][k], b["model"][k]) for k in a["model"])
    assert _strip(a["history"]) == _strip(b["history"])
    assert all(v.dtype == torch.float32 for v in a["model"].values() if v.is_floating_point())
    moments = [t for s in a["optimizer"]["state"].values() for t in s.values() if torch.is_tensor(t)]
    assert moments and all(t.dtype == torch.float32 for t in moments)
    prov = json.loads((tmp_path / "resumed" / "provenance.json").read_text())
    assert prov["precision"]["used"] == "bf16" and prov["precision"]["reason"].startswith("resumed")
    assert prov["bf16_autocast"] is True
    # The same recipe in float32 is a different run: close, not equal.
    train_vision(replace(config, precision="fp32"), tmp_path / "fp32", data=data)
    c = load_checkpoint(tmp_path / "fp32" / "checkpoint.pt")
    assert not all(torch.equal(a["model"][k], c["model"][k]) for k in a["model"])


def test_a_checkpoint_without_a_precision_resumes_as_float32(tmp_path):
    data = _tiny_data()
    config = _config(epochs=2)
    assert config.precision == "fp32"

    def interrupt(step):
        if step == 6:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        train_vision(config, tmp_path / "old", data=data, on_step=interrupt)
    ckpt = tmp_path / "old" / "checkpoint.pt"
    state = load_checkpoint(ckpt)
    del state["precision"], state["config"]["precision"]  # as written before the field existed
    save_checkpoint(ckpt, state)
    now = config_to_dict(config)
    assert resume_precision(state, now, CPU)["used"] == "fp32"
    assert resume_precision(state, {**now, "precision": "auto"}, CPU)["used"] == "fp32"
    assert resume_precision(state, {**now, "precision": "auto"}, torch.device("cuda"))["used"] == "bf16"  # had amp
    with pytest.raises(ValueError, match="trained in fp32"):
        train_vision(replace(config, precision="bf16"), tmp_path / "old", data=data, resume=True)
    with pytest.raises(ValueError, match=r"differs from the checkpoint's in \['lr'\]"):
        train_vision(replace(config, lr=0.5), tmp_path / "old", data=data, resume=True)
    final = train_vision(config, tmp_path / "old", data=data, resume=True)
    assert final["epochs"] == 2


def test_auto_on_a_cpu_records_the_probe(tmp_path, monkeypatch):
    import attnconv.train.vision as vision

    figures = {"fp32_s": [2.0], "bf16_s": [1.0], "fp32_median_s": 2.0, "bf16_median_s": 1.0, "speedup": 2.0}
    seen = []

    def fake_probe(net, loss_fn, device):
        seen.append(float(loss_fn(net).detach()))  # the loss of a real-shaped batch is computable
        return figures

    monkeypatch.setattr(vision, "probe_speed", fake_probe)
    train_vision(_config(epochs=1, precision="auto"), tmp_path / "run", data=_tiny_data())
    prov = json.loads((tmp_path / "run" / "provenance.json").read_text())
    assert seen and prov["precision"] == {"requested": "auto", "used": "bf16", "probe": figures,
                                          "reason": prov["precision"]["reason"]}
    assert "2.00x" in prov["precision"]["reason"] and prov["bf16_autocast"] is True
    assert load_checkpoint(tmp_path / "run" / "checkpoint.pt")["precision"] == "bf16"
