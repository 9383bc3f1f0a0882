"""Train an image classifier on CIFAR-10: the loop behind ``python -m attnconv.train vision``.

One function, :func:`train_vision`, in the order a run happens:

1. load CIFAR-10 once and keep it on the training device as uint8 (augmentation happens there, batched);
2. build the model and SGD with momentum (or AdamW), without weight decay on Gaussian centres and spreads;
3. every epoch: shuffle, augment, step with a warm-up + cosine learning rate, evaluate, append a line to
   ``metrics.jsonl``, snapshot the attention centres, and write an atomic checkpoint;
4. at the end: ``final.json``, ``provenance.json``, and for attention models the heads' attention maps.

Every random stream (data order, crops and flips, dropout) is re-derived from ``(seed, epoch, rank)`` when an
epoch starts, so a checkpoint taken between epochs fixes the rest of the run: ``resume=True`` continues
bit-for-bit where an interrupted run stopped (it replays the interrupted epoch from its start).

Under ``torchrun`` with several processes, each process takes an equal slice of every global batch; gradients
are averaged by DistributedDataParallel, metrics are summed over processes, and rank 0 alone writes files.

A NaN or infinite loss stops the run before its update (:class:`~attnconv.train.runs.NonFiniteLossError`), and so
does a weight or a test loss that is not finite at the end of an epoch, before its checkpoint; the checkpoint of
the last good epoch stays as it was. The folder's file names come from :mod:`attnconv.train.runs`.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any, Callable

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor, nn
from tqdm import tqdm

from ..data import CIFAR10, CropFlip, load_cifar10, normalize
from ..finite import deferred_finite_checks
from ..models import SelfAttentionNet, build_model, model_cost, no_weight_decay
from .artifacts import attention_summary, center_snapshot
from .cuda import enable_fast_kernels
from .checkpoint import save_checkpoint, write_json
from .distributed import DistInfo, all_reduce_sum, barrier, init_distributed
from .folder import RunFolder, RunSetupError, data_identity, open_run
from .provenance import git_commit, provenance
from .precision import precision_autocast, probe_speed, resolve_precision, resume_precision
from .runs import (ATTENTION_FILE, CENTERS_FILE, CHECKPOINT_NAME, FINAL_FILE, HEADS_FILE, METRICS_FILE,
                   PROVENANCE_FILE, check_finite_loss, check_finite_state, config_to_dict, load_average, stream_seed,
                   write_jsonl)
from .schedule import set_lr, warmup_cosine
from .threads import set_threads
from .vision_config import TrainConfig

__all__ = ["CHECKPOINT_NAME", "train_vision"]


def _subset(n_total: int, n: int | None, seed: int, what: str) -> Tensor:
    """Indices of a fixed random subset of ``n`` items (all of them, in order, when ``n`` is None)."""
    if n is None:
        return torch.arange(n_total)
    if n > n_total:
        raise RunSetupError(f"{what} ({n}) exceeds the {n_total} images available")
    return torch.randperm(n_total, generator=torch.Generator().manual_seed(seed))[:n].sort().values


def _optimizer(model: nn.Module, config: TrainConfig) -> torch.optim.Optimizer:
    """SGD with momentum, or AdamW; weight decay on every parameter except Gaussian centres and spreads and GPSA
    gates."""
    skip = no_weight_decay(model)
    decay = [p for n, p in model.named_parameters() if n not in skip]
    plain = [p for n, p in model.named_parameters() if n in skip]
    groups = [{"params": decay, "weight_decay": config.weight_decay}]
    if plain:
        groups.append({"params": plain, "weight_decay": 0.0})
    if config.optimizer == "adamw":
        return torch.optim.AdamW(groups, lr=config.lr)
    return torch.optim.SGD(groups, lr=config.lr, momentum=config.momentum)


class _Data:
    """The train and test tensors on the device, and the slices this process works on."""

    def __init__(self, data: CIFAR10, config: TrainConfig, info: DistInfo) -> None:
        train = _subset(len(data.train_images), config.train_images, config.seed, "train_images")
        test = _subset(len(data.test_images), config.test_images, config.seed + 1, "test_images")
        self.train_x = data.train_images[train].to(info.device)  # (N, 32, 32, 3) uint8
        self.train_y = data.train_labels[train].to(info.device)
        self.test_x = data.test_images[test].to(info.device)
        self.test_y = data.test_labels[test].to(info.device)
        if config.batch_size % info.world_size:
            raise RunSetupError(f"batch_size ({config.batch_size}) must be divisible by the number of processes "
                             f"({info.world_size})")
        self.steps_per_epoch = len(self.train_x) // config.batch_size
        if self.steps_per_epoch == 0:
            raise RunSetupError(f"batch_size ({config.batch_size}) exceeds the {len(self.train_x)} training images")
        share = config.batch_size // info.world_size
        self.local = slice(info.rank * share, (info.rank + 1) * share)  # this rank's part of every global batch
        self.full_test = None  # the whole test set, for the final number when epochs use a subset
        if config.test_images is not None:
            self.full_test = (data.test_images.to(info.device), data.test_labels.to(info.device))


def _evaluate(model: nn.Module, images: Tensor, labels: Tensor, config: TrainConfig, info: DistInfo,
              autocast, flip: bool = False) -> dict[str, float]:
    """Test loss and accuracy of uint8 ``images`` ``(N, 32, 32, 3)``, each process taking every ``world_size``-th
    image; ``flip``: each image's logits averaged with those of its left-right mirror."""
    model.eval()
    sums = torch.zeros(3, dtype=torch.float64, device=info.device)  # loss sum, correct, count
    with torch.no_grad():
        for chunk in torch.arange(info.rank, len(images), info.world_size, device=info.device).split(config.eval_batch_size):
            x, y = normalize(images[chunk]), labels[chunk]
            with autocast():
                logits = model(x).float()
                if flip:
                    logits = (logits + model(x.flip(2)).float()) / 2  # x is (b, H, W, C): dim 2 is the width
            sums += torch.stack([F.cross_entropy(logits, y, reduction="sum").double(),
                                 (logits.argmax(-1) == y).sum().double(),
                                 torch.tensor(len(y), dtype=torch.float64, device=info.device)])
    model.train()
    loss, correct, count = all_reduce_sum(sums, info).tolist()
    return {"test_loss": loss / count, "test_acc": correct / count}


