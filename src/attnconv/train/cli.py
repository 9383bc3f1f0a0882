"""The command line: ``python -m attnconv.train <task> ...``, one subcommand per kind of training.

    python -m attnconv.train vision --config cpu-quick --model sa-quadratic --out results/cpu-quick-sa-quadratic
    python -m attnconv.train vision --config cpu-quick --model sa-quadratic --out DIR --resume
    torchrun --nproc_per_node 8 -m attnconv.train vision --config paper --out DIR
    python -m attnconv.train vision --list

Other tasks (language-model pretraining and fine-tuning) register their own subcommands with
:func:`add_task`.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Callable

import torch

from ..models import MODEL_NAMES

__all__ = ["add_task", "build_parser", "main"]

_TASKS: dict[str, tuple[str, Callable[[argparse.ArgumentParser], None], Callable[[argparse.Namespace], int]]] = {}


def add_task(name: str, help: str, configure: Callable[[argparse.ArgumentParser], None],
             run: Callable[[argparse.Namespace], int]) -> None:
    """Register a subcommand: ``configure`` adds its arguments, ``run`` executes it and returns an exit code."""
    _TASKS[name] = (help, configure, run)


def _configure_vision(parser: argparse.ArgumentParser) -> None:
    from .config import VISION_CONFIGS
    parser.add_argument("--config", default="cpu-quick", choices=sorted(VISION_CONFIGS), help="a named config")
    parser.add_argument("--model", default=None, choices=MODEL_NAMES, help="the model to train (default: sa-quadratic)")
    parser.add_argument("--out", help="folder for the run's results and checkpoint")
    parser.add_argument("--resume", action="store_true", help="continue from OUT/checkpoint.pt")
    parser.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                        help="change a config field, e.g. --set epochs=3 --set sa.depth=2 (repeatable)")
    parser.add_argument("--data", default=None, help="an explicit CIFAR-10 copy (archive, folder or zip)")
    parser.add_argument("--list", action="store_true", help="print the named configs and exit")


def _run_vision(args: argparse.Namespace) -> int:
    from .config import VISION_CONFIGS, apply_overrides, config_to_dict, named_config
    from .vision import train_vision
    if args.list:
        for name, config in VISION_CONFIGS.items():
            print(name, json.dumps(config_to_dict(config)))
        return 0
    if not args.out:
        raise SystemExit("vision: --out DIR is required")
    config = apply_overrides(named_config(args.config, args.model), args.overrides)
    final = train_vision(config, args.out, resume=args.resume, data_path=args.data)
    print(json.dumps(final))
    return 0


add_task("vision", "train an image classifier on CIFAR-10", _configure_vision, _run_vision)

from .bert import register_cli as _register_bert  # noqa: E402  (after add_task: bert-pretrain, bert-finetune)

_register_bert(add_task)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m attnconv.train", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="task", required=True, metavar="TASK")
    for name, (help_text, configure, _) in _TASKS.items():
        configure(sub.add_parser(name, help=help_text))
    return parser


def main(argv: list[str] | None = None) -> int:
    # Subnormal floats (far tails of Gaussian attention) are ~10x slower on x86 CPUs. Flushing them to zero
    # before the first parallel operation makes the thread pool inherit the setting.
    torch.set_flush_denormal(True)
    args = build_parser().parse_args(argv)
    try:
        return _TASKS[args.task][2](args)
    finally:
        if torch.distributed.is_initialized():
            torch.distributed.destroy_process_group()


if __name__ == "__main__":
    sys.exit(main())
