"""Fine-tune a pretrained BERT on a sentence task: the loop behind ``python -m attnconv.train bert-finetune``.

:func:`finetune_bert` trains one :class:`~attnconv.models.bert.BertClassifier` per seed (fresh head, order and
dropout; the same pretrained encoder and data split), evaluates after every epoch, and reports the mean and
standard deviation of test accuracy over the seeds.

The checkpoint, written after every epoch, records where the run goes next: ``seed_index`` and ``epoch`` (0
when a seed has just finished, so the next one starts afresh). Resuming skips the finished seeds, restores the
model and optimiser of an unfinished one, and replays nothing else: every random stream is derived from
``(seed, epoch or step)``. A NaN or infinite loss stops the run before its update, and a weight or test loss that is not finite stops it before
a checkpoint, keeping the last one.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any, Callable

import numpy as np
import torch
import torch.nn.functional as F
from tokenizers import Tokenizer
from tqdm import tqdm

from ..data.corpus import corpora_dir
from ..data.paths import display_path
from ..data.hub import HUB_TASKS, load_hub_task
from ..data.mlm import PairExamples, encode_pairs, pad_pairs
from ..data.tasks import TaskData, load_task
from ..data.tokenizer import special_ids
from ..models.bert import BertClassifier
from .bert_config import FinetuneConfig
from .bert_pretrain import load_pretrained
from .checkpoint import save_checkpoint, write_json
from .distributed import init_distributed
from .folder import RunFolder, data_identity, open_run
from .provenance import git_commit, provenance
from .optim import adamw, clipped_step
from .precision import precision_autocast, probe_speed, resolve_precision, resume_precision
from .runs import (FINAL_FILE, METRICS_FILE, PROVENANCE_FILE, check_finite_state, config_to_dict, load_average,
                   stream_seed, write_jsonl)
from .schedule import set_lr, warmup_linear

__all__ = ["finetune_bert"]


def _encode_task(tokenizer: Tokenizer, examples, max_length: int) -> tuple[PairExamples, torch.Tensor]:
    pair = examples[0].text_b is not None
    enc = encode_pairs(tokenizer, [e.text_a for e in examples], [e.text_b for e in examples] if pair else None,
                       max_length)
    return enc, torch.tensor([e.label for e in examples])


@torch.no_grad()
def _evaluate_classifier(model: BertClassifier, examples: PairExamples, labels: torch.Tensor, ids, batch_size: int,
                         device: torch.device, precision: str) -> dict[str, float]:
    model.eval()
    loss_sum = correct = 0.0
    for start in range(0, len(examples), batch_size):
        idx = range(start, min(start + batch_size, len(examples)))
        batch = pad_pairs(examples, idx, ids).to(device)
        y = labels[start:start + len(idx)].to(device)
        with precision_autocast(precision, device):
            logits = model(batch.input_ids, batch.token_type_ids, batch.padding_mask).float()
        loss_sum += float(F.cross_entropy(logits, y, reduction="sum"))
        correct += float((logits.argmax(-1) == y).sum())
    model.train()
    return {"test_loss": loss_sum / len(examples), "test_acc": correct / len(examples)}


def _load_task(config: FinetuneConfig, root: str | os.PathLike | None) -> TaskData:
    if config.task in HUB_TASKS:
        return load_hub_task(config.task)
    return load_task(config.task, root, seed=config.split_seed)


def _task_source(task: str, root: str | os.PathLike | None, given: bool) -> str:
    """Where a fine-tuning task's data came from, for the provenance record."""
    if given and root is None:
        return "given"
    if task in HUB_TASKS:
        return "hf:" + "/".join(HUB_TASKS[task][:2])
    return display_path(corpora_dir(root))


