"""Pretrain a small BERT with masked-LM: the loop behind ``python -m attnconv.train bert-pretrain``.

:func:`pretrain_bert`, in the order a run happens:

1. read the corpus, train (or load) the WordPiece tokenizer, encode and cut the documents into sentence pairs
   (:func:`prepare_pretraining`);
2. build :class:`~attnconv.models.bert.BertForMaskedLM` and AdamW (no weight decay on biases, LayerNorms and
   other 1-D parameters) with a linear warm-up and linear decay to zero;
3. every step: a batch of the epoch's seeded order, padded to its longest example and masked; every
   ``eval_every`` steps the masked-LM loss and accuracy on fixed, fixed-masked validation examples, a line in
   ``metrics.jsonl`` and an atomic checkpoint;
4. at the end: ``final.json``, ``provenance.json``, ``tokenizer.json`` and ``kernels.json`` (the learned
   convolution kernels, :func:`attnconv.analysis.kernel_record`).

Every random stream (example order, masking, dropout) is derived from ``(seed, step)``, so ``resume=True``
continues an interrupted run exactly as if it had not stopped. A NaN or infinite loss stops the run before
its update, and a weight or validation loss that is not finite stops it before a checkpoint, keeping the last one. Training runs in one process (no DistributedDataParallel).
"""

from __future__ import annotations

import dataclasses
import json
import os
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Callable

import numpy as np
import torch
from tokenizers import Tokenizer
from tqdm import tqdm

from ..analysis import kernel_record
from ..data.corpus import Corpus, load_corpus
from ..data.hub import HUB_CORPORA, load_hub_corpus
from ..data.mlm import PairExamples, load_or_encode, make_pairs, mlm_batch
from ..data.paths import default_cache_dir
from ..data.tokenizer import load_or_train_tokenizer, save_tokenizer, special_ids
from ..models.bert import BertConfig, BertForMaskedLM
from .bert_config import PretrainConfig
from .checkpoint import atomic_write_text, load_checkpoint, save_checkpoint, write_json
from .distributed import init_distributed
from .folder import RunFolder, RunSetupError, data_identity, open_run
from .optim import adamw, clipped_step
from .precision import precision_autocast, probe_speed, resolve_precision, resume_precision
from .provenance import git_commit, provenance
from .runs import (CHECKPOINT_NAME, FINAL_FILE, KERNELS_FILE, METRICS_FILE, PROVENANCE_FILE, TOKENIZER_FILE,
                   check_finite_state, config_to_dict, load_average, stream_seed, write_jsonl)
from .schedule import set_lr, warmup_linear

__all__ = ["PretrainData", "load_pretrained", "prepare_pretraining", "pretrain_bert"]


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
                  device: torch.device, precision: str) -> dict[str, float]:
    """Masked-LM loss and accuracy on fixed examples with a fixed mask (the same at every evaluation)."""
    ids = special_ids(data.tokenizer)
    model.eval()
    gen = torch.Generator().manual_seed(2024)
    loss_sum = correct = count = 0.0
    for start in range(0, len(indices), config.batch_size):
        batch = mlm_batch(data.validation, indices[start:start + config.batch_size], ids, gen, config.mask_prob)
        batch = batch.to(device)
        with precision_autocast(precision, device):
            loss, right = model.loss(batch.input_ids, batch.token_type_ids, batch.padding_mask, batch.labels)
        m = int((batch.labels != -100).sum())
        loss_sum += float(loss) * m
        correct += float(right)
        count += m
    model.train()
    return {"val_loss": loss_sum / count, "val_acc": correct / count}


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

    Raises:
        ~attnconv.train.folder.RunSetupError: before any data loads, ``out_dir`` cannot be used (a file, not
            writable, locked by another live run), or the checkpoint does not match the config or ``root``.
    """
    started, load_at_start = time.perf_counter(), load_average()
    device = init_distributed(config.device).device
    with open_run(out_dir, resume, data=data_identity(data=root), required=_RESUME_KEYS,
                  check=lambda state: resume_precision(with_model_defaults(state), config_to_dict(config),
                                                       device)) as run:
        return _pretrain(config, run, device, data, root, cache_dir, on_step, started, load_at_start)


_RESUME_KEYS = ("config", "model", "optimizer", "step", "history", "elapsed")


def with_model_defaults(state: dict[str, Any]) -> dict[str, Any]:
    """``state`` with its config's ``model`` completed in place by the defaults of the :class:`BertConfig` fields
    it lacks: a checkpoint written before a field existed trained with that field's default, so it resumes."""
    model = state.get("config", {}).get("model")
    if isinstance(model, dict):
        state["config"]["model"] = {**config_to_dict(BertConfig()), **model}
    return state


