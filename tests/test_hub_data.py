"""Optional hub data (WikiText, GLUE): conversion checked against a stand-in ``datasets`` module, so no network
or package is needed; and clear errors when the package is missing."""

from __future__ import annotations

import sys
import types

import pytest

from attnconv.data import hub
from attnconv.train.bert_config import FINETUNE_CONFIGS, FinetuneConfig, PretrainConfig

WIKI = {
    "train": [" \n", " = Valkyria Chronicles = \n", " \n", " Senjō no Valkyria is a game . It was released in 2011 .\n",
              " = = Gameplay = = \n", " The game plays in turns . \n", " = Tower Building = \n",
              " The building is tall . \n"],
    "validation": [" = Robert Boulter = \n", " Robert Boulter is an actor . \n"],
}
RTE = {
    "train": [{"sentence1": "A dog runs.", "sentence2": "An animal moves.", "label": 0},
              {"sentence1": "It rains.", "sentence2": "It is dry.", "label": 1}],
    "validation": [{"sentence1": "Cats sleep.", "sentence2": "Cats rest.", "label": 0}],
}


@pytest.fixture
def fake_datasets(monkeypatch):
    calls = []

    def load_dataset(path, name):
        calls.append((path, name))
        if path == "wikitext":
            return {split: [{"text": t} for t in lines] for split, lines in WIKI.items()}
        if (path, name) == ("glue", "rte"):
            return RTE
        raise ConnectionError("offline")

    monkeypatch.setitem(sys.modules, "datasets", types.SimpleNamespace(load_dataset=load_dataset))
    return calls


def test_wikitext_articles_become_documents(fake_datasets):
    corpus = hub.load_hub_corpus("wikitext-103")
    assert fake_datasets == [("wikitext", "wikitext-103-raw-v1")]
    assert [d.id for d in corpus.train] == ["wikitext-103/train#0", "wikitext-103/train#1"]
    assert corpus.train[0].sentences == ("Senjō no Valkyria is a game .", "It was released in 2011 .",
                                         "The game plays in turns .")  # the sub-heading is dropped, not a new article
    assert corpus.validation[0].sentences == ("Robert Boulter is an actor .",)
    assert corpus.source == "hf:wikitext/wikitext-103-raw-v1" and "its 1 validation articles" in corpus.description


def test_glue_task_keeps_its_labels_and_uses_validation_as_test(fake_datasets):
    task = hub.load_hub_task("glue-rte")
    assert task.name == "glue-rte" and task.label_names == ("entailment", "not_entailment")
    assert task.train[1].text_b == "It is dry." and task.train[1].label == 1 and len(task.test) == 1


def test_offline_missing_package_and_bad_names(fake_datasets, monkeypatch):
    with pytest.raises(FileNotFoundError, match="glue/sst2 .* needs internet"):
        hub.load_hub_task("glue-sst2")
    with pytest.raises(ValueError, match="name must be one of"):
        hub.load_hub_corpus("wikipedia")
    with pytest.raises(ValueError, match="name must be one of"):
        hub.load_hub_task("cola")
    bad = {"train": [dict(RTE["train"][0], label=-1)], "validation": []}
    monkeypatch.setitem(sys.modules, "datasets", types.SimpleNamespace(load_dataset=lambda p, n: bad))
    with pytest.raises(ValueError, match="label -1"):
        hub.load_hub_task("glue-rte")
    monkeypatch.setitem(sys.modules, "datasets", None)  # an import of it now fails
    with pytest.raises(ImportError, match="pip install datasets"):
        hub.load_hub_corpus("wikitext-2")


def test_configs_accept_hub_names():
    assert PretrainConfig(corpora="wikitext-103").corpora == ("wikitext-103",)  # a bare word from --set
    assert PretrainConfig(corpora=["brown", "abc"]).corpora == ("brown", "abc")
    with pytest.raises(ValueError, match="alone"):
        PretrainConfig(corpora=("wikitext-103", "brown"))
    with pytest.raises(ValueError, match="corpora must be"):
        PretrainConfig(corpora=())
    assert FinetuneConfig(task="glue-rte").task == "glue-rte"
    assert FINETUNE_CONFIGS["smoke"].task == "mr"


def test_pretraining_and_finetuning_read_hub_data_by_name(monkeypatch, tmp_path):
    """The trainers route hub names to the hub loaders (here returning the sample corpora's data)."""
    from dataclasses import replace

    from attnconv.data.corpus import load_corpus
    from attnconv.data.sample_text import write_sample_corpora
    from attnconv.data.tasks import load_task
    from attnconv.train import bert_finetune, bert_pretrain
    from attnconv.train.bert_config import PRETRAIN_CONFIGS
    sample = write_sample_corpora(tmp_path / "corpora")
    monkeypatch.setattr(bert_pretrain, "load_hub_corpus", lambda name: load_corpus(sample, validation_fraction=0.25))
    monkeypatch.setattr(bert_finetune, "load_hub_task", lambda name: replace(load_task("subj", sample), name=name))
    config = replace(PRETRAIN_CONFIGS["smoke"], corpora=("wikitext-2",), steps=2, eval_every=2)
    pre = bert_pretrain.pretrain_bert(config, tmp_path / "pre", cache_dir=tmp_path / "cache")
    assert pre["steps"] == 2
    ft = bert_finetune.finetune_bert(replace(FINETUNE_CONFIGS["smoke"], task="glue-rte", seeds=(0,)),
                                     tmp_path / "pre", tmp_path / "ft")
    assert ft["task"] == "glue-rte"
    assert '"hf:glue/rte"' in (tmp_path / "ft" / "provenance.json").read_text()
