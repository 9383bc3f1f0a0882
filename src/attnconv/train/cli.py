"""The command line: ``python -m attnconv.train <task> ...``, one subcommand per kind of training.

    python -m attnconv.train vision --config cpu-quick --model sa-quadratic --out results/cpu-quick-sa-quadratic
    python -m attnconv.train vision --config cpu-quick --model sa-quadratic --out DIR --resume
    torchrun --nproc_per_node 8 -m attnconv.train vision --config paper --out DIR
    python -m attnconv.train bert-pretrain --config cpu-quick --variant composite --out DIR
    python -m attnconv.train bert-finetune --config cpu-quick --from PRETRAIN_DIR --task mr --out DIR
    python -m attnconv.train vision --list

Every subcommand takes ``--config NAME``, ``--set KEY=VALUE`` (repeatable), ``--out DIR``, ``--resume``,
``--data`` and ``--list``. A NaN or infinite loss, or a parameter that overflows its dtype (a Gaussian head's α,
for example), ends the command with exit code 1 and a message; the run's last checkpoint is kept, so it can be
resumed once the cause is fixed. A bad config value (``--set lr=nan``), a run folder that cannot be used (a file, not
writable, or in use by another run), a resume that does not match its checkpoint (another config or ``--data``)
and a batch larger than the data are refused before any data loads, in one line with exit code 2; so are a device
this machine lacks (``--set device=cuda:0`` without CUDA), a fine-tuning ``max_length`` above the pretrained
model's, an unreadable checkpoint and a ``--data`` that holds no data set (an empty folder). Ctrl-C (SIGINT) ends the run in one line (exit code 130) and a full disk in one line (exit
code 1); either way the last complete checkpoint is kept and ``--resume`` continues it.
"""

from __future__ import annotations

import argparse
import errno
import json
import sys
from pathlib import Path
from dataclasses import replace
from typing import Any, Callable

import torch

from ..data.hub import HUB_TASKS
from ..data.tasks import TASKS
from ..models import MODEL_NAMES
from ..models.bert import VARIANTS
from .bert_config import FINETUNE_CONFIGS, PRETRAIN_CONFIGS
from .._checks import NonFiniteResultError, available_device
from .checkpoint import CheckpointError
from .folder import RunSetupError
from .runs import CHECKPOINT_NAME, NonFiniteLossError, apply_overrides, config_to_dict, named_copy, what_next
from .vision_config import VISION_CONFIGS

__all__ = ["add_task", "build_parser", "main"]

_TASKS: dict[str, tuple[str, Callable[[argparse.ArgumentParser], None], Callable[[argparse.Namespace], int]]] = {}


def add_task(name: str, help: str, configure: Callable[[argparse.ArgumentParser], None],
             run: Callable[[argparse.Namespace], int]) -> None:
    """Register a subcommand: ``configure`` adds its arguments, ``run`` executes it and returns an exit code."""
    _TASKS[name] = (help, configure, run)


def _add_run_arguments(parser: argparse.ArgumentParser, configs: dict[str, Any], example: str, data: str) -> None:
    """The arguments every subcommand shares: a named config, its overrides, the run folder and the data."""
    parser.add_argument("--config", default="cpu-quick", choices=sorted(configs), help="a named config")
    parser.add_argument("--out", help="folder for the run's results and checkpoint")
    parser.add_argument("--resume", action="store_true", help="continue from OUT/checkpoint.pt")
    parser.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                        help=f"change a config field, e.g. {example} (repeatable)")
    parser.add_argument("--data", default=None, help=data)
    parser.add_argument("--list", action="store_true", help="print the named configs and exit")


def _list_or_check(args: argparse.Namespace, configs: dict[str, Any], required: dict[str, str]) -> bool:
    """Print the named configs for ``--list`` (True: done); else stop unless every ``required`` option is given."""
    if args.list:
        for name, config in configs.items():
            print(name, json.dumps(config_to_dict(config)))
        return True
    missing = [flag for attr, flag in required.items() if not getattr(args, attr)]
    if missing:
        raise SystemExit(f"{args.task}: {' and '.join(missing)} {'is' if len(missing) == 1 else 'are'} required")
    return False


