"""Deprecated path, kept for one release: the BERT trainers moved to :mod:`attnconv.train.bert_config`,
:mod:`attnconv.train.bert_pretrain`, :mod:`attnconv.train.bert_finetune` and :mod:`attnconv.train.results`; the
config helpers to :mod:`attnconv.train.runs`."""

from .bert_config import FINETUNE_CONFIGS, PRETRAIN_CONFIGS, FinetuneConfig, PretrainConfig
from .bert_finetune import finetune_bert
from .bert_pretrain import PretrainData, load_pretrained, prepare_pretraining, pretrain_bert
from .results import BertRun, bert_results_table, load_bert_runs
from .runs import CHECKPOINT_NAME, apply_overrides, config_to_dict
from .schedule import warmup_linear

__all__ = ["CHECKPOINT_NAME", "FINETUNE_CONFIGS", "PRETRAIN_CONFIGS", "BertRun", "FinetuneConfig", "PretrainConfig",
           "PretrainData", "apply_overrides", "bert_results_table", "config_to_dict", "finetune_bert",
           "load_bert_runs", "load_pretrained", "prepare_pretraining", "pretrain_bert", "warmup_linear"]
