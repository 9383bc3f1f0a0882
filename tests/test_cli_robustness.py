"""The command line under bad input: non-finite values, bad config fields, broken checkpoints, α that overflows, and
run folders that cannot be used (locked by another run, a file, read-only, another --data), Ctrl-C and a full disk.

Each ends in one line on stderr that names what is wrong, and what can be checked without the data is checked before
it loads.
"""

import errno
import math
import os
import signal
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest
import torch

import attnconv.train.bert_pretrain as bert_pretrain
import attnconv.train.checkpoint as checkpoint
import attnconv.train.vision as vision
from attnconv.positional import QuadraticEncoding
from attnconv.train.checkpoint import CheckpointError, load_checkpoint, save_checkpoint
from attnconv.train.cli import main
from attnconv.train.folder import LOCK_FILE
from attnconv.train.runs import CHECKPOINT_NAME, NonFiniteLossError, _parse_value, apply_overrides
from attnconv.train.vision_config import VISION_CONFIGS

from .test_train import _config, _tiny_data
from .test_train_bert import SMOKE as BERT_SMOKE
from .test_train_bert import FT as BERT_FT
from .test_train_bert import corpora, data, pretrained  # noqa: F401 (fixtures: the sample corpora, a smoke model)


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
    # A resumed run keeps its config, so the way on with a lower learning rate is a new run, not --resume.
    assert err.endswith("Check the data and resume it, or start a new run with a lower learning rate (a resumed run "
                        "keeps its config)"), err
    assert (run / CHECKPOINT_NAME).read_bytes() == saved["bytes"]  # --resume with another lr is refused: see below


# ---------------------------------------------------------------- the run folder: a lock, checks before the data, clean exits

REAL_TRAIN = vision.train_vision
SMOKE_DATA = _tiny_data(64, 32)
# The smoke config made smaller still: 4 steps an epoch, 2 epochs, no progress bar.
SMALL = ["--set", "train_images=64", "--set", "test_images=32", "--set", "batch_size=16", "--set", "progress=False",
         "--set", "attention_images=8", "--set", "eval_batch_size=32"]


def _smoke(run, *extra):
    return main(["vision", "--config", "smoke", "--out", str(run), *SMALL, *extra])


def _one_line(capsys, *needles):
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err, err
    for needle in needles:
        assert needle in err, err
    return err


def _temporaries(folder):
    return sorted(p.name for p in folder.glob(".*.tmp"))


def _inject(monkeypatch, on_step=None, config=None):
    """The CLI's vision run, on the tiny data set and with ``on_step``, through the real trainer."""
    def train(config_, out, resume=False, data_path=None):
        return REAL_TRAIN(config or config_, out, resume=resume, data=SMOKE_DATA, data_path=data_path, on_step=on_step)
    monkeypatch.setattr(vision, "train_vision", train)


def _poison(module) -> None:
    with torch.no_grad():
        next(module.parameters()).view(-1)[0] = math.inf


def test_an_update_that_overflows_after_a_finite_loss_writes_no_checkpoint(tmp_path, monkeypatch, capsys):
    """The loss is checked before each update, so the epoch's last update can overflow unseen: the run stops before
    the epoch's checkpoint and metrics, rather than saving an infinite weight as "the last good checkpoint"."""
    real_epoch = vision._train_epoch

    def overflowing(epoch, m, *args, **kwargs):
        result = real_epoch(epoch, m, *args, **kwargs)
        if epoch == 0:
            _poison(m.net)  # as a last update with a huge step would leave it
        return result

    _inject(monkeypatch)
    monkeypatch.setattr(vision, "_train_epoch", overflowing)
    run = tmp_path / "run"
    assert _smoke(run) == 1
    err = _one_line(capsys, "vision: training stopped: ", "is not finite after epoch 1, although the loss was",
                    "no checkpoint was written yet")
    assert not (run / CHECKPOINT_NAME).exists() and not (run / "metrics.jsonl").exists(), list(run.iterdir())


def test_a_non_finite_test_loss_writes_no_checkpoint(tmp_path, monkeypatch, capsys):
    real_evaluate = vision._evaluate
    calls = [0]

    def evaluate(*args, **kwargs):
        result = real_evaluate(*args, **kwargs)
        calls[0] += 1
        return {**result, "test_loss": math.nan} if calls[0] == 2 else result  # epoch 2's test loss

    _inject(monkeypatch)
    monkeypatch.setattr(vision, "_evaluate", evaluate)
    run = tmp_path / "run"
    assert _smoke(run) == 1
    _one_line(capsys, "training stopped: the evaluation loss is nan after epoch 2", f"{run / CHECKPOINT_NAME}, is kept")
    assert load_checkpoint(run / CHECKPOINT_NAME, map_location="cpu")["epoch"] == 1  # epoch 1's, the last good one


