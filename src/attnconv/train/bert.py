"""Pretrain a small BERT with masked-LM and fine-tune it on a sentence task: ``bert-pretrain`` and ``bert-finetune``.

:func:`pretrain_bert`, in the order a run happens:

1. read the corpus, train (or load) the WordPiece tokenizer, encode and cut the documents into sentence pairs;
2. build :class:`~attnconv.models.bert.BertForMaskedLM` and AdamW (no weight decay on biases, LayerNorms and
   other 1-D parameters) with a linear warm-up and linear decay to zero;
3. every step: a batch of the epoch's seeded order, padded to its longest example and masked; every
   ``eval_every`` steps the masked-LM loss and accuracy on fixed, fixed-masked validation examples, a line in
   ``metrics.jsonl`` and an atomic ``checkpoint.pt``;
4. at the end: ``final.json``, ``provenance.json``, ``tokenizer.json`` and ``kernels.json`` (the learned
   convolution kernels, for the chapter).

Every random stream (example order, masking, dropout) is derived from ``(seed, step)``, so ``resume=True``
continues an interrupted run exactly as if it had not stopped. :func:`finetune_bert` does the same for
classification, for each of several seeds, and reports the mean and standard deviation of test accuracy.
The checkpoint, atomic writes and provenance come from :mod:`attnconv.train.checkpoint` and
:mod:`attnconv.train.provenance`. Training runs in one process (no DistributedDataParallel).
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable

import numpy as np
import torch
import torch.nn.functional as F
from tokenizers import Tokenizer
from torch import nn
from tqdm import tqdm

from ..data.cifar10 import default_cache_dir
from ..data.corpus import PRETRAIN_CORPORA, Corpus, corpora_dir, load_corpus
from ..data.mlm import PairExamples, encode_pairs, load_or_encode, make_pairs, mlm_batch, pad_pairs
from ..data.hub import HUB_CORPORA, HUB_TASKS, load_hub_corpus, load_hub_task
from ..data.tasks import TASKS, TaskData, load_task
from ..data.tokenizer import load_or_train_tokenizer, save_tokenizer, special_ids
from ..models.bert import BERT_SIZES, VARIANTS, BertClassifier, BertConfig, BertForMaskedLM
from .checkpoint import atomic_write_text, load_checkpoint, save_checkpoint, write_json
from .config import override_dict
from .distributed import init_distributed
from .provenance import provenance
from .schedule import warmup_linear

__all__ = ["FINETUNE_CONFIGS", "PRETRAIN_CONFIGS", "BertRun", "FinetuneConfig", "PretrainConfig", "apply_overrides",
           "PretrainData", "bert_results_table", "load_bert_runs", "load_pretrained", "prepare_pretraining",
           "finetune_bert", "pretrain_bert", "register_cli", "warmup_linear"]

CHECKPOINT_NAME = "checkpoint.pt"


def _positive(config: Any, *names: str) -> None:
    for name in names:
        value = getattr(config, name)
        if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
            raise ValueError(f"{name} must be a positive integer, got {value!r}")


def _check_common(config: Any) -> None:
    if not config.lr > 0 or config.weight_decay < 0:
        raise ValueError(f"need lr > 0 and weight_decay >= 0, got {config.lr}, {config.weight_decay}")
    if not 0 <= config.warmup < 1:
        raise ValueError(f"warmup must be a fraction in [0, 1), got {config.warmup!r}")
    if config.device not in ("auto", "cpu", "cuda"):
        raise ValueError(f"device must be 'auto', 'cpu' or 'cuda', got {config.device!r}")


@dataclass
class PretrainConfig:
    """Everything that determines a pretraining run (given the corpus).

    Attributes:
        name: the named config this came from.
        model: the BERT's sizes and attention variant (its ``vocab_size`` is the tokenizer's target size).
        steps: optimiser steps.
        batch_size: examples per step.
        lr: peak AdamW learning rate.
        weight_decay: AdamW decay on matrices (not on 1-D parameters).
        warmup: fraction of steps in linear warm-up.
        max_length: tokens per example including specials, at most ``model.max_length``.
        mask_prob: share of tokens to predict.
        validation_fraction: share of documents held out.
        eval_every: steps between validation evaluations and checkpoints.
        eval_examples: validation examples evaluated (a fixed subset).
        corpora: which NLTK corpora to read, or one name of ``attnconv.data.hub.HUB_CORPORA``
            (``wikitext-103``; needs ``datasets``) alone.
        seed: seeds the weights, example order, masking and dropout.
        device: ``"auto"``, ``"cpu"`` or ``"cuda"``.
        amp: bfloat16 autocast on CUDA.
        time_limit: stop at the first evaluation past this many seconds (``None``: none).
        progress: show a tqdm progress bar.
    """

    name: str = "custom"
    model: BertConfig = field(default_factory=lambda: replace(BERT_SIZES["cpu-quick"]))
    steps: int = 1000
    batch_size: int = 32
    lr: float = 5e-4
    weight_decay: float = 0.01
    warmup: float = 0.06
    max_length: int = 128
    mask_prob: float = 0.15
    validation_fraction: float = 0.02
    eval_every: int = 100
    eval_examples: int = 512
    corpora: tuple[str, ...] = PRETRAIN_CORPORA
    seed: int = 0
    device: str = "auto"
    amp: bool = True
    time_limit: float | None = None
    progress: bool = True

    def __post_init__(self) -> None:
        if isinstance(self.model, dict):
            self.model = BertConfig(**self.model)
        self.corpora = (self.corpora,) if isinstance(self.corpora, str) else tuple(self.corpora)
        if not (self.corpora and all(c in PRETRAIN_CORPORA for c in self.corpora)) and not (
                len(self.corpora) == 1 and self.corpora[0] in HUB_CORPORA):
            raise ValueError(f"corpora must be a non-empty subset of {PRETRAIN_CORPORA}, or one of "
                             f"{tuple(HUB_CORPORA)} alone, got {self.corpora!r}")
        _positive(self, "steps", "batch_size", "max_length", "eval_every", "eval_examples")
        _check_common(self)
        if self.max_length > self.model.max_length:
            raise ValueError(f"max_length ({self.max_length}) must not exceed model.max_length ({self.model.max_length})")
        if self.time_limit is not None and not self.time_limit > 0:
            raise ValueError(f"time_limit must be > 0 seconds or None, got {self.time_limit!r}")


@dataclass
class FinetuneConfig:
    """Everything that determines a fine-tuning run (given the pretrained checkpoint).

    Attributes:
        name: the named config this came from.
        task: one of ``attnconv.data.tasks.TASKS`` (``mr``, ``subj``, ``rte``), or of
            ``attnconv.data.hub.HUB_TASKS`` (``glue-rte``, ``glue-sst2``; needs ``datasets``).
        epochs: passes over the training examples, per seed.
        batch_size: examples per step.
        lr: peak AdamW learning rate.
        weight_decay: AdamW decay on matrices.
        warmup: fraction of steps in linear warm-up.
        max_length: tokens per example including specials (at most the model's).
        train_examples: train on a fixed random subset of this many (``None``: all).
        seeds: one fine-tuning run per seed (head initialisation, order, dropout); the data split is fixed.
        split_seed: seeds the 90/10 split of MR and SUBJ.
        dropout: the classifier's dropout.
        eval_batch_size: examples per evaluation batch.
        device, amp, progress: as in :class:`PretrainConfig`.
    """

    name: str = "custom"
    task: str = "mr"
    epochs: int = 2
    batch_size: int = 32
    lr: float = 1e-4
    weight_decay: float = 0.01
    warmup: float = 0.1
    max_length: int = 128
    train_examples: int | None = None
    seeds: tuple[int, ...] = (0, 1, 2)
    split_seed: int = 0
    dropout: float = 0.1
    eval_batch_size: int = 128
    device: str = "auto"
    amp: bool = True
    progress: bool = True

    def __post_init__(self) -> None:
        self.seeds = tuple(self.seeds)
        if self.task not in TASKS and self.task not in HUB_TASKS:
            raise ValueError(f"task must be one of {TASKS + tuple(HUB_TASKS)}, got {self.task!r}")
        _positive(self, "epochs", "batch_size", "max_length", "eval_batch_size")
        _check_common(self)
        if not self.seeds:
            raise ValueError("seeds must hold at least one seed")
        if self.train_examples is not None and (isinstance(self.train_examples, bool) or
                                                not isinstance(self.train_examples, int) or self.train_examples <= 0):
            raise ValueError(f"train_examples must be a positive integer or None, got {self.train_examples!r}")
        if not 0 <= self.dropout < 1:
            raise ValueError(f"dropout must be in [0, 1), got {self.dropout!r}")


_TINY = replace(BERT_SIZES["tiny"], vocab_size=400)
_QUICK = replace(BERT_SIZES["cpu-quick"], max_length=128)
_MINI = replace(BERT_SIZES["cpu-quick"], hidden_dim=128, depth=2, num_heads=4, mlp_dim=512)
_GPU = replace(BERT_SIZES["base-small"])

#: The named pretraining configs of ``bert-pretrain --config``.
PRETRAIN_CONFIGS: dict[str, PretrainConfig] = {
    # Seconds on a CPU: the tests and the chapter run it to check the whole pipeline.
    "smoke": PretrainConfig(name="smoke", model=_TINY, steps=12, batch_size=8, lr=1e-3, max_length=64,
                            eval_every=6, eval_examples=32, validation_fraction=0.25, device="cpu", progress=False),
    # About ten minutes on two quiet CPU cores (2.5-3 steps/s): 4 layers, hidden 256, 4 heads, examples of up
    # to 64 tokens. No time limit, so that every variant gets the same number of updates on a busy machine too.
    "cpu-quick": PretrainConfig(name="cpu-quick", model=_QUICK, steps=1500, batch_size=32, lr=1e-3, max_length=64,
                                eval_every=100, eval_examples=512, device="cpu"),
    # A quarter of cpu-quick's compute per step (2 layers, hidden 128) for CPUs shared with other work.
    "cpu-mini": PretrainConfig(name="cpu-mini", model=_MINI, steps=800, batch_size=32, lr=1e-3, max_length=64,
                               eval_every=100, eval_examples=512, device="cpu", time_limit=900.0),
    # A larger model and full-length examples for one GPU, about ten minutes.
    "gpu-10min": PretrainConfig(name="gpu-10min", model=_GPU, steps=20_000, batch_size=128, lr=5e-4,
                                max_length=128, eval_every=1000, eval_examples=2048, time_limit=600.0),
}

#: The named fine-tuning configs of ``bert-finetune --config``.
FINETUNE_CONFIGS: dict[str, FinetuneConfig] = {
    "smoke": FinetuneConfig(name="smoke", epochs=1, batch_size=8, lr=1e-3, max_length=64, train_examples=32,
                            seeds=(0, 1), device="cpu", progress=False),
    # Under a minute per seed on two CPU cores: 2,000 training sentences, 2 epochs.
    "cpu-quick": FinetuneConfig(name="cpu-quick", epochs=2, batch_size=32, lr=2e-4, max_length=64,
                                train_examples=2000, device="cpu"),
    "cpu-mini": FinetuneConfig(name="cpu-mini", epochs=2, batch_size=32, lr=2e-4, max_length=64,
                               train_examples=2000, device="cpu"),
    "gpu-10min": FinetuneConfig(name="gpu-10min", epochs=3, batch_size=32, lr=5e-5, max_length=128),
}


def config_to_dict(config: PretrainConfig | FinetuneConfig) -> dict[str, Any]:
    """Plain JSON-able data (tuples become lists)."""
    return json.loads(json.dumps(dataclasses.asdict(config)))


def apply_overrides(config: PretrainConfig | FinetuneConfig, overrides: list[str]) -> PretrainConfig | FinetuneConfig:
    """A copy with ``key=value`` changes (``model.depth=2``); values are Python literals or bare words."""
    return type(config)(**override_dict(dataclasses.asdict(config), overrides))


def _named(configs: dict[str, Any], name: str) -> Any:
    if name not in configs:
        raise ValueError(f"config must be one of {sorted(configs)}, got {name!r}")
    return apply_overrides(configs[name], [])  # a deep copy


def _seed(seed: int, step: int, stream: int) -> int:
    """A distinct, reproducible seed for one random stream at one step."""
    return (seed * 1_000_003 + step * 10_007 + stream * 101) % (2**63)


def _optimizer(model: nn.Module, lr: float, weight_decay: float) -> torch.optim.AdamW:
    """AdamW; biases, LayerNorm gains and other 1-D parameters get no weight decay."""
    decay = [p for p in model.parameters() if p.dim() >= 2]
    plain = [p for p in model.parameters() if p.dim() < 2]
    return torch.optim.AdamW([{"params": decay, "weight_decay": weight_decay},
                              {"params": plain, "weight_decay": 0.0}], lr=lr, betas=(0.9, 0.98), eps=1e-6)


def _set_lr(optimizer: torch.optim.Optimizer, lr: float) -> None:
    for group in optimizer.param_groups:
        group["lr"] = lr


def _autocast(use: bool):
    return torch.autocast("cuda", dtype=torch.bfloat16) if use else contextlib.nullcontext()


@dataclass
class PretrainData:
    """The tokenizer and the examples of a pretraining run."""

    tokenizer: Tokenizer
    train: PairExamples
    validation: PairExamples
    corpus: Corpus


def prepare_pretraining(config: PretrainConfig, root: str | os.PathLike | None = None,
                        cache_dir: str | os.PathLike | None = None) -> PretrainData:
    """Corpus, tokenizer (cached) and examples for ``config``.

    Args:
        root: folder with the NLTK zips (default ``$ATTNCONV_DATA/nltk/corpora``).
        cache_dir: where the tokenizer and encoded corpus are cached (default ``<cache>/text``).
    """
    cache = Path(cache_dir) if cache_dir is not None else default_cache_dir() / "text"
    if config.corpora[0] in HUB_CORPORA:
        corpus = load_hub_corpus(config.corpora[0])
    else:
        corpus = load_corpus(root, config.corpora, config.validation_fraction)
    tokenizer = load_or_train_tokenizer(corpus.sentences("train"), cache, config.model.vocab_size)
    train = make_pairs(load_or_encode(tokenizer, corpus.train, cache), config.max_length, config.seed)
    validation = make_pairs(load_or_encode(tokenizer, corpus.validation, cache), config.max_length, seed=12345)
    return PretrainData(tokenizer, train, validation, corpus)


@torch.no_grad()
def _evaluate_mlm(model: BertForMaskedLM, data: PretrainData, indices: np.ndarray, config: PretrainConfig,
                  device: torch.device, amp: bool) -> dict[str, float]:
    """Masked-LM loss and accuracy on fixed examples with a fixed mask (the same at every evaluation)."""
    ids = special_ids(data.tokenizer)
    model.eval()
    gen = torch.Generator().manual_seed(2024)
    loss_sum = correct = count = 0.0
    for start in range(0, len(indices), config.batch_size):
        batch = mlm_batch(data.validation, indices[start:start + config.batch_size], ids, gen, config.mask_prob)
        batch = batch.to(device)
        with _autocast(amp):
            loss, right = model.loss(batch.input_ids, batch.token_type_ids, batch.padding_mask, batch.labels)
        m = int((batch.labels != -100).sum())
        loss_sum += float(loss) * m
        correct += float(right)
        count += m
    model.train()
    return {"val_loss": loss_sum / count, "val_acc": correct / count}


def _write_jsonl(path: Path, records: list[dict[str, Any]]) -> None:
    atomic_write_text(path, "".join(json.dumps(r) + "\n" for r in records))


def _check_resumable(saved: dict[str, Any], now: dict[str, Any]) -> None:
    diffs = [k for k in now if k not in ("progress", "time_limit") and now[k] != saved.get(k)]
    if diffs:
        raise ValueError(f"cannot resume: the config differs from the checkpoint's in {diffs}")


def _start(out: Path, resume: bool) -> Path:
    ckpt = out / CHECKPOINT_NAME
    if not resume and ckpt.exists():
        raise FileExistsError(f"{ckpt} exists: pass resume=True (--resume) to continue it, or use a new out_dir")
    if resume and not ckpt.exists():
        raise FileNotFoundError(f"resume=True but there is no checkpoint at {ckpt}")
    out.mkdir(parents=True, exist_ok=True)
    return ckpt


def pretrain_bert(config: PretrainConfig, out_dir: str | os.PathLike, *, resume: bool = False,
                  data: PretrainData | None = None, root: str | os.PathLike | None = None,
                  cache_dir: str | os.PathLike | None = None,
                  on_step: Callable[[int], None] | None = None) -> dict[str, Any]:
    """Pretrain ``config.model`` with masked-LM and write the run into ``out_dir``.

    Args:
        config: the recipe and sizes.
        out_dir: receives ``metrics.jsonl``, ``final.json``, ``provenance.json``, ``tokenizer.json``,
            ``kernels.json`` and ``checkpoint.pt``.
        resume: continue from ``out_dir/checkpoint.pt`` (an existing checkpoint without it is an error).
        data: prepared data (default :func:`prepare_pretraining` with ``root`` and ``cache_dir``).
        on_step: called with the step number after every optimiser step.

    Returns:
        The contents of ``final.json``.
    """
    started = time.perf_counter()
    load_at_start = os.getloadavg() if hasattr(os, "getloadavg") else None
    out = Path(out_dir)
    ckpt_path = _start(out, resume)
    device = init_distributed(config.device).device
    data = data if data is not None else prepare_pretraining(config, root, cache_dir)
    ids = special_ids(data.tokenizer)
    model_config = replace(config.model, vocab_size=ids.vocab_size, pad_id=ids.pad)
    use_amp = config.amp and device.type == "cuda"
    torch.manual_seed(config.seed)
    model = BertForMaskedLM(model_config).to(device)
    optimizer = _optimizer(model, config.lr, config.weight_decay)
    val_indices = np.sort(np.random.default_rng(7).permutation(len(data.validation))[:config.eval_examples])
    n_train = len(data.train)
    if n_train < config.batch_size:
        raise ValueError(f"batch_size ({config.batch_size}) exceeds the {n_train} training examples")
    per_epoch = n_train // config.batch_size
    warmup_steps = int(round(config.warmup * config.steps))

    step, history, elapsed = 0, [], 0.0
    if resume:
        state = load_checkpoint(ckpt_path, map_location=device)
        _check_resumable(state["config"], config_to_dict(config))
        model.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
        step, history, elapsed = state["step"], state["history"], state["elapsed"]
    save_tokenizer(data.tokenizer, out / "tokenizer.json")

    def save() -> None:
        _write_jsonl(out / "metrics.jsonl", history)
        save_checkpoint(ckpt_path, {"config": config_to_dict(config), "model_config": dataclasses.asdict(model_config),
                                    "tokenizer": data.tokenizer.to_str(), "step": step, "model": model.state_dict(),
                                    "optimizer": optimizer.state_dict(), "history": history, "elapsed": elapsed})

    model.train()
    bar = tqdm(total=config.steps, initial=step, desc=f"pretrain {config.model.variant}", unit="step",
               mininterval=2.0, disable=not config.progress)
    window_loss, window_steps, window_tokens, t0 = 0.0, 0, 0, time.perf_counter()
    stopped_early = False
    while step < config.steps:
        epoch, i = divmod(step, per_epoch)
        order = np.random.default_rng(_seed(config.seed, epoch, 0)).permutation(n_train)
        batch = mlm_batch(data.train, order[i * config.batch_size:(i + 1) * config.batch_size], ids,
                          torch.Generator().manual_seed(_seed(config.seed, step, 1)), config.mask_prob).to(device)
        torch.manual_seed(_seed(config.seed, step, 2))  # dropout
        lr = config.lr * warmup_linear(step, config.steps, warmup_steps)
        _set_lr(optimizer, lr)
        with _autocast(use_amp):
            loss, _ = model.loss(batch.input_ids, batch.token_type_ids, batch.padding_mask, batch.labels)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        step += 1
        window_loss += float(loss.detach())
        window_steps += 1
        window_tokens += int((~batch.padding_mask).sum())
        bar.update(1)
        if on_step is not None:
            on_step(step)
        if step % config.eval_every == 0 or step == config.steps:
            train_s = time.perf_counter() - t0
            metrics = _evaluate_mlm(model, data, val_indices, config, device, use_amp)
            elapsed += time.perf_counter() - t0
            history.append({"step": step, "lr": lr, "train_loss": window_loss / window_steps, **metrics,
                            "tokens_per_s": window_tokens / train_s, "wall_time_s": elapsed})
            bar.set_postfix(val_loss=f"{metrics['val_loss']:.3f}")
            save()
            window_loss, window_steps, window_tokens, t0 = 0.0, 0, 0, time.perf_counter()
            if config.time_limit is not None and elapsed > config.time_limit and step < config.steps:
                stopped_early = True
                break
    bar.close()

    from ..analysis import kernel_record
    atomic_write_text(out / "kernels.json", json.dumps(kernel_record(model, data.tokenizer)) + "\n")
    final = {"variant": config.model.variant, "config": config.name, "steps": step,
             "val_loss": history[-1]["val_loss"], "val_acc": history[-1]["val_acc"],
             "params": sum(p.numel() for p in model.parameters()),
             "tokens_per_s": float(np.median([r["tokens_per_s"] for r in history])),
             "train_examples": n_train, "wall_time_s": elapsed, "stopped_early": stopped_early}
    write_json(out / "final.json", final)
    load = os.getloadavg() if hasattr(os, "getloadavg") else None
    write_json(out / "provenance.json", provenance(
        device, 1, data.corpus.description, data.corpus.source, config_to_dict(config),
        {"wall_time_s": elapsed, "process_time_s": time.perf_counter() - started, "load_average_at_start":
         load_at_start, "load_average_at_end": load, "torch_threads": torch.get_num_threads(),
         "model_config": dataclasses.asdict(model_config), "bf16_autocast": use_amp}))
    return final


def load_pretrained(path: str | os.PathLike, device: str | torch.device = "cpu"
                    ) -> tuple[BertForMaskedLM, Tokenizer, dict[str, Any]]:
    """The model, tokenizer and checkpoint of a pretraining run (its folder or its ``checkpoint.pt``)."""
    path = Path(path)
    state = load_checkpoint(path / CHECKPOINT_NAME if path.is_dir() else path, map_location=device)
    if "model_config" not in state or "tokenizer" not in state:
        raise ValueError(f"{path} is not a bert-pretrain checkpoint (it lacks model_config or tokenizer)")
    model = BertForMaskedLM(BertConfig(**state["model_config"]))
    model.load_state_dict(state["model"])
    return model, Tokenizer.from_str(state["tokenizer"]), state


def _encode_task(tokenizer: Tokenizer, examples, max_length: int) -> tuple[PairExamples, torch.Tensor]:
    pair = examples[0].text_b is not None
    enc = encode_pairs(tokenizer, [e.text_a for e in examples], [e.text_b for e in examples] if pair else None,
                       max_length)
    return enc, torch.tensor([e.label for e in examples])


@torch.no_grad()
def _evaluate_classifier(model: BertClassifier, examples: PairExamples, labels: torch.Tensor, ids, batch_size: int,
                         device: torch.device, amp: bool) -> dict[str, float]:
    model.eval()
    loss_sum = correct = 0.0
    for start in range(0, len(examples), batch_size):
        idx = range(start, min(start + batch_size, len(examples)))
        batch = pad_pairs(examples, idx, ids).to(device)
        y = labels[start:start + len(idx)].to(device)
        with _autocast(amp):
            logits = model(batch.input_ids, batch.token_type_ids, batch.padding_mask).float()
        loss_sum += float(F.cross_entropy(logits, y, reduction="sum"))
        correct += float((logits.argmax(-1) == y).sum())
    model.train()
    return {"test_loss": loss_sum / len(examples), "test_acc": correct / len(examples)}


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
    """
    started = time.perf_counter()
    out = Path(out_dir)
    ckpt_path = _start(out, resume)
    device = init_distributed(config.device).device
    use_amp = config.amp and device.type == "cuda"
    mlm, tokenizer, pre_state = load_pretrained(pretrained, device)
    ids = special_ids(tokenizer)
    if config.max_length > mlm.config.max_length:
        raise ValueError(f"max_length ({config.max_length}) exceeds the model's max_length ({mlm.config.max_length})")
    given_task = task
    if task is None:
        task = load_hub_task(config.task) if config.task in HUB_TASKS else load_task(config.task, root,
                                                                                     seed=config.split_seed)
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

    seed_index, epoch, history, results, elapsed, model_state, opt_state = 0, 0, [], [], 0.0, None, None
    if resume:
        state = load_checkpoint(ckpt_path, map_location=device)
        _check_resumable(state["config"], config_to_dict(config))
        seed_index, epoch, history, results = state["seed_index"], state["epoch"], state["history"], state["results"]
        if epoch > 0:  # interrupted inside a seed: continue its model; else the next seed starts afresh
            elapsed, model_state, opt_state = state["elapsed"], state["model"], state["optimizer"]
        else:
            elapsed = state["elapsed"]
    global_step = seed_index * total + epoch * per_epoch
    while seed_index < len(config.seeds):
        seed = config.seeds[seed_index]
        torch.manual_seed(seed)
        model = BertClassifier.from_pretrained(mlm, len(task.label_names), config.dropout).to(device)
        optimizer = _optimizer(model, config.lr, config.weight_decay)
        if model_state is not None:
            model.load_state_dict(model_state)
            optimizer.load_state_dict(opt_state)
            model_state = opt_state = None
        model.train()
        while epoch < config.epochs:
            t0 = time.perf_counter()
            order = np.random.default_rng(_seed(seed, epoch, 0)).permutation(len(train))
            loss_sum = 0.0
            for i in tqdm(range(per_epoch), desc=f"{config.task} seed {seed} epoch {epoch + 1}", unit="step",
                          mininterval=2.0, disable=not config.progress, leave=False):
                step = epoch * per_epoch + i
                idx = order[i * config.batch_size:(i + 1) * config.batch_size]
                batch = pad_pairs(train, idx, ids).to(device)
                torch.manual_seed(_seed(seed, step, 2))
                _set_lr(optimizer, config.lr * warmup_linear(step, total, warmup_steps))
                with _autocast(use_amp):
                    logits = model(batch.input_ids, batch.token_type_ids, batch.padding_mask).float()
                loss = F.cross_entropy(logits, train_y[idx].to(device))
                optimizer.zero_grad(set_to_none=True)
                loss.backward()
                torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
                optimizer.step()
                loss_sum += float(loss.detach())
                global_step += 1
                if on_step is not None:
                    on_step(global_step)
            metrics = _evaluate_classifier(model, test, test_y, ids, config.eval_batch_size, device, use_amp)
            elapsed += time.perf_counter() - t0
            epoch += 1
            history.append({"seed": seed, "epoch": epoch, "step": epoch * per_epoch,
                            "train_loss": loss_sum / per_epoch, **metrics, "wall_time_s": elapsed})
            if epoch == config.epochs:
                results.append({"seed": seed, **metrics})
                seed_index, epoch = seed_index + 1, 0
            _write_jsonl(out / "metrics.jsonl", history)
            save_checkpoint(ckpt_path, {"config": config_to_dict(config), "seed_index": seed_index, "epoch": epoch,
                                        "model": model.state_dict(), "optimizer": optimizer.state_dict(),
                                        "history": history, "results": results, "elapsed": elapsed})
            if epoch == 0:
                break

    accs = np.array([r["test_acc"] for r in results])
    final = {"task": config.task, "variant": mlm.config.variant, "config": config.name,
             "pretrained": str(pretrained), "pretrain_steps": pre_state["step"],
             "pretrain_val_loss": pre_state["history"][-1]["val_loss"] if pre_state["history"] else None,
             "seeds": list(config.seeds), "test_acc": [r["test_acc"] for r in results],
             "test_acc_mean": float(accs.mean()), "test_acc_std": float(accs.std(ddof=1)) if len(accs) > 1 else 0.0,
             "train_examples": len(train), "test_examples": len(test), "wall_time_s": elapsed}
    write_json(out / "final.json", final)
    write_json(out / "provenance.json", provenance(
        device, 1, task.description, _task_source(config.task, root, given_task is not None),
        config_to_dict(config),
        {"wall_time_s": elapsed, "process_time_s": time.perf_counter() - started,
         "load_average_at_end": os.getloadavg() if hasattr(os, "getloadavg") else None,
         "torch_threads": torch.get_num_threads(), "pretrained_config": pre_state["config"]}))
    return final


def _task_source(task: str, root: str | os.PathLike | None, given: bool) -> str:
    """Where a fine-tuning task's data came from, for the provenance record."""
    if given and root is None:
        return "given"
    if task in HUB_TASKS:
        return "hf:" + "/".join(HUB_TASKS[task][:2])
    return str(corpora_dir(root))


# The command line: ``bert-pretrain`` and ``bert-finetune`` subcommands of ``python -m attnconv.train``.

def _add_common_arguments(parser, configs: dict[str, Any], example: str) -> None:
    """The arguments both subcommands share: a named config, its overrides, the run folder and the data."""
    parser.add_argument("--config", default="cpu-quick", choices=sorted(configs), help="a named config")
    parser.add_argument("--out", help="folder for the run's results and checkpoint")
    parser.add_argument("--resume", action="store_true", help="continue from OUT/checkpoint.pt")
    parser.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                        help=f"change a config field, e.g. {example} (repeatable)")
    parser.add_argument("--data", default=None, help="folder with the NLTK corpus zips")
    parser.add_argument("--list", action="store_true", help="print the named configs and exit")


