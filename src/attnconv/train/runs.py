"""The run-folder contract shared by every trainer, and configs as plain data.

A run writes into one folder (``--out DIR``). The names of its files live here and nowhere else:

- ``metrics.jsonl``: one JSON line per evaluation (an epoch, or ``eval_every`` steps);
- ``final.json``: the run's result, written once at the end; its presence marks a finished run;
- ``provenance.json``: machine, software, commit, data and config;
- ``checkpoint.pt``: the atomic checkpoint a run resumes from;
- ``.lock``: the process id of the run writing into the folder, while it runs (:mod:`attnconv.train.folder`);
- per kind of run: ``centers.jsonl``, ``attention.npz``, ``heads.json`` (vision), ``tokenizer.json``,
  ``kernels.json`` (BERT pretraining).

Configs are dataclasses. :func:`config_to_dict` and :func:`config_from_dict` turn any of them (with nested
dataclasses and tuples) into JSON-able data and back; :func:`apply_overrides` applies ``key=value`` strings
(``--set epochs=3 --set sa.depth=2``) to any of them.

Every random stream of a run is re-derived from ``(seed, position, stream)`` by :func:`stream_seed`, so a
checkpoint fixes the rest of a run and resuming reproduces it exactly.
"""

from __future__ import annotations

import ast
import dataclasses
import json
import math
import os
import re
from pathlib import Path
from typing import Any, Iterable, Mapping

from .checkpoint import atomic_write_text

__all__ = [
    # the run folder
    "ATTENTION_FILE", "CENTERS_FILE", "CHECKPOINT_NAME", "FINAL_FILE", "HEADS_FILE", "KERNELS_FILE", "METRICS_FILE",
    "PROVENANCE_FILE", "TOKENIZER_FILE", "ADDED_FIELDS", "RUN_CONTROL_FIELDS", "check_resumable", "load_average",
    "read_jsonl", "start_run", "write_jsonl",
    # inside a loop
    "NonFiniteLossError", "check_device", "check_finite_loss", "check_finite_state", "stream_seed", "what_next",
    # configs as data
    "apply_overrides", "config_from_dict", "config_to_dict", "named_copy", "override_dict",
]

METRICS_FILE = "metrics.jsonl"
FINAL_FILE = "final.json"
PROVENANCE_FILE = "provenance.json"
CHECKPOINT_NAME = "checkpoint.pt"
CENTERS_FILE = "centers.jsonl"
ATTENTION_FILE = "attention.npz"
HEADS_FILE = "heads.json"
TOKENIZER_FILE = "tokenizer.json"
KERNELS_FILE = "kernels.json"

# Config fields that may differ when a run is resumed: they change how it is watched, not what it computes.
RUN_CONTROL_FIELDS = ("progress", "time_limit")
# Config fields added after runs were recorded, with the value every earlier run used: a checkpoint without one
# resumes under that value.
ADDED_FIELDS = {"optimizer": "sgd"}


def start_run(out: Path, resume: bool) -> Path:
    """The checkpoint path of run folder ``out``, after checking that ``resume`` matches what is there.

    Raises:
        FileExistsError: a checkpoint exists and ``resume`` is False (a new run would overwrite it).
        FileNotFoundError: ``resume`` is True and there is no checkpoint.
    """
    ckpt = Path(out) / CHECKPOINT_NAME
    if not resume and ckpt.exists():
        raise FileExistsError(f"{ckpt} exists: pass resume=True (--resume) to continue it, or use a new out_dir")
    if resume and not ckpt.exists():
        raise FileNotFoundError(f"resume=True but there is no checkpoint at {ckpt}")
    return ckpt


def _plain(value: Any) -> Any:
    """JSON-plain data: tuples become lists, so a config compares equal before and after a JSON round trip."""
    return json.loads(json.dumps(value))


def check_resumable(saved: Mapping[str, Any], now: Mapping[str, Any]) -> None:
    """A run may only be resumed with the config it started with, up to ``RUN_CONTROL_FIELDS``; a field of
    ``ADDED_FIELDS`` missing from ``saved`` reads as its earlier value."""
    diffs = [k for k in now if k not in RUN_CONTROL_FIELDS
             and _plain(now[k]) != _plain(saved.get(k, ADDED_FIELDS.get(k)))]
    if diffs:
        raise ValueError(f"cannot resume: the config differs from the checkpoint's in {diffs}")