def _checked_config(args: argparse.Namespace, make: Callable[[], Any]) -> Any:
    """``make()``, the run's config; a value it refuses, or a device this machine does not have, ends the command
    here, before any data loads."""
    try:
        config = make()
        device = getattr(config, "device", "auto")
        if device != "auto":  # "cuda:0" without CUDA, "cuda:3" on a machine with two GPUs
            available_device("device", device)
        return config
    except (ValueError, TypeError) as err:
        raise _ConfigError(f"{args.task}: bad config: {err}") from None


class _ConfigError(Exception):
    """A config the dataclass refused: one line, exit code 2."""


def _configure_vision(parser: argparse.ArgumentParser) -> None:
    _add_run_arguments(parser, VISION_CONFIGS, "--set epochs=3 --set sa.depth=2",
                       "an explicit CIFAR-10 copy (archive, folder or zip)")
    parser.add_argument("--model", default=None, choices=MODEL_NAMES, help="the model to train (default: sa-quadratic)")


def _run_vision(args: argparse.Namespace) -> int:
    from .vision import train_vision
    if _list_or_check(args, VISION_CONFIGS, {"out": "--out DIR"}):
        return 0
    config = _checked_config(args, lambda: apply_overrides(replace(named_copy(VISION_CONFIGS, args.config), **(
        {} if args.model is None else {"model": args.model})), args.overrides))
    print(json.dumps(train_vision(config, args.out, resume=args.resume, data_path=args.data)))
    return 0


def _configure_pretrain(parser: argparse.ArgumentParser) -> None:
    _add_run_arguments(parser, PRETRAIN_CONFIGS, "--set steps=100 --set model.depth=2",
                       "folder with the NLTK corpus zips")
    parser.add_argument("--variant", default=None, choices=tuple(VARIANTS), help="attention variant (default: absolute)")
    parser.add_argument("--cache", default=None, help="folder for the tokenizer and encoded corpus")


def _run_pretrain(args: argparse.Namespace) -> int:
    from .bert_pretrain import pretrain_bert
    if _list_or_check(args, PRETRAIN_CONFIGS, {"out": "--out DIR"}):
        return 0
    def make() -> Any:
        config = named_copy(PRETRAIN_CONFIGS, args.config)
        if args.variant is not None:
            config = replace(config, model=replace(config.model, variant=args.variant))
        return apply_overrides(config, args.overrides)
    config = _checked_config(args, make)
    print(json.dumps(pretrain_bert(config, args.out, resume=args.resume, root=args.data, cache_dir=args.cache)))
    return 0


def _configure_finetune(parser: argparse.ArgumentParser) -> None:
    _add_run_arguments(parser, FINETUNE_CONFIGS, "--set epochs=1", "folder with the NLTK corpus zips")
    parser.add_argument("--from", dest="pretrained", help="a bert-pretrain run folder or its checkpoint.pt")
    parser.add_argument("--task", dest="task_name", default=None, choices=TASKS + tuple(HUB_TASKS),
                        help="the task (default: mr; glue-* need the datasets package)")


def _run_finetune(args: argparse.Namespace) -> int:
    from .bert_finetune import finetune_bert
    if _list_or_check(args, FINETUNE_CONFIGS, {"pretrained": "--from CHECKPOINT", "out": "--out DIR"}):
        return 0
    config = _checked_config(args, lambda: apply_overrides(replace(named_copy(FINETUNE_CONFIGS, args.config), **(
        {} if args.task_name is None else {"task": args.task_name})), args.overrides))
    _check_pretrained_length(args, config.max_length)
    print(json.dumps(finetune_bert(config, args.pretrained, args.out, resume=args.resume, root=args.data)))
    return 0