class _Model:
    """The network (``net``), what runs it (``model``: ``net`` wrapped in DDP and/or ``torch.compile``), its
    optimiser, its cost, and the autocast context (float32 until :meth:`set_precision`)."""

    def __init__(self, config: TrainConfig, info: DistInfo) -> None:
        torch.manual_seed(config.seed)  # the same initial weights on every process
        net = build_model(config.model, config.model_config).to(info.device)
        if info.distributed and info.device.type == "cuda":  # batch statistics of the global batch, as in 1 process
            net = nn.SyncBatchNorm.convert_sync_batchnorm(net)
        self.net = net
        self.cost = model_cost(net)
        self.optimizer = _optimizer(net, config)
        model: nn.Module = net
        if info.distributed:
            model = nn.parallel.DistributedDataParallel(net, device_ids=[info.device] if info.device.type == "cuda" else None)
        self.model = torch.compile(model) if config.compile else model
        self.set_precision({"used": "fp32"}, info.device)

    def set_precision(self, choice: dict[str, Any], device: torch.device) -> None:
        """Run forward passes in ``choice["used"]`` from now on (``choice`` is recorded in provenance)."""
        self.precision = choice
        self.autocast = lambda: precision_autocast(choice["used"], device)


def _choose_precision(m: _Model, data: _Data, config: TrainConfig, info: DistInfo) -> dict[str, Any]:
    """:func:`~attnconv.train.precision.resolve_precision` for a new run; a CPU probe times ``m.net`` on a batch of
    this process's share of real training images. Every process follows the first one's choice."""
    x = normalize(data.train_x[:data.local.stop - data.local.start])  # (b, 32, 32, 3) float32
    y = data.train_y[:len(x)]
    choice = resolve_precision(config.precision, config.amp, info.device,
                               lambda: probe_speed(m.net, lambda net: F.cross_entropy(net(x).float(), y), info.device))
    vote = torch.tensor([float(choice["used"] == "bf16") if info.is_main else 0.0], dtype=torch.float64,
                        device=info.device)
    if all_reduce_sum(vote, info).item() != float(choice["used"] == "bf16"):
        choice = {**choice, "used": "bf16" if choice["used"] == "fp32" else "fp32", "reason": "the first process's probe"}
    return choice