def stream_seed(seed: int, position: int, stream: int, rank: int = 0) -> int:
    """A distinct, reproducible seed for one random stream (data order, augmentation, masking, dropout) at one
    position of a run (an epoch or a step), on one process."""
    return (seed * 1_000_003 + position * 10_007 + stream * 101 + rank) % (2**63)


def write_jsonl(path: str | os.PathLike, records: Iterable[Mapping[str, Any]]) -> None:
    """Rewrite ``path`` atomically with one JSON line per record."""
    atomic_write_text(path, "".join(json.dumps(r) + "\n" for r in records))


def read_jsonl(path: str | os.PathLike) -> list[dict[str, Any]]:
    """The records of a JSON-lines file (``[]`` when it does not exist)."""
    path = Path(path)
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()] if path.is_file() else []


def load_average() -> tuple[float, float, float] | None:
    """The machine's 1, 5 and 15-minute load averages, for provenance (``None`` where the OS has none)."""
    return os.getloadavg() if hasattr(os, "getloadavg") else None


class NonFiniteLossError(FloatingPointError):
    """The training loss became NaN or infinite; the run stopped before the update and kept its last checkpoint."""


def check_finite_loss(loss_value: float, where: str, checkpoint: Path) -> None:
    """Stop a run at once when ``loss_value`` is NaN or infinite (called before the optimiser step, so neither the
    weights nor the checkpoint on disk take the bad update)."""
    if not math.isfinite(loss_value):
        raise NonFiniteLossError(f"training stopped: the loss is {loss_value} at {where}; {what_next(checkpoint)}")


def check_finite_state(module: Any, where: str, checkpoint: Path, eval_loss: float | None = None) -> None:
    """Stop a run before it writes a checkpoint of a broken model: a parameter or a floating-point buffer of
    ``module`` that is not finite (the loss is checked before each update, so the last update of a stretch can
    overflow unseen; BERT's gradient clipping turns one NaN gradient into NaN everywhere), or an evaluation loss
    ``eval_loss`` that is NaN or infinite. The last checkpoint on disk stays the last good one."""
    import torch

    named = [(n, t) for n, t in [*module.named_parameters(), *module.named_buffers()] if t.is_floating_point()]
    if named:
        finite = torch.stack([torch.isfinite(t).all() for _, t in named]).tolist()  # one read for all of them
        bad = [n for (n, _), ok in zip(named, finite) if not ok]
        if bad:
            more = f" (and {len(bad) - 1} more)" if len(bad) > 1 else ""
            raise NonFiniteLossError(f"training stopped: {bad[0]}{more} is not finite after {where}, although the "
                                     f"loss was; {what_next(checkpoint)}")
    if eval_loss is not None and not math.isfinite(eval_loss):
        raise NonFiniteLossError(f"training stopped: the evaluation loss is {eval_loss} after {where}; "
                                 f"{what_next(checkpoint)}")


def what_next(checkpoint: Path | None) -> str:
    """What a run stopped by a non-finite value leaves (``checkpoint``, its path, None when it has none), and the
    way on: a resumed run keeps its config (its learning rate too), so a lower learning rate is a new run."""
    if checkpoint is not None and checkpoint.exists():
        return (f"the last good checkpoint, {checkpoint}, is kept. Check the data and resume it, or start a new run "
                f"with a lower learning rate (a resumed run keeps its config)")
    return "no checkpoint was written yet. Lower the learning rate or check the data, then start the run again"


_DEVICE = re.compile(r"auto|cpu|cuda(:\d+)?")


def check_device(device: object) -> str:
    """``device`` if it is ``"auto"``, ``"cpu"``, ``"cuda"`` or ``"cuda:N"``, else ``ValueError`` (whether this
    machine has that GPU is checked when the run starts, by :func:`attnconv.train.distributed.init_distributed`)."""
    if not isinstance(device, str) or not _DEVICE.fullmatch(device):
        raise ValueError(f"device must be 'auto', 'cpu', 'cuda' or 'cuda:N', got {device!r}")
    return device


def config_to_dict(config: Any) -> dict[str, Any]:
    """Any dataclass config as JSON-able data: nested dataclasses become dicts, tuples lists."""
    return _plain(dataclasses.asdict(config))


def _default(f: dataclasses.Field) -> Any:
    if f.default is not dataclasses.MISSING:
        return f.default
    return f.default_factory() if f.default_factory is not dataclasses.MISSING else None