def finetune_bert(config: FinetuneConfig, pretrained: str | os.PathLike, out_dir: str | os.PathLike, *,
                  resume: bool = False, task: TaskData | None = None, root: str | os.PathLike | None = None,
                  on_step: Callable[[int], None] | None = None) -> dict[str, Any]:
    """Fine-tune a pretrained BERT on ``config.task`` once per seed; write the runs into ``out_dir``.

    Args:
        config: the recipe.
        pretrained: a ``bert-pretrain`` run folder or its ``checkpoint.pt``.
        out_dir: receives ``metrics.jsonl`` (one line per seed and epoch), ``final.json`` (accuracy per seed,
            mean and standard deviation), ``provenance.json`` and ``checkpoint.pt``.
        resume: continue from ``out_dir/checkpoint.pt``.
        task: the task's data (default :func:`attnconv.data.tasks.load_task` with ``root``).
        on_step: called with the global step number (over all seeds) after every optimiser step.

    Raises:
        ~attnconv.train.folder.RunSetupError: before any data loads, ``out_dir`` cannot be used (a file, not
            writable, locked by another live run), or the checkpoint does not match the config, ``root`` or
            ``pretrained``.
    """
    started = time.perf_counter()
    device = init_distributed(config.device).device
    with open_run(out_dir, resume, data=data_identity(data=root, from_=pretrained), required=_RESUME_KEYS,
                  check=lambda state: resume_precision(state, config_to_dict(config), device)) as run:
        return _finetune(config, pretrained, run, device, task, root, on_step, started)


_RESUME_KEYS = ("config", "model", "optimizer", "seed_index", "epoch", "history", "results", "elapsed")


