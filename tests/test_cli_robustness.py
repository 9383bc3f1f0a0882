"""The command line under bad input: non-finite values, bad config fields, broken checkpoints, α that overflows.

Each ends in one line on stderr that names what is wrong, and a bad config ends before any data loads.
"""

import math
from dataclasses import replace

import pytest
import torch

import attnconv.train.vision as vision
from attnconv.positional import QuadraticEncoding
from attnconv.train.checkpoint import CheckpointError, load_checkpoint, save_checkpoint
from attnconv.train.cli import main
from attnconv.train.runs import CHECKPOINT_NAME, _parse_value, apply_overrides
from attnconv.train.vision_config import VISION_CONFIGS

from .test_train import _config, _tiny_data


def _no_data(*args, **kwargs):
    raise AssertionError("the data must not load for a config that is refused")


@pytest.mark.parametrize("text, value", [("nan", math.nan), ("inf", math.inf), ("-inf", -math.inf),
                                         ("Infinity", math.inf), ("NaN", math.nan), ("0.1", 0.1), ("abc", "abc")])
def test_nan_and_inf_parse_as_floats(text, value):
    parsed = _parse_value(text)
    assert parsed == value or (isinstance(parsed, float) and math.isnan(parsed) and math.isnan(value))


@pytest.mark.parametrize("override, message", [
    ("lr=nan", "lr must be finite"),
    ("lr=inf", "lr must be finite"),
    ("lr=-inf", "lr must be finite"),
    ("momentum=nan", "momentum must be finite"),
    ("warmup=inf", "warmup must be finite"),
    ("lr=0", "need lr > 0"),
    ("lr=abc", "TrainConfig.lr must be float"),
    ("sa=3", "sa must be a VisionConfig"),
    ("resnet=[1, 2]", "resnet must be a ResNetConfig"),
    ("epochs=1.5", "TrainConfig.epochs must be int"),
    ("epochs=True", "TrainConfig.epochs must be int"),
    ("progress=1", "TrainConfig.progress must be bool"),
    ("sa.depth=two", "VisionConfig.depth must be int"),
    ("device=3", "TrainConfig.device must be str"),
])
def test_a_bad_config_value_is_one_line_before_any_data_loads(override, message, tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(vision, "_load_data", _no_data)
    assert main(["vision", "--config", "smoke", "--out", str(tmp_path / "run"), "--set", override]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and err.startswith("vision: bad config:") and message in err, err


@pytest.mark.parametrize("task, extra", [("bert-pretrain", []), ("bert-finetune", ["--from", "nowhere"])])
@pytest.mark.parametrize("override", ["lr=nan", "lr=inf", "model=3"])
def test_bert_configs_refuse_non_finite_values_in_one_line(task, extra, override, tmp_path, capsys):
    if task == "bert-finetune" and override == "model=3":
        override = "seeds=3"  # finetuning has no model field; a tuple field given a number
    code = main([task, "--config", "smoke", "--out", str(tmp_path / "run"), "--set", override, *extra])
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1 and f"{task}: bad config:" in err, err


def test_the_config_rules_hold_outside_the_command_line():
    config = VISION_CONFIGS["smoke"]
    for field in ("lr", "momentum", "weight_decay"):
        for bad in (math.inf, math.nan):
            with pytest.raises(ValueError, match=f"{field} must be finite"):
                apply_overrides(config, [f"{field}={bad}"])
    with pytest.raises(TypeError, match="lr must be a real number"):
        replace(config, lr="0.1")
    with pytest.raises(ValueError, match="lr must be finite"):
        replace(config, lr=math.inf)


def _broken_checkpoints(folder):
    """An empty file, bytes that are no checkpoint, a truncated checkpoint, an empty dict, a non-dict."""
    folder.mkdir(parents=True, exist_ok=True)
    good = folder / "good.pt"
    save_checkpoint(good, {"config": {}, "model": {"w": torch.zeros(100)}})
    whole = good.read_bytes()
    return {
        "empty": (b"", "is empty"),
        "garbage": (b"not a checkpoint at all\n" * 10, "cannot be read"),
        "truncated": (whole[: len(whole) // 2], "cannot be read"),
        "empty-dict": (None, "lacks 'config'"),
        "a-list": ([1, 2, 3], "holds a list"),
    }


@pytest.mark.parametrize("kind", ["empty", "garbage", "truncated", "empty-dict", "a-list"])
def test_a_broken_checkpoint_is_one_clear_line(kind, tmp_path, monkeypatch, capsys):
    content, message = _broken_checkpoints(tmp_path / "make")[kind]
    run = tmp_path / "run"
    run.mkdir()
    ckpt = run / CHECKPOINT_NAME
    if isinstance(content, bytes):
        ckpt.write_bytes(content)
    else:
        torch.save({} if content is None else content, ckpt)
    with pytest.raises(CheckpointError, match=message):
        load_checkpoint(ckpt, required=("config",))
    data = _tiny_data(256, 128)  # the smoke config's sizes
    monkeypatch.setattr(vision, "_load_data", lambda *args, **kwargs: data)
    assert main(["vision", "--config", "smoke", "--out", str(run), "--resume"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and str(ckpt) in err and message in err, err
    assert "Traceback" not in err


def test_a_broken_pretrained_checkpoint_is_named_by_finetune(tmp_path, capsys):
    bad = tmp_path / "pretrained.pt"
    torch.save({}, bad)
    code = main(["bert-finetune", "--config", "smoke", "--from", str(bad), "--out", str(tmp_path / "ft")])
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1 and str(bad) in err and "lacks 'model_config'" in err, err


def test_alpha_overflowing_mid_run_is_the_clean_stop_of_a_non_finite_loss(tmp_path, monkeypatch, capsys):
    """A Gaussian head's log α driven past float32's range in epoch 2: exit 1, one message, checkpoint kept."""
    data, run, calls, saved = _tiny_data(), tmp_path / "run", [0], {}
    config = _config(epochs=3)  # 4 steps per epoch
    axis_logits = QuadraticEncoding.axis_logits

    def overflowing(self, grid):
        calls[0] += self.training  # training forward passes: one per step (the smoke model has one block)
        if calls[0] == 6 and self.training:
            with torch.no_grad():
                self.log_alpha.fill_(200.0)  # α = e^200: inf in float32
        return axis_logits(self, grid)

    real_train = vision.train_vision

    def train(config_, out, resume=False, data_path=None):
        def remember(step):
            if step == 5:  # epoch 1 and its checkpoint, the last good one, are done
                saved["bytes"] = (run / CHECKPOINT_NAME).read_bytes()
        return real_train(config, out, resume=resume, data=data, on_step=remember)

    monkeypatch.setattr(QuadraticEncoding, "axis_logits", overflowing)
    monkeypatch.setattr(vision, "train_vision", train)
    assert main(["vision", "--config", "smoke", "--out", str(run)]) == 1
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1, err
    assert err.startswith("vision: training stopped:") and "alpha" in err and "is kept" in err, err
    assert (run / CHECKPOINT_NAME).read_bytes() == saved["bytes"]
