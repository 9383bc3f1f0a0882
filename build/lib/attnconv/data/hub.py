"""Optional larger data from the Hugging Face hub: WikiText for pretraining and GLUE tasks for fine-tuning.

These need the ``datasets`` package (``pip install datasets``) and internet on first use; ``datasets`` keeps
its own cache afterwards. Nothing else in the book depends on them: the NLTK zips remain the default.

- **Corpora** (:data:`HUB_CORPORA`): ``wikitext-103`` and ``wikitext-2``, raw versions. A document is one
  article (a line `` = Title = ``, one level of ``=``, starts the next); its paragraphs are split into sentences
  with :func:`attnconv.data.corpus.split_sentences`. The official train and validation splits are kept.
- **Tasks** (:data:`HUB_TASKS`): ``glue-rte`` and ``glue-sst2``. GLUE hides its test labels, so the
  validation split is the test set here. Labels are GLUE's own (for RTE, 0 = entailment).

Select them by name: ``--set corpora=wikitext-103`` for ``bert-pretrain`` and ``--task glue-rte`` for
``bert-finetune``.
"""

from __future__ import annotations

import importlib
import re
from typing import Any, Iterable

from .corpus import Corpus, Document, split_sentences
from .tasks import TaskData, TextExample

__all__ = ["HUB_CORPORA", "HUB_TASKS", "load_hub_corpus", "load_hub_task"]

#: The pretraining corpora, each name mapped to (hub data set, configuration).
HUB_CORPORA: dict[str, tuple[str, str]] = {
    "wikitext-103": ("wikitext", "wikitext-103-raw-v1"),
    "wikitext-2": ("wikitext", "wikitext-2-raw-v1"),
}

#: The fine-tuning tasks, each name mapped to (data set, configuration, first text column, second text column
#: or None, label names in GLUE's order).
HUB_TASKS: dict[str, tuple[str, str, str, str | None, tuple[str, ...]]] = {
    "glue-rte": ("glue", "rte", "sentence1", "sentence2", ("entailment", "not_entailment")),
    "glue-sst2": ("glue", "sst2", "sentence", None, ("negative", "positive")),
}

_TITLE = re.compile(r"^ = [^=].* = $")


def _load(path: str, name: str) -> Any:
    """``datasets.load_dataset(path, name)``, with clear errors when the package or the network is missing."""
    try:
        datasets = importlib.import_module("datasets")
    except ImportError as err:
        raise ImportError(f"the hub data set {path}/{name} needs the 'datasets' package: pip install datasets") from err
    try:
        return datasets.load_dataset(path, name)
    except (ConnectionError, OSError) as err:
        raise FileNotFoundError(f"could not load {path}/{name} from the Hugging Face hub ({type(err).__name__}: "
                                f"{err}); it needs internet on first use") from err


def _articles(lines: Iterable[str], prefix: str) -> list[Document]:
    """WikiText lines -> one document per article, its non-empty, non-heading lines split into sentences."""
    docs: list[Document] = []
    current: list[str] = []

    def close() -> None:
        if current:
            docs.append(Document(f"{prefix}#{len(docs)}", tuple(current)))
            current.clear()

    for line in lines:
        text = line.strip("\n")
        if _TITLE.match(text):
            close()
        elif text.strip() and not text.lstrip().startswith("="):
            current.extend(split_sentences(text.strip()))
    close()
    return docs


def load_hub_corpus(name: str) -> Corpus:
    """A pretraining corpus from :data:`HUB_CORPORA`, with its official train and validation splits.

    Raises:
        ValueError: unknown ``name``.
        ImportError: ``datasets`` is not installed.
        FileNotFoundError: the data set could not be fetched.
        RuntimeError: a split holds no articles.
    """
    if name not in HUB_CORPORA:
        raise ValueError(f"name must be one of {tuple(HUB_CORPORA)}, got {name!r}")
    path, config = HUB_CORPORA[name]
    data = _load(path, config)
    train = _articles((row["text"] for row in data["train"]), f"{name}/train")
    validation = _articles((row["text"] for row in data["validation"]), f"{name}/validation")
    if not train or not validation:
        raise RuntimeError(f"{path}/{config} gave {len(train)} training and {len(validation)} validation articles")
    words = sum(d.num_words for d in train) + sum(d.num_words for d in validation)
    return Corpus(tuple(train), tuple(validation), f"hf:{path}/{config}",
                  f"{path}/{config} from the Hugging Face hub: {words:,} words in {len(train) + len(validation):,} "
                  f"articles, its {len(validation):,} validation articles held out")


def load_hub_task(name: str) -> TaskData:
    """A fine-tuning task from :data:`HUB_TASKS`: its train split trains, its validation split tests.

    Raises:
        ValueError: unknown ``name``, or a row whose label is not one of the task's.
        ImportError, FileNotFoundError: as :func:`load_hub_corpus`.
    """
    if name not in HUB_TASKS:
        raise ValueError(f"name must be one of {tuple(HUB_TASKS)}, got {name!r}")
    path, config, first, second, labels = HUB_TASKS[name]
    data = _load(path, config)

    def examples(split: str) -> tuple[TextExample, ...]:
        rows = []
        for row in data[split]:
            label = int(row["label"])
            if not 0 <= label < len(labels):
                raise ValueError(f"{path}/{config} {split}: label {label} is not one of 0..{len(labels) - 1}")
            rows.append(TextExample(row[first], row[second] if second else None, label))
        return tuple(rows)

    train, test = examples("train"), examples("validation")
    return TaskData(name, train, test, labels,
                    f"{path}/{config} from the Hugging Face hub: train split ({len(train):,}) trains, "
                    f"validation split ({len(test):,}) evaluates")