def _list_configs(configs: dict[str, Any]) -> int:
    for name, config in configs.items():
        print(name, json.dumps(config_to_dict(config)))
    return 0


def _configure_pretrain(parser) -> None:
    _add_common_arguments(parser, PRETRAIN_CONFIGS, "--set steps=100 --set model.depth=2")
    parser.add_argument("--variant", default=None, choices=tuple(VARIANTS), help="attention variant (default: absolute)")
    parser.add_argument("--cache", default=None, help="folder for the tokenizer and encoded corpus")


def _run_pretrain(args) -> int:
    if args.list:
        return _list_configs(PRETRAIN_CONFIGS)
    if not args.out:
        raise SystemExit("bert-pretrain: --out DIR is required")
    config = _named(PRETRAIN_CONFIGS, args.config)
    if args.variant is not None:
        config = replace(config, model=replace(config.model, variant=args.variant))
    config = apply_overrides(config, args.overrides)
    print(json.dumps(pretrain_bert(config, args.out, resume=args.resume, root=args.data, cache_dir=args.cache)))
    return 0


def _configure_finetune(parser) -> None:
    _add_common_arguments(parser, FINETUNE_CONFIGS, "--set epochs=1")
    parser.add_argument("--from", dest="pretrained", help="a bert-pretrain run folder or its checkpoint.pt")
    parser.add_argument("--task", dest="task_name", default=None, choices=TASKS + tuple(HUB_TASKS),
                        help="the task (default: mr; glue-* need the datasets package)")