def _check_pretrained_length(args: argparse.Namespace, max_length: int) -> None:
    """Refuse a ``max_length`` above the pretrained model's (its position table ends there) before any data loads.
    A missing or broken checkpoint raises here as it would in :func:`~attnconv.train.bert_finetune.finetune_bert`."""
    from .checkpoint import load_checkpoint

    path = Path(args.pretrained)
    state = load_checkpoint(path / CHECKPOINT_NAME if path.is_dir() else path, map_location="cpu",
                            required=("model_config",))
    limit = state["model_config"].get("max_length") if isinstance(state["model_config"], dict) else None
    if isinstance(limit, int) and max_length > limit:
        raise _ConfigError(f"{args.task}: bad config: max_length ({max_length}) exceeds the pretrained model's "
                           f"max_length ({limit}) in {args.pretrained}: use --set max_length={limit} or less")


def _raised_by_data_loader(err: BaseException) -> bool:
    """Whether ``err`` was raised by the data loaders (:mod:`attnconv.data`) themselves: their ``ValueError`` or
    ``RuntimeError`` says what the given data lacks (an empty ``--data`` folder, an unknown layout, a broken zip), a
    message for the user."""
    tb = err.__traceback__
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    return tb is not None and str(tb.tb_frame.f_globals.get("__name__", "")).startswith("attnconv.data.")


add_task("vision", "train an image classifier on CIFAR-10", _configure_vision, _run_vision)
add_task("bert-pretrain", "pretrain a small BERT with masked-LM on the NLTK corpora", _configure_pretrain,
         _run_pretrain)
add_task("bert-finetune", "fine-tune a pretrained BERT on MR, SUBJ, RTE or a GLUE task", _configure_finetune,
         _run_finetune)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m attnconv.train", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="task", required=True, metavar="TASK")
    for name, (help_text, configure, _) in _TASKS.items():
        configure(sub.add_parser(name, help=help_text))
    return parser


def _kept(args: argparse.Namespace) -> str:
    ckpt = None if getattr(args, "out", None) is None else Path(args.out) / CHECKPOINT_NAME
    return (f"the last good checkpoint, {ckpt}, is kept" if ckpt is not None and ckpt.exists() else
            "no checkpoint was written yet")


_DISK_FULL = (errno.ENOSPC, getattr(errno, "EDQUOT", errno.ENOSPC))


def main(argv: list[str] | None = None) -> int:
    # Subnormal floats (far tails of Gaussian attention) are ~10x slower on x86 CPUs. Flushing them to zero
    # before the first parallel operation makes the thread pool inherit the setting.
    torch.set_flush_denormal(True)
    args = build_parser().parse_args(argv)
    try:
        return _TASKS[args.task][2](args)
    except NonFiniteLossError as err:
        print(f"{args.task}: {err}", file=sys.stderr)
        return 1
    except NonFiniteResultError as err:  # the same stop as a non-finite loss, from a forward pass that overflowed
        ckpt = None if getattr(args, "out", None) is None else Path(args.out) / CHECKPOINT_NAME
        print(f"{args.task}: training stopped: {err}; {what_next(ckpt)}", file=sys.stderr)
        return 1
    except (_ConfigError, CheckpointError, RunSetupError, FileExistsError, FileNotFoundError) as err:
        data = getattr(args, "data", None)
        named = f"--data {data}: " if data and _raised_by_data_loader(err) else ""
        print(err if isinstance(err, _ConfigError) else f"{args.task}: {named}{err}", file=sys.stderr)
        return 2
    except (ValueError, RuntimeError) as err:  # e.g. an empty --data folder, a zip that is not one
        if not _raised_by_data_loader(err):
            raise  # a bug, not a mistake of the user's: the traceback is for us
        print(f"{args.task}: --data {args.data}: {err}" if getattr(args, "data", None) else f"{args.task}: {err}",
              file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"{args.task}: interrupted; {_kept(args)}: continue with --resume", file=sys.stderr)
        return 130
    except OSError as err:
        if err.errno not in _DISK_FULL:
            raise
        print(f"{args.task}: the disk is full (no space left to write {err.filename or 'the run folder'}); "
              f"{_kept(args)}: free some space, then continue with --resume", file=sys.stderr)
        return 1
    finally:
        if torch.distributed.is_initialized():
            torch.distributed.destroy_process_group()


if __name__ == "__main__":
    sys.exit(main())