def config_from_dict(cls: type, data: Mapping[str, Any]) -> Any:
    """The inverse of :func:`config_to_dict` for dataclass ``cls``: a dict becomes the nested dataclass its field
    holds by default, a list becomes a tuple where the default is one. Unknown keys raise ``ValueError``."""
    known = {f.name: f for f in dataclasses.fields(cls)}
    unknown = sorted(set(data) - set(known))
    if unknown:
        raise ValueError(f"unknown {cls.__name__} fields {unknown}")
    values = {}
    for name, value in data.items():
        default = _default(known[name])
        if dataclasses.is_dataclass(default) and isinstance(value, Mapping):
            value = config_from_dict(type(default), value)
        elif isinstance(default, tuple) and isinstance(value, list):
            value = tuple(value)
        _check_field_type(cls, known[name], default, value)
        values[name] = value
    return cls(**values)


# What a field annotated with each plain type accepts (an int is a float, a bool is not a number).
_PLAIN_TYPES = {"int": lambda v: isinstance(v, int) and not isinstance(v, bool),
                "float": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
                "bool": lambda v: isinstance(v, bool), "str": lambda v: isinstance(v, str),
                "None": lambda v: v is None}


def _check_field_type(cls: type, field: dataclasses.Field, default: Any, value: Any) -> None:
    """``ValueError`` unless ``value`` has the type that ``field`` is annotated with (``int``, ``float | None``, ...)
    or, for a nested config, is a mapping of that config's fields: caught when the config is read, before any data
    loads. Fields with other annotations are left to the dataclass's own checks."""
    if dataclasses.is_dataclass(default):
        if not isinstance(value, type(default)):
            raise ValueError(f"{field.name} must be a {type(default).__name__} (set its fields as "
                             f"{field.name}.FIELD=VALUE), got {value!r}")
        return
    if isinstance(default, tuple) and not isinstance(value, tuple):
        raise ValueError(f"{cls.__name__}.{field.name} must be a list, such as {list(default)!r}, got "
                         f"{type(value).__name__} {value!r}")
    names = [t.strip() for t in str(field.type).split("|")]
    if not names or any(t not in _PLAIN_TYPES for t in names):
        return
    if not any(_PLAIN_TYPES[t](value) for t in names):
        raise ValueError(f"{cls.__name__}.{field.name} must be {' or '.join(names)}, got {type(value).__name__} "
                         f"{value!r}")


_NON_FINITE = {"nan": math.nan, "inf": math.inf, "+inf": math.inf, "-inf": -math.inf, "infinity": math.inf,
               "+infinity": math.inf, "-infinity": -math.inf}


def _parse_value(text: str) -> Any:
    """A Python literal; ``nan``, ``inf`` and ``-inf`` (any case) as floats, so that the config rejects them with
    its rule; any other bare word as a string."""
    if text.strip().lower() in _NON_FINITE:
        return _NON_FINITE[text.strip().lower()]
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return text  # a bare word: a string


def override_dict(data: dict[str, Any], overrides: list[str]) -> dict[str, Any]:
    """Apply ``key=value`` strings to a nested dict in place; ``key`` may be dotted (``sa.depth``).

    Values are Python literals, or bare words taken as strings. Unknown keys raise ``ValueError``.
    """
    for item in overrides:
        key, sep, text = item.partition("=")
        if not sep or not key:
            raise ValueError(f"overrides must look like key=value, got {item!r}")
        target, parts = data, key.split(".")
        for part in parts[:-1]:
            if not isinstance(target.get(part), dict):
                raise ValueError(f"unknown config field {key!r}")
            target = target[part]
        if parts[-1] not in target:
            raise ValueError(f"unknown config field {key!r}")
        target[parts[-1]] = _parse_value(text)
    return data


def apply_overrides(config: Any, overrides: list[str]) -> Any:
    """A new config of the same dataclass with ``key=value`` changes (``sa.depth=2``, ``model.variant=composite``);
    it is validated again by the dataclass."""
    return config_from_dict(type(config), override_dict(config_to_dict(config), overrides))


def named_copy(configs: Mapping[str, Any], name: str) -> Any:
    """A deep copy of ``configs[name]`` (editing it changes nothing in ``configs``)."""
    if name not in configs:
        raise ValueError(f"config must be one of {sorted(configs)}, got {name!r}")
    return apply_overrides(configs[name], [])