def _run_finetune(args) -> int:
    if args.list:
        return _list_configs(FINETUNE_CONFIGS)
    if not args.out or not args.pretrained:
        raise SystemExit("bert-finetune: --from CHECKPOINT and --out DIR are required")
    config = _named(FINETUNE_CONFIGS, args.config)
    if args.task_name is not None:
        config = replace(config, task=args.task_name)
    config = apply_overrides(config, args.overrides)
    print(json.dumps(finetune_bert(config, args.pretrained, args.out, resume=args.resume, root=args.data)))
    return 0


def register_cli(add_task: Callable) -> None:
    """Add ``bert-pretrain`` and ``bert-finetune`` to the command line of :mod:`attnconv.train.cli`."""
    add_task("bert-pretrain", "pretrain a small BERT with masked-LM on the NLTK corpora", _configure_pretrain,
             _run_pretrain)
    add_task("bert-finetune", "fine-tune a pretrained BERT on MR, SUBJ, RTE or a GLUE task", _configure_finetune,
             _run_finetune)


# Reading the committed runs back, for the chapter.

@dataclass
class BertRun:
    """One ``results/bert-*`` folder: ``final.json``, ``provenance.json``, ``metrics.jsonl`` and, for a
    pretraining run, ``kernels.json`` (``None`` otherwise)."""

    name: str
    final: dict[str, Any]
    provenance: dict[str, Any]
    history: list[dict[str, Any]]
    kernels: dict[str, Any] | None

    @property
    def is_pretraining(self) -> bool:
        return "task" not in self.final


