"""Training: configs as plain data, resumable loops, the run-folder contract, and the command line.

- :mod:`attnconv.train.runs`: the run folder (file names, checkpoint, start and resume checks), random streams,
  configs to and from plain data, ``key=value`` overrides, the stop on a non-finite loss.
- :mod:`attnconv.train.vision_config`, :mod:`attnconv.train.vision`:
  :class:`~attnconv.train.vision_config.TrainConfig` and its named configs (``smoke``, ``cpu-quick``, ``cpu-long``,
  ``gpu-10min``, ``paper``); :func:`~attnconv.train.vision.train_vision`, the CIFAR-10 loop
  (one process or several under ``torchrun``).
- :mod:`attnconv.train.bert_config`, :mod:`attnconv.train.bert_pretrain`, :mod:`attnconv.train.bert_finetune`:
  :class:`~attnconv.train.bert_config.PretrainConfig`, :class:`~attnconv.train.bert_config.FinetuneConfig`;
  :func:`~attnconv.train.bert_pretrain.pretrain_bert` (masked-LM) and
  :func:`~attnconv.train.bert_finetune.finetune_bert` (sentence classification over several seeds).
- :mod:`attnconv.train.precision`: float32 or bfloat16 autocast per run (``precision``), the start-up speed probe
  behind ``"auto"``, and which precision a resumed run continues in; :mod:`attnconv.train.optim`: the BERT
  trainers' AdamW and clipped update.
- :mod:`attnconv.train.results`: every kind of run folder read back, and tables of them.
- :mod:`attnconv.train.cli`: ``python -m attnconv.train {vision,bert-pretrain,bert-finetune} ...``.
- Helpers: :mod:`~attnconv.train.checkpoint` (atomic writes), :mod:`~attnconv.train.distributed` (torchrun),
  :mod:`~attnconv.train.schedule` (learning rates), :mod:`~attnconv.train.provenance`,
  :mod:`~attnconv.train.artifacts` (what a vision run keeps of its attention).

``train`` never imports :mod:`attnconv.figures`: figures read the files that runs write.
"""

from .bert_config import FINETUNE_CONFIGS, PRETRAIN_CONFIGS, FinetuneConfig, PretrainConfig
from .bert_finetune import finetune_bert
from .bert_pretrain import load_pretrained, prepare_pretraining, pretrain_bert
from .results import BertRun, RunResult, bert_results_table, load_bert_runs, load_run, results_table
from .runs import NonFiniteLossError, apply_overrides, config_from_dict, config_to_dict
from .schedule import warmup_cosine, warmup_linear
from .vision import train_vision
from .vision_config import VISION_CONFIGS, TrainConfig, named_config

__all__ = [
    # runs
    "NonFiniteLossError", "apply_overrides", "config_from_dict", "config_to_dict",
    # vision
    "TrainConfig", "VISION_CONFIGS", "named_config", "train_vision", "warmup_cosine",
    # BERT
    "FINETUNE_CONFIGS", "PRETRAIN_CONFIGS", "FinetuneConfig", "PretrainConfig", "finetune_bert", "load_pretrained",
    "prepare_pretraining", "pretrain_bert", "warmup_linear",
    # results
    "BertRun", "RunResult", "bert_results_table", "load_bert_runs", "load_run", "results_table",
]