def _finetune(config: FinetuneConfig, pretrained: str | os.PathLike, run: RunFolder, device: torch.device,
              task: TaskData | None, root: str | os.PathLike | None, on_step: Callable[[int], None] | None,
              started: float) -> dict[str, Any]:
    """The body of :func:`finetune_bert`, in a run folder already checked and locked."""
    code_at_start = git_commit()  # the code this process trains with, whatever the checkout holds at the end
    out, ckpt_path = run.out, run.checkpoint
    mlm, tokenizer, pre_state = load_pretrained(pretrained, device)
    ids = special_ids(tokenizer)
    if config.max_length > mlm.config.max_length:
        raise ValueError(f"max_length ({config.max_length}) exceeds the model's max_length ({mlm.config.max_length})")
    given_task = task is not None
    task = task if given_task else _load_task(config, root)
    if task.name != config.task:
        raise ValueError(f"task data is {task.name!r} but config.task is {config.task!r}")
    train_examples = list(task.train)
    if config.train_examples is not None and config.train_examples < len(train_examples):
        keep = np.sort(np.random.default_rng(config.split_seed).permutation(len(train_examples))[:config.train_examples])
        train_examples = [train_examples[i] for i in keep]
    train, train_y = _encode_task(tokenizer, train_examples, config.max_length)
    test, test_y = _encode_task(tokenizer, task.test, config.max_length)
    per_epoch = max(1, len(train) // config.batch_size)
    total = config.epochs * per_epoch
    warmup_steps = int(round(config.warmup * total))

    state = {"seed_index": 0, "epoch": 0, "history": [], "results": [], "elapsed": 0.0}
    if run.state is not None:  # resume
        state = run.state
        precision = resume_precision(state, config_to_dict(config), device)
    else:
        def probe() -> dict[str, Any]:  # the speed of the first seed's classifier on a real-shaped batch
            b = pad_pairs(train, range(min(config.batch_size, len(train))), ids).to(device)
            y = train_y[:len(b.input_ids)].to(device)
            with torch.random.fork_rng(devices=[device] if device.type == "cuda" else []):
                torch.manual_seed(config.seeds[0])
                net = BertClassifier.from_pretrained(mlm, len(task.label_names), config.dropout).to(device)
            return probe_speed(net, lambda n: F.cross_entropy(n(b.input_ids, b.token_type_ids, b.padding_mask).float(),
                                                              y), device)
        precision = resolve_precision(config.precision, config.amp, device, probe)
    used = precision["used"]
    history, results, elapsed = state["history"], state["results"], state["elapsed"]

    for seed_index in range(state["seed_index"], len(config.seeds)):
        seed = config.seeds[seed_index]
        torch.manual_seed(seed)
        model = BertClassifier.from_pretrained(mlm, len(task.label_names), config.dropout).to(device)
        optimizer = adamw(model, config.lr, config.weight_decay)
        first_epoch = 0
        if seed_index == state["seed_index"] and state["epoch"] > 0:  # the checkpoint stopped inside this seed
            model.load_state_dict(state["model"])
            optimizer.load_state_dict(state["optimizer"])
            first_epoch = state["epoch"]
        model.train()
        for epoch in range(first_epoch, config.epochs):
            t0 = time.perf_counter()
            order = np.random.default_rng(stream_seed(seed, epoch, 0)).permutation(len(train))
            loss_sum = 0.0
            for i in tqdm(range(per_epoch), desc=f"{config.task} seed {seed} epoch {epoch + 1}", unit="step",
                          mininterval=2.0, disable=not config.progress, leave=False):
                step = epoch * per_epoch + i
                idx = order[i * config.batch_size:(i + 1) * config.batch_size]
                batch = pad_pairs(train, idx, ids).to(device)
                torch.manual_seed(stream_seed(seed, step, 2))  # dropout
                set_lr(optimizer, config.lr * warmup_linear(step, total, warmup_steps))
                with precision_autocast(used, device):
                    logits = model(batch.input_ids, batch.token_type_ids, batch.padding_mask).float()
                loss = F.cross_entropy(logits, train_y[idx].to(device))
                loss_value = clipped_step(model, optimizer, loss, f"seed {seed}, epoch {epoch + 1}, step {step + 1}",
                                          ckpt_path)
                loss_sum += loss_value
                if on_step is not None:
                    on_step(seed_index * total + step + 1)
            metrics = _evaluate_classifier(model, test, test_y, ids, config.eval_batch_size, device, used)
            check_finite_state(model, f"seed {seed}, epoch {epoch + 1}", ckpt_path, metrics["test_loss"])
            elapsed += time.perf_counter() - t0
            history.append({"seed": seed, "epoch": epoch + 1, "step": (epoch + 1) * per_epoch,
                            "train_loss": loss_sum / per_epoch, **metrics, "wall_time_s": elapsed})
            seed_done = epoch + 1 == config.epochs
            if seed_done:
                results.append({"seed": seed, **metrics})
            write_jsonl(out / METRICS_FILE, history)
            save_checkpoint(ckpt_path, {"config": config_to_dict(config), "seed_index": seed_index + seed_done,
                                        "epoch": 0 if seed_done else epoch + 1, "model": model.state_dict(),
                                        "optimizer": optimizer.state_dict(), "history": history,
                                        "results": results, "elapsed": elapsed, "precision": used,
                                        "data": run.data})

    accs = np.array([r["test_acc"] for r in results])
    final = {"task": config.task, "variant": mlm.config.variant, "config": config.name,
             "pretrained": str(pretrained), "pretrain_steps": pre_state["step"],
             "pretrain_val_loss": pre_state["history"][-1]["val_loss"] if pre_state["history"] else None,
             "seeds": list(config.seeds), "test_acc": [r["test_acc"] for r in results],
             "test_acc_mean": float(accs.mean()), "test_acc_std": float(accs.std(ddof=1)) if len(accs) > 1 else 0.0,
             "train_examples": len(train), "test_examples": len(test), "wall_time_s": elapsed}
    write_json(out / FINAL_FILE, final)
    write_json(out / PROVENANCE_FILE, provenance(
        device, 1, task.description, _task_source(config.task, root, given_task), config_to_dict(config),
        {"wall_time_s": elapsed, "process_time_s": time.perf_counter() - started,
         "load_average_at_end": load_average(), "torch_threads": torch.get_num_threads(),
         "pretrained_config": pre_state["config"], "precision": precision}, code=code_at_start))
    return final