def _train_epoch(epoch: int, m: _Model, data: _Data, config: TrainConfig, info: DistInfo, snapshots: list,
                 on_step: Callable[[int], None] | None, ckpt_path: Path) -> dict[str, float]:
    """One pass over the training images; returns the epoch's train metrics (summed over processes)."""
    spe, start = data.steps_per_epoch, time.perf_counter()
    total_steps = config.epochs * spe
    warmup_steps = int(round(config.warmup * total_steps))
    snap_every = max(1, spe // config.snapshots_per_epoch)
    augment = CropFlip()
    order = torch.randperm(len(data.train_x), generator=torch.Generator().manual_seed(
        stream_seed(config.seed, epoch, 0))).to(info.device)
    crops = torch.Generator(info.device).manual_seed(stream_seed(config.seed, epoch, 1))
    torch.manual_seed(stream_seed(config.seed, epoch, 2, info.rank))  # dropout
    sums = torch.zeros(3, dtype=torch.float64, device=info.device)  # loss sum, correct, count
    bar = tqdm(range(spe), desc=f"epoch {epoch + 1}/{config.epochs}", unit="step", mininterval=2.0,
               disable=not (config.progress and info.is_main), leave=False)
    m.model.train()
    for i in bar:
        step = epoch * spe + i
        params = augment.sample(config.batch_size, crops)  # drawn for the whole global batch on every rank
        idx = order[i * config.batch_size:(i + 1) * config.batch_size][data.local]
        x = augment.apply(data.train_x[idx], params[data.local])  # (b, 32, 32, 3) float32
        y = data.train_y[idx]
        lr = config.lr * warmup_cosine(step, total_steps, warmup_steps)
        set_lr(m.optimizer, lr)
        with m.autocast(), deferred_finite_checks():  # no host sync per layer (nor a compiled-graph break):
            logits = m.model(x)  # an overflow anywhere makes the loss non-finite, checked once below
        loss = F.cross_entropy(logits.float(), y, label_smoothing=config.label_smoothing)  # mean over this rank's
        # share; DDP averages the ranks
        # Every rank sees the same verdict (a bad share anywhere poisons the averaged gradients).
        check_finite_loss(float(all_reduce_sum(loss.detach().double()[None], info)), f"epoch {epoch + 1}, step "
                          f"{step + 1}", ckpt_path)
        m.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        m.optimizer.step()
        with torch.no_grad():
            sums += torch.stack([loss.detach().double() * len(y), (logits.argmax(-1) == y).sum().double(),
                                 torch.tensor(len(y), dtype=torch.float64, device=info.device)])
        if (i + 1) % snap_every == 0 and (i + 1) < spe:
            snapshots.extend(filter(None, [center_snapshot(m.net, epoch + (i + 1) / spe, step + 1)]))
        if not bar.disable and i % 20 == 0:
            bar.set_postfix(loss=f"{loss.item():.3f}", lr=f"{lr:.4f}")
        if on_step is not None:
            on_step(step + 1)
    bar.close()
    loss_sum, correct, count = all_reduce_sum(sums, info).tolist()
    seconds = time.perf_counter() - start
    return {"lr": lr, "train_loss": loss_sum / count, "train_acc": correct / count, "train_time_s": seconds,
            "train_images_per_s": count / seconds}


def _load_data(data_path: str | os.PathLike | None, info: DistInfo) -> CIFAR10:
    """The first process decodes and caches the data set; the others then read the cache."""
    sizes = None if data_path else {"train": 50_000, "test": 10_000}
    data = load_cifar10(data_path, expected_sizes=sizes) if info.is_main else None
    barrier(info)
    return data if data is not None else load_cifar10(data_path, expected_sizes=sizes)


def train_vision(
    config: TrainConfig,
    out_dir: str | os.PathLike,
    *,
    resume: bool = False,
    data: CIFAR10 | None = None,
    data_path: str | os.PathLike | None = None,
    on_step: Callable[[int], None] | None = None,
) -> dict[str, Any]:
    """Train ``config.model`` on CIFAR-10 and write the run's results into ``out_dir``.

    Args:
        config: the recipe and sizes (see :mod:`attnconv.train.vision_config`).
        out_dir: receives ``metrics.jsonl``, ``final.json``, ``provenance.json``, ``checkpoint.pt`` and, for
            attention models, ``centers.jsonl`` (Gaussian kinds), ``attention.npz`` and ``heads.json``. With
            several processes it must be on a file system that every process sees.
        resume: continue from ``out_dir/checkpoint.pt``. Without it, an existing checkpoint is an error.
        data: the data set, already loaded; default :func:`~attnconv.data.cifar10.load_cifar10` (``data_path`` if
            given, with any number of images).
        on_step: called with the global step number after every optimiser step (on every process).

    Returns:
        The contents of ``final.json``: final test accuracy and loss, epochs and steps done, wall time.

    Raises:
        ~attnconv.train.folder.RunSetupError: before any data loads, ``out_dir`` cannot be used (a file, not
            writable, locked by another live run), the checkpoint does not match the config or ``data_path``, or
            the batch is larger than the data.
    """
    started = time.perf_counter()
    load_at_start = load_average()
    code_at_start = git_commit()  # the code this process trains with, whatever the checkout holds at the end
    info = init_distributed(config.device)
    if config.batch_size % info.world_size:  # the rules that need no data, checked before it loads
        raise RunSetupError(f"batch_size ({config.batch_size}) must be divisible by the number of processes "
                            f"({info.world_size})")
    if data is None and data_path is None:  # the default copy: 50,000 training and 10,000 test images
        for what, n, available in (("batch_size", config.batch_size, 50_000),
                                   ("train_images", config.train_images, 50_000),
                                   ("test_images", config.test_images, 10_000)):
            if n is not None and n > available:
                raise RunSetupError(f"{what} ({n}) exceeds the {available} images of CIFAR-10")
    with open_run(out_dir, resume, data=data_identity(data=data_path), is_main=info.is_main, required=_RESUME_KEYS,
                  check=lambda state: resume_precision(state, config_to_dict(config), info.device)) as run:
        return _train(config, run, info, data, data_path, on_step, started, (load_at_start, code_at_start))


_RESUME_KEYS = ("config", "model", "optimizer", "epoch", "history", "snapshots", "elapsed")


def _train(config: TrainConfig, run: RunFolder, info: DistInfo, data: CIFAR10 | None,
           data_path: str | os.PathLike | None, on_step: Callable[[int], None] | None, started: float,
           at_start: tuple[Any, dict[str, Any]]) -> dict[str, Any]:
    """The body of :func:`train_vision`, in a run folder already checked and locked; ``at_start`` is the load
    average and the code (:func:`~attnconv.train.provenance.git_commit`) when the run started."""
    load_at_start, code_at_start = at_start
    out, ckpt_path = run.out, run.checkpoint
    threads_before = torch.get_num_threads()
    threads = set_threads(config.threads, int(os.environ.get("LOCAL_WORLD_SIZE", "1")))
    enable_fast_kernels(info.device)
    data = data if data is not None else _load_data(data_path, info)
    tensors = _Data(data, config, info)
    m = _Model(config, info)

    if run.state is not None:  # resume
        state = run.state
        m.set_precision(resume_precision(state, config_to_dict(config), info.device), info.device)
        m.net.load_state_dict(state["model"])
        m.optimizer.load_state_dict(state["optimizer"])
        start_epoch, history, snapshots, elapsed = state["epoch"], state["history"], state["snapshots"], state["elapsed"]
    else:
        m.set_precision(_choose_precision(m, tensors, config, info), info.device)
        start_epoch, history, snapshots, elapsed = 0, [], list(filter(None, [center_snapshot(m.net, 0.0, 0)])), 0.0
    if info.is_main:
        out.mkdir(parents=True, exist_ok=True)

    stopped_early = False
    for epoch in range(start_epoch, config.epochs):
        t0, cpu0 = time.perf_counter(), time.process_time()
        train = _train_epoch(epoch, m, tensors, config, info, snapshots, on_step, ckpt_path)
        test = _evaluate(m.model, tensors.test_x, tensors.test_y, config, info, m.autocast)
        check_finite_state(m.net, f"epoch {epoch + 1}", ckpt_path, test["test_loss"])  # before anything is written
        epoch_s = time.perf_counter() - t0
        cpu_s = all_reduce_sum(torch.tensor([time.process_time() - cpu0], dtype=torch.float64, device=info.device),
                               info).item()  # every process's CPU seconds: below threads x wall, the machine was shared
        elapsed += epoch_s
        history.append({"epoch": epoch + 1, "step": (epoch + 1) * tensors.steps_per_epoch, **train, **test,
                        "epoch_time_s": epoch_s, "cpu_time_s": cpu_s, "wall_time_s": elapsed})
        snapshots.extend(filter(None, [center_snapshot(m.net, float(epoch + 1), (epoch + 1) * tensors.steps_per_epoch)]))
        if info.is_main:
            r = history[-1]
            tqdm.write(f"epoch {epoch + 1}/{config.epochs}: train loss {r['train_loss']:.4f} acc {r['train_acc']:.4f} | "
                       f"test loss {r['test_loss']:.4f} acc {r['test_acc']:.4f} | {epoch_s:.1f} s, "
                       f"{r['train_images_per_s']:.0f} img/s")
            write_jsonl(out / METRICS_FILE, history)
            if snapshots:
                write_jsonl(out / CENTERS_FILE, snapshots)
            save_checkpoint(ckpt_path, {"config": config_to_dict(config), "epoch": epoch + 1,
                                        "model": m.net.state_dict(), "optimizer": m.optimizer.state_dict(),
                                        "history": history, "snapshots": snapshots, "elapsed": elapsed,
                                        "precision": m.precision["used"], "data": run.data})
        barrier(info)
        if config.time_limit is not None and elapsed > config.time_limit and epoch + 1 < config.epochs:
            stopped_early = True
            break

    full = None
    if tensors.full_test is not None and history:
        full = _evaluate(m.model, *tensors.full_test, config, info, m.autocast, flip=config.flip_test)
        if config.flip_test:  # the same network without the mirrored look, so that the record shows what it adds
            full["test_acc_no_flip"] = _evaluate(m.model, *tensors.full_test, config, info, m.autocast)["test_acc"]
    last = history[-1] if history else {}
    final = {"model": config.model, "config": config.name, "epochs": last.get("epoch", 0), "steps": last.get("step", 0),
             "test_acc": last.get("test_acc"), "test_loss": last.get("test_loss"),
             "best_test_acc": max((r["test_acc"] for r in history), default=None),
             "full_test_acc": full["test_acc"] if full else None,
             "full_test_images": len(tensors.full_test[0]) if full else None,
             **({"full_test_acc_no_flip": full["test_acc_no_flip"]} if full and config.flip_test else {}),
             "wall_time_s": elapsed, "stopped_early": stopped_early, **m.cost.as_dict()}
    summary = None
    if isinstance(m.net, SelfAttentionNet):
        summary = attention_summary(m.net, normalize(tensors.test_x[:min(config.attention_images, len(tensors.test_x))]))
    if info.is_main:
        write_json(out / FINAL_FILE, final)
        if summary is not None:
            np.savez_compressed(out / ATTENTION_FILE, query_maps=summary["query_maps"], queries=summary["queries"],
                                n_images=summary["n_images"])
            write_json(out / HEADS_FILE, summary["heads"])
        write_json(out / PROVENANCE_FILE, provenance(
            info.device, info.world_size, data.description, data.source, config_to_dict(config),
            {"wall_time_s": elapsed, "train_images": len(tensors.train_x), "test_images": len(tensors.test_x),
             "session_time_s": time.perf_counter() - started, "load_average_at_start": load_at_start,
             "load_average_at_end": load_average(), "precision": m.precision,
             "bf16_autocast": m.precision["used"] == "bf16", "compiled": config.compile, "threads": threads},
            code=code_at_start))
    barrier(info)
    torch.set_num_threads(threads_before)  # a caller in the same process gets its own setting back
    return final
