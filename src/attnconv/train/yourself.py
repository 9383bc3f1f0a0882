"""Training the chapters' models yourself: one budget setting, checkpoints where the reader keeps them, resume.

A chapter's "train it yourself" cell is three calls::

    budget = choose_budget()                      # "committed" in the book build; "gpu-10min" proposed in Colab with a GPU
    home = runs_home()                            # a mounted Drive folder in Colab, else ./my-runs
    mine = train_yourself(budget, "sa-quadratic", home)   # None for "committed": the chapter shows committed runs

Budgets: ``committed`` (train nothing, read the committed records), ``smoke`` (seconds), ``cpu-quick``
(minutes on a CPU), ``cpu-30min`` (the narrow attention model on all of CIFAR-10 in bfloat16, vision only),
``gpu-10min`` (the paper's model for about ten minutes on one large GPU) and ``paper`` (the full recipe, vision
only). A run folder is named after its budget and model; a run cut short by a disconnect
resumes from its last atomic checkpoint the next time the cell runs, and a finished run is not trained again.
"""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path

from ..data.download import in_colab, reader_may_download
from ..data.paths import mount_drive
from .cuda import gpu_name

__all__ = ["BUDGETS", "BUDGET_ENV_VAR", "choose_budget", "pretrain_yourself", "run_folder", "runs_home",
           "train_yourself"]

BUDGETS = ("committed", "smoke", "cpu-quick", "cpu-30min", "gpu-10min", "paper")
BUDGET_ENV_VAR = "ATTNCONV_BUDGET"
RUNS_ENV_VAR = "ATTNCONV_RUNS"


def choose_budget(setting: str | None = None) -> str:
    """The budget to train with: ``setting``, else ``$ATTNCONV_BUDGET``, else a proposal.

    The proposal is ``gpu-10min`` in Colab with a GPU, and ``committed`` everywhere else (the book build, the tests,
    a laptop): nothing trains unless the reader asks for it.

    Raises:
        ValueError: the budget is not one of :data:`BUDGETS`.
    """
    value = setting if setting is not None else os.environ.get(BUDGET_ENV_VAR, "").strip() or None
    if value is None:
        return "gpu-10min" if in_colab() and gpu_name() is not None else "committed"
    if value not in BUDGETS:
        raise ValueError(f"budget must be one of {BUDGETS}, got {value!r}")
    return value


def runs_home(folder: str | os.PathLike | None = None) -> Path:
    """Where the reader's runs are kept: ``folder``, else ``$ATTNCONV_RUNS``, else in Colab a folder of the
    reader's Google Drive (mounted here, so the checkpoints outlive the session), else ``./my-runs``."""
    if folder is not None:
        return Path(folder).expanduser()
    value = os.environ.get(RUNS_ENV_VAR, "").strip()
    if value:
        return Path(value).expanduser()
    if in_colab():
        return mount_drive() / "attnconv-runs"
    return Path("my-runs")


def run_folder(home: str | os.PathLike, budget: str, model: str) -> Path:
    """``home/<budget>-<model>``: one folder per run, found again after a disconnect."""
    return Path(home) / f"{budget}-{model}"


def _finished(folder: Path) -> bool:
    return (folder / "final.json").is_file() and not (folder / "checkpoint.pt.tmp").exists()


def train_yourself(budget: str, model: str, home: str | os.PathLike, *, data=None, overrides: dict | None = None
                   ) -> Path | None:
    """Train ``model`` on CIFAR-10 with the named config ``budget`` into :func:`run_folder`; resume if cut short.

    Args:
        budget: one of :data:`BUDGETS`; ``"committed"`` trains nothing and returns ``None``.
        model: one of ``attnconv.models.MODEL_NAMES``.
        home: :func:`runs_home`.
        data: CIFAR-10 already loaded; default :func:`~attnconv.data.load_cifar10`, downloading it where the reader
            allows downloads (any number of images for ``smoke``).
        overrides: config fields to change (``{"epochs": 1}``); part of the resume check.

    Returns:
        The run folder (``metrics.jsonl``, ``final.json``, ``centers.jsonl``, ...), or ``None`` for ``committed``.

    Raises:
        ValueError: an unknown budget or model.
        FileNotFoundError: no CIFAR-10 could be found or downloaded.
    """
    from ..data import load_cifar10
    from .vision import train_vision
    from .vision_config import named_config

    if choose_budget(budget) == "committed":
        return None
    # A notebook is one process: a budget sized for one process of one thread per core (cpu-30min, which
    # torchrun runs on two) uses every core here instead.
    config = replace(named_config(budget, model), progress=True, threads=None, **(overrides or {}))
    if config.device == "auto" and gpu_name() is None:
        config = replace(config, device="cpu")
    out = run_folder(home, budget, model)
    if _finished(out):
        return out
    if data is None:
        data = load_cifar10(download=reader_may_download(), expected_sizes=None if budget == "smoke" else
                            {"train": 50_000, "test": 10_000})
    train_vision(config, out, resume=(out / "checkpoint.pt").is_file(), data=data)
    return out


def pretrain_yourself(budget: str, variant: str, home: str | os.PathLike, *, overrides: dict | None = None
                      ) -> Path | None:
    """Pretrain the BERT ``variant`` with ``PRETRAIN_CONFIGS[budget]`` into :func:`run_folder`; resume if cut short.

    The corpora are read where :func:`~attnconv.data.corpus.corpora_dir` finds them (after
    :func:`~attnconv.data.prepare_data` in Colab). ``"committed"`` trains nothing and returns ``None``.

    Raises:
        ValueError: an unknown budget or variant, or ``"paper"`` (there is no paper-size BERT recipe here).
    """
    from .bert_config import PRETRAIN_CONFIGS
    from .bert_pretrain import pretrain_bert

    if choose_budget(budget) == "committed":
        return None
    if budget not in PRETRAIN_CONFIGS:
        raise ValueError(f"budget must be 'committed' or one of {tuple(PRETRAIN_CONFIGS)} for BERT, got {budget!r}")
    base = PRETRAIN_CONFIGS[budget]
    config = replace(base, model=replace(base.model, variant=variant), progress=True, **(overrides or {}))
    if config.device == "auto" and gpu_name() is None:
        config = replace(config, device="cpu")
    out = run_folder(home, f"bert-{budget}", variant)
    if _finished(out):
        return out
    if reader_may_download():  # a fresh runtime after a disconnect: the corpora again (a cached copy is kept)
        from ..data import prepare_data

        prepare_data("nltk")
    pretrain_bert(config, out, resume=(out / "checkpoint.pt").is_file())
    return out