def load_bert_runs(folder: str | os.PathLike, prefix: str = "bert-") -> list[BertRun]:
    """Every finished run in ``folder`` whose name starts with ``prefix``, sorted by name (unfinished ones,
    without ``final.json``, are skipped)."""
    runs = []
    for run in sorted(Path(folder).glob(f"{prefix}*")):
        if not (run / "final.json").is_file() or not (run / "provenance.json").is_file():
            continue
        lines = (run / "metrics.jsonl").read_text().splitlines() if (run / "metrics.jsonl").is_file() else []
        kernels = json.loads((run / "kernels.json").read_text()) if (run / "kernels.json").is_file() else None
        runs.append(BertRun(run.name, json.loads((run / "final.json").read_text()),
                            json.loads((run / "provenance.json").read_text()), [json.loads(x) for x in lines if x],
                            kernels))
    return runs


def bert_results_table(runs: list[BertRun], config: str | None = None) -> str:
    """A markdown table, one row per pretrained variant: steps, MLM validation loss and accuracy, training
    tokens/s with the number of threads it ran on, and each task's test accuracy as mean ± std over the
    fine-tuning seeds. (Speeds of runs on a shared machine are not comparable; see the throughput benchmark.)

    ``config`` keeps only the pretraining runs of that named config (and the fine-tuning runs made from them)."""
    pre = [r for r in runs if r.is_pretraining and (config is None or r.final["config"] == config)]
    names = {r.name for r in pre}
    tasks = sorted({r.final["task"] for r in runs if not r.is_pretraining and Path(r.final["pretrained"]).name in names})
    header = ["variant", "config", "steps", "MLM val loss", "MLM val acc", "tokens/s (threads)"]
    lines = ["| " + " | ".join(header + [t.upper() for t in tasks]) + " |", "|" + "---|" * (len(header) + len(tasks))]
    for r in pre:
        f = r.final
        cells = [f["variant"], f["config"], str(f["steps"]), f"{f['val_loss']:.3f}", f"{100 * f['val_acc']:.1f}%",
                 f"{f['tokens_per_s']:.0f} ({r.provenance.get('torch_threads', '?')})"]
        for t in tasks:
            ft = [x for x in runs if not x.is_pretraining and x.final["task"] == t and
                  Path(x.final["pretrained"]).name == r.name]
            cells.append(f"{100 * ft[0].final['test_acc_mean']:.1f} ± {100 * ft[0].final['test_acc_std']:.1f}% "
                         f"({len(ft[0].final['seeds'])} seeds)" if ft else "—")
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)