def test_pretraining_writes_no_checkpoint_of_a_model_with_a_nan_weight(data, tmp_path, monkeypatch):
    """BERT's gradient clipping makes one NaN gradient NaN everywhere, after a finite loss: the evaluation step
    that would save it stops instead, and the checkpoint on disk stays the last good one."""
    real_evaluate = bert_pretrain._evaluate_mlm
    calls = [0]

    def evaluate(model, *args, **kwargs):
        calls[0] += 1
        if calls[0] == 2:  # the second evaluation, at step 6: the step-3 checkpoint is the last good one
            _poison(model)
        return real_evaluate(model, *args, **kwargs)

    monkeypatch.setattr(bert_pretrain, "_evaluate_mlm", evaluate)
    with pytest.raises(NonFiniteLossError, match=r"is not finite after step 6, although the loss was; the last good "
                                                 r"checkpoint, .*, is kept"):
        bert_pretrain.pretrain_bert(BERT_SMOKE, tmp_path, data=data)
    state = load_checkpoint(tmp_path / CHECKPOINT_NAME, map_location="cpu")
    assert state["step"] == 3 and all(torch.isfinite(t).all() for t in state["model"].values() if t.is_floating_point())


def test_finetuning_writes_no_checkpoint_of_a_model_with_a_nan_weight(pretrained, corpora, tmp_path, monkeypatch):
    import attnconv.train.bert_finetune as bert_finetune
    from attnconv.data.tasks import load_task

    real_evaluate = bert_finetune._evaluate_classifier
    calls = [0]

    def evaluate(model, *args, **kwargs):
        calls[0] += 1
        if calls[0] == 2:  # seed 0's second epoch: its first epoch's checkpoint is the last good one
            _poison(model)
        return real_evaluate(model, *args, **kwargs)

    monkeypatch.setattr(bert_finetune, "_evaluate_classifier", evaluate)
    with pytest.raises(NonFiniteLossError, match=r"is not finite after seed 0, epoch 2, although the loss was; the "
                                                 r"last good checkpoint, .*, is kept"):
        bert_finetune.finetune_bert(BERT_FT, pretrained[0], tmp_path, task=load_task("subj", corpora))
    state = load_checkpoint(tmp_path / CHECKPOINT_NAME, map_location="cpu")
    assert (state["seed_index"], state["epoch"]) == (0, 1)
    assert all(torch.isfinite(t).all() for t in state["model"].values() if t.is_floating_point())


def test_a_second_run_on_the_same_folder_is_refused(tmp_path, monkeypatch, capsys):
    """While a run holds the folder's lock, a second run on it exits 2 in one line; the first run's checkpoint stays
    its own (before, both ran and the checkpoint alternated between their seeds)."""
    run, second = tmp_path / "run", []

    def start_another(step):
        if step == 1:
            second.append(_smoke(run, "--set", "seed=1"))

    _inject(monkeypatch, on_step=start_another)
    assert _smoke(run, "--set", "epochs=1") == 0
    assert second == [2]
    err = capsys.readouterr().err
    assert "is in use by another run" in err and f"pid {os.getpid()}" in err, err
    assert torch.load(run / CHECKPOINT_NAME, weights_only=False)["config"]["seed"] == 0
    assert not (run / LOCK_FILE).exists(), "the lock is released when the run ends"