def _pretrain(config: PretrainConfig, run: RunFolder, device: torch.device, data: PretrainData | None,
              root: str | os.PathLike | None, cache_dir: str | os.PathLike | None,
              on_step: Callable[[int], None] | None, started: float, load_at_start: Any) -> dict[str, Any]:
    """The body of :func:`pretrain_bert`, in a run folder already checked and locked."""
    code_at_start = git_commit()  # the code this process trains with, whatever the checkout holds at the end
    out, ckpt_path = run.out, run.checkpoint
    data = data if data is not None else prepare_pretraining(config, root, cache_dir)
    ids = special_ids(data.tokenizer)
    model_config = replace(config.model, vocab_size=ids.vocab_size, pad_id=ids.pad)
    torch.manual_seed(config.seed)
    model = BertForMaskedLM(model_config).to(device)
    optimizer = adamw(model, config.lr, config.weight_decay)
    val_indices = np.sort(np.random.default_rng(7).permutation(len(data.validation))[:config.eval_examples])
    n_train = len(data.train)
    if n_train < config.batch_size:
        raise RunSetupError(f"batch_size ({config.batch_size}) exceeds the {n_train} training examples")
    per_epoch = n_train // config.batch_size
    warmup_steps = int(round(config.warmup * config.steps))

    step, history, elapsed = 0, [], 0.0
    if run.state is not None:  # resume
        state = run.state
        precision = resume_precision(state, config_to_dict(config), device)
        model.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
        step, history, elapsed = state["step"], state["history"], state["elapsed"]
    else:
        def probe() -> dict[str, Any]:  # the speed of this model on a real-shaped batch
            b = mlm_batch(data.train, np.arange(config.batch_size), ids, torch.Generator().manual_seed(0),
                          config.mask_prob).to(device)
            return probe_speed(model, lambda net: net.loss(b.input_ids, b.token_type_ids, b.padding_mask,
                                                           b.labels)[0], device)
        precision = resolve_precision(config.precision, config.amp, device, probe)
    used = precision["used"]
    save_tokenizer(data.tokenizer, out / TOKENIZER_FILE)

    model.train()
    bar = tqdm(total=config.steps, initial=step, desc=f"pretrain {config.model.variant}", unit="step",
               mininterval=2.0, disable=not config.progress)
    window_loss, window_steps, window_tokens, t0 = 0.0, 0, 0, time.perf_counter()
    stopped_early = False
    while step < config.steps:
        epoch, i = divmod(step, per_epoch)
        order = np.random.default_rng(stream_seed(config.seed, epoch, 0)).permutation(n_train)
        batch = mlm_batch(data.train, order[i * config.batch_size:(i + 1) * config.batch_size], ids,
                          torch.Generator().manual_seed(stream_seed(config.seed, step, 1)), config.mask_prob).to(device)
        torch.manual_seed(stream_seed(config.seed, step, 2))  # dropout
        lr = config.lr * warmup_linear(step, config.steps, warmup_steps)
        set_lr(optimizer, lr)
        with precision_autocast(used, device):
            loss, _ = model.loss(batch.input_ids, batch.token_type_ids, batch.padding_mask, batch.labels)
        loss_value = clipped_step(model, optimizer, loss, f"step {step + 1}", ckpt_path)
        step += 1
        window_loss, window_steps = window_loss + loss_value, window_steps + 1
        window_tokens += int((~batch.padding_mask).sum())
        bar.update(1)
        if on_step is not None:
            on_step(step)
        if step % config.eval_every == 0 or step == config.steps:
            train_s = time.perf_counter() - t0
            metrics = _evaluate_mlm(model, data, val_indices, config, device, used)
            check_finite_state(model, f"step {step}", ckpt_path, metrics["val_loss"])  # before anything is written
            elapsed += time.perf_counter() - t0
            history.append({"step": step, "lr": lr, "train_loss": window_loss / window_steps, **metrics,
                            "tokens_per_s": window_tokens / train_s, "wall_time_s": elapsed})
            bar.set_postfix(val_loss=f"{metrics['val_loss']:.3f}")
            write_jsonl(out / METRICS_FILE, history)
            save_checkpoint(ckpt_path, {
                "config": config_to_dict(config), "model_config": dataclasses.asdict(model_config),
                "tokenizer": data.tokenizer.to_str(), "step": step, "model": model.state_dict(),
                "optimizer": optimizer.state_dict(), "history": history, "elapsed": elapsed, "precision": used,
                "data": run.data})
            window_loss, window_steps, window_tokens, t0 = 0.0, 0, 0, time.perf_counter()
            if config.time_limit is not None and elapsed > config.time_limit and step < config.steps:
                stopped_early = True
                break
    bar.close()

    atomic_write_text(out / KERNELS_FILE, json.dumps(kernel_record(model, data.tokenizer)) + "\n")
    final = {"variant": config.model.variant, "config": config.name, "steps": step,
             "val_loss": history[-1]["val_loss"], "val_acc": history[-1]["val_acc"],
             "params": sum(p.numel() for p in model.parameters()),
             "tokens_per_s": float(np.median([r["tokens_per_s"] for r in history])),
             "train_examples": n_train, "wall_time_s": elapsed, "stopped_early": stopped_early}
    write_json(out / FINAL_FILE, final)
    write_json(out / PROVENANCE_FILE, provenance(
        device, 1, data.corpus.description, data.corpus.source, config_to_dict(config),
        {"wall_time_s": elapsed, "process_time_s": time.perf_counter() - started, "load_average_at_start":
         load_at_start, "load_average_at_end": load_average(), "torch_threads": torch.get_num_threads(),
         "model_config": dataclasses.asdict(model_config), "precision": precision,
         "bf16_autocast": used == "bf16"}, code=code_at_start))
    return final


def load_pretrained(path: str | os.PathLike, device: str | torch.device = "cpu"
                    ) -> tuple[BertForMaskedLM, Tokenizer, dict[str, Any]]:
    """The model, tokenizer and checkpoint of a pretraining run (its folder or its ``checkpoint.pt``)."""
    path = Path(path)
    state = load_checkpoint(path / CHECKPOINT_NAME if path.is_dir() else path, map_location=device,
                            required=("model_config", "tokenizer", "model", "config", "step", "history"))
    model = BertForMaskedLM(BertConfig(**state["model_config"]))
    model.load_state_dict(state["model"])
    return model, Tokenizer.from_str(state["tokenizer"]), state