def test_a_lock_held_by_another_process_refuses_and_a_killed_ones_is_taken_over(tmp_path, monkeypatch, capsys):
    """Another process holds the folder: refused, naming its pid. Killed with SIGKILL, it leaves its lock file (and a
    temporary file) behind; the next run takes the folder over and removes both."""
    run = tmp_path / "run"
    holder = subprocess.Popen([sys.executable, "-c", "import sys, time; from attnconv.train.folder import open_run; "
                               "open_run(sys.argv[1], False); print('holding', flush=True); time.sleep(120)", str(run)],
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "holding"
        monkeypatch.setattr(vision, "_load_data", _no_data)
        assert _smoke(run) == 2
        _one_line(capsys, f"pid {holder.pid}", "in use by another run")
    finally:
        holder.kill()
        holder.wait()
    assert (run / LOCK_FILE).read_text().split()[0] == str(holder.pid), "a killed run leaves its lock file"
    (run / ".checkpoint.pt.abc123.tmp").write_bytes(b"half a checkpoint")  # as a run killed mid-write does
    monkeypatch.setattr(vision, "_load_data", lambda *args, **kwargs: SMOKE_DATA)
    assert _smoke(run, "--set", "epochs=1") == 0, "the process that held the lock is gone: the lock is stale"
    assert not (run / LOCK_FILE).exists() and _temporaries(run) == []


def test_resume_checks_the_data_and_the_config_before_the_data_loads(tmp_path, monkeypatch, capsys):
    run = tmp_path / "run"
    monkeypatch.setattr(vision, "_load_data", lambda *args, **kwargs: SMOKE_DATA)
    assert _smoke(run, "--data", str(tmp_path / "a")) == 0
    capsys.readouterr()
    monkeypatch.setattr(vision, "_load_data", _no_data)
    assert _smoke(run, "--resume", "--data", str(tmp_path / "b")) == 2
    _one_line(capsys, "cannot resume", str(tmp_path / "a"), str(tmp_path / "b"))
    assert _smoke(run, "--resume") == 2
    _one_line(capsys, "cannot resume", "(the default copy)")
    assert _smoke(run, "--resume", "--data", str(tmp_path / "a"), "--set", "lr=0.2") == 2
    _one_line(capsys, "cannot resume", "['lr']")
    assert _smoke(run) == 2
    _one_line(capsys, "--resume")
    assert _smoke(tmp_path / "never", "--resume") == 2
    _one_line(capsys, "no checkpoint")
    monkeypatch.setattr(vision, "_load_data", lambda *args, **kwargs: SMOKE_DATA)
    assert _smoke(run, "--resume", "--data", str(tmp_path / "a")) == 0


def test_an_unusable_out_is_refused_before_the_data_loads(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(vision, "_load_data", _no_data)
    a_file = tmp_path / "a-file"
    a_file.write_text("not a folder")
    assert _smoke(a_file) == 2
    _one_line(capsys, "is a file")
    assert _smoke(a_file / "run") == 2
    _one_line(capsys, "cannot create the run folder")


def _read_only(folder, monkeypatch):
    """Make ``folder`` read-only; as root, where permissions do not bind, creating files in it fails instead."""
    folder.chmod(0o555)
    if os.access(folder, os.W_OK):
        real_open = os.open

        def refuse(path, flags, *args, **kwargs):
            if Path(path).parent == folder and flags & os.O_CREAT:
                raise PermissionError(errno.EACCES, "Permission denied", str(path))
            return real_open(path, flags, *args, **kwargs)
        monkeypatch.setattr(os, "open", refuse)


@pytest.fixture
def interactive_sigint():
    """SIGINT as an interactive Ctrl-C meets it. A process started in the background by a non-interactive shell
    (``nohup make test &``) inherits SIGINT as ignored, and Python then leaves it ignored."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, previous)


def test_sigint_is_one_line_keeps_the_checkpoint_and_resumes(tmp_path, monkeypatch, capsys, interactive_sigint):
    """Ctrl-C in epoch 2: exit 130 and one line (before: a traceback); epoch 1's checkpoint is kept, no temporary
    file or lock is left, a read-only folder refuses the resume before the data loads, and --resume finishes."""
    run, saved = tmp_path / "run", {}

    def interrupt(step):
        if step == 6:  # epoch 2 (4 steps an epoch): epoch 1's checkpoint is on disk
            saved["bytes"] = (run / CHECKPOINT_NAME).read_bytes()
            os.kill(os.getpid(), signal.SIGINT)

    _inject(monkeypatch, on_step=interrupt)
    assert _smoke(run) == 130
    _one_line(capsys, "interrupted", "is kept", "--resume")
    assert (run / CHECKPOINT_NAME).read_bytes() == saved["bytes"]
    assert _temporaries(run) == [] and not (run / LOCK_FILE).exists()

    monkeypatch.setattr(vision, "train_vision", REAL_TRAIN)
    monkeypatch.setattr(vision, "_load_data", _no_data)
    with monkeypatch.context() as patch:
        _read_only(run, patch)
        assert _smoke(run, "--resume") == 2
    run.chmod(0o755)
    _one_line(capsys, "cannot write in", str(run))
    monkeypatch.setattr(vision, "_load_data", lambda *args, **kwargs: SMOKE_DATA)
    assert _smoke(run, "--resume") == 0
    assert torch.load(run / CHECKPOINT_NAME, weights_only=False)["epoch"] == 2


def test_a_full_disk_is_one_line_and_keeps_the_last_checkpoint(tmp_path, monkeypatch, capsys):
    """The writer raising ENOSPC while saving epoch 2's checkpoint: exit 1 and one line that says the disk is full
    (before: torch's "unexpected pos"); epoch 1's checkpoint is intact and no temporary file is left."""
    run, saved = tmp_path / "run", {}
    real_write = checkpoint._write_bytes

    def full_disk(path, data):
        if path.name.startswith(f".{CHECKPOINT_NAME}.") and "bytes" in saved:
            real_write(path, bytes(data)[:100])  # part of it reached the disk
            raise OSError(errno.ENOSPC, "No space left on device")
        real_write(path, data)

    def remember(step):
        if step == 5:
            saved["bytes"] = (run / CHECKPOINT_NAME).read_bytes()

    _inject(monkeypatch, on_step=remember)
    monkeypatch.setattr(checkpoint, "_write_bytes", full_disk)
    assert _smoke(run) == 1
    _one_line(capsys, "disk is full", str(run / CHECKPOINT_NAME), "is kept")
    assert (run / CHECKPOINT_NAME).read_bytes() == saved["bytes"]
    assert _temporaries(run) == [] and not (run / LOCK_FILE).exists()


@pytest.mark.parametrize("task, override, message", [
    ("vision", "batch_size=300", "must not exceed train_images"),  # the smoke config's 256
    ("vision", "train_images=None", None),  # with batch_size=60000 below: more than CIFAR-10 holds
    ("bert-pretrain", "mask_prob=2.0", "mask_prob must be in (0, 1)"),
    ("bert-pretrain", "validation_fraction=-1", "validation_fraction must be in (0, 1)"),
    ("bert-pretrain", "model.conv_kernel_size=4", "conv_kernel_size must be odd"),
])
def test_value_rules_are_one_line_before_the_data_loads(task, override, message, tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(vision, "_load_data", _no_data)
    monkeypatch.setattr(bert_pretrain, "prepare_pretraining", _no_data)
    extra = ["--set", "batch_size=60000"] if message is None else []
    assert main([task, "--config", "smoke", "--out", str(tmp_path / "run"), "--set", override, *extra]) == 2
    _one_line(capsys, message or "batch_size (60000) exceeds the 50000 images")


def test_a_batch_larger_than_the_data_given_is_one_line(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(vision, "_load_data", lambda *args, **kwargs: _tiny_data(64, 32))
    assert main(["vision", "--config", "smoke", "--out", str(tmp_path / "run"), "--data", str(tmp_path), "--set",
                 "train_images=None", "--set", "test_images=None", "--set", "batch_size=128"]) == 2
    _one_line(capsys, "batch_size (128) exceeds the 64 training images")


# Everyday mistakes: each is one line on stderr, no traceback, exit code 2, before any data loads where it can be.

def _no_cuda_device() -> str:
    """A CUDA device this machine does not have: GPU 0 without CUDA, else one past the last GPU."""
    return f"cuda:{torch.cuda.device_count() if torch.cuda.is_available() else 0}"


@pytest.mark.parametrize("task", ["vision", "bert-pretrain", "bert-finetune"])
def test_a_device_this_machine_lacks_is_one_line_before_the_data_loads(task, tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(vision, "_load_data", _no_data)
    monkeypatch.setattr(bert_pretrain, "prepare_pretraining", _no_data)
    extra = ["--from", str(tmp_path / "nowhere")] if task == "bert-finetune" else []
    device = _no_cuda_device()
    assert main([task, "--config", "smoke", "--out", str(tmp_path / "run"), "--set", f"device={device}", *extra]) == 2
    _one_line(capsys, f"{task}: bad config: device='{device}'", "CUDA" if device == "cuda:0" else "this machine has")


def test_an_empty_data_folder_is_one_line(tmp_path, capsys):
    empty = tmp_path / "empty"
    empty.mkdir()
    assert main(["vision", "--config", "smoke", "--out", str(tmp_path / "run"), "--data", str(empty)]) == 2
    _one_line(capsys, f"vision: --data {empty}:", "path must be cifar-10-python.tar.gz")
    broken = tmp_path / "images.zip"
    broken.write_bytes(b"not a zip")
    assert main(["vision", "--config", "smoke", "--out", str(tmp_path / "run2"), "--data", str(broken)]) == 2
    _one_line(capsys, f"vision: --data {broken}:", "not a readable zip archive")


def test_a_data_path_that_does_not_exist_names_the_option(tmp_path, capsys):
    assert main(["vision", "--config", "smoke", "--out", str(tmp_path / "run"), "--data", str(tmp_path / "nope")]) == 2
    _one_line(capsys, f"vision: --data {tmp_path / 'nope'}: ", "does not exist")


def test_a_bug_in_training_keeps_its_traceback(tmp_path, monkeypatch):
    """Only the data loaders' own ValueError is a user's mistake; one raised elsewhere propagates."""
    def broken(*args, **kwargs):
        raise ValueError("a bug")

    monkeypatch.setattr(vision, "_load_data", broken)
    with pytest.raises(ValueError, match="a bug"):
        main(["vision", "--config", "smoke", "--out", str(tmp_path / "run"), "--data", str(tmp_path)])


def test_a_finetuning_max_length_above_the_pretrained_models_is_one_line(tmp_path, monkeypatch, capsys):
    pretrained = tmp_path / "pre"
    pretrained.mkdir()
    torch.save({"model_config": {"max_length": 64}}, pretrained / CHECKPOINT_NAME)  # all the check reads
    import attnconv.train.bert_finetune as bert_finetune
    monkeypatch.setattr(bert_finetune, "_finetune", _no_data)
    assert main(["bert-finetune", "--config", "smoke", "--from", str(pretrained), "--out", str(tmp_path / "ft"),
                 "--set", "max_length=65"]) == 2
    _one_line(capsys, "bert-finetune: bad config: max_length (65) exceeds the pretrained model's max_length (64)",
              "--set max_length=64")


@pytest.mark.parametrize("args, message", [
    (["vision", "--set", "lr"], "overrides must look like key=value, got 'lr'"),
    (["vision", "--set", "nosuch=1"], "unknown config field 'nosuch'"),
    (["vision", "--set", "sa.nope=2"], "unknown config field 'sa.nope'"),
    (["vision", "--set", f"device={_no_cuda_device()}"], "bad config: device="),
])
def test_everyday_mistakes_end_the_command_without_a_traceback(args, message, tmp_path):
    """Through ``python -m attnconv.train``, as a user runs it: stderr is the one line, the exit code 2."""
    done = subprocess.run([sys.executable, "-m", "attnconv.train", *args, "--config", "smoke", "--out",
                           str(tmp_path / "run")], capture_output=True, text=True, timeout=300)
    assert done.returncode == 2, done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and message in done.stderr, done.stderr
    assert "Traceback" not in done.stderr and not (tmp_path / "run").exists()


def test_a_huge_learning_rate_stops_resnet18_at_the_first_non_finite_loss(tmp_path, monkeypatch, capsys):
    """``--model resnet18 --set lr=1e30`` on a real (tiny) CIFAR-10 folder: the run stops at the first NaN or infinite
    loss, before that step's update, with the step and the reason, exit code 1, and nothing trained after it."""
    from .cifar_fixtures import tiny_arrays, write_official_folder

    write_official_folder(tmp_path / "cifar", tiny_arrays(64, 32))
    losses = []
    real_check = vision.check_finite_loss

    def recording(value, where, checkpoint_path):
        losses.append((value, where))
        real_check(value, where, checkpoint_path)

    monkeypatch.setattr(vision, "check_finite_loss", recording)
    run = tmp_path / "run"
    assert main(["vision", "--config", "smoke", "--model", "resnet18", "--set", "lr=1e30", "--set", "train_images=64",
                 "--set", "test_images=32", "--set", "batch_size=16", "--set", "progress=False",
                 "--data", str(tmp_path / "cifar"),
                 "--out", str(run)]) == 1
    finite = [math.isfinite(v) for v, _ in losses]
    assert finite[-1] is False and all(finite[:-1]), losses  # the first non-finite loss is the last one seen
    value, where = losses[-1]
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err, err
    assert err.startswith(f"vision: training stopped: the loss is {value} at {where};"), err
    assert err.endswith("no checkpoint was written yet. Lower the learning rate or check the data, then start the run "
                        "again"), err
    assert not any(run.iterdir()), list(run.iterdir())  # nothing half-written: the same --out takes a new run
