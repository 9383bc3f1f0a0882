"""The bag-of-words baseline of the text tasks, on the generated sample corpora."""

import pytest
import torch

from attnconv.data.sample_text import write_sample_corpora
from attnconv.data.tasks import TextExample, load_task
from attnconv.train.bow import BagOfWords, bow_baseline, fit_logistic, run, words


@pytest.fixture(scope="module")
def corpora(tmp_path_factory):
    return write_sample_corpora(tmp_path_factory.mktemp("bow"))


def test_words_and_pair_features():
    assert words("A wonderful, moving film!") == ["a", "wonderful", ",", "moving", "film", "!"]
    pair = TextExample("the cat sat", "a cat", 1)
    assert BagOfWords.features(pair) == {"a:the", "a:cat", "a:sat", "b:a", "b:cat"}  # each sentence its own namespace
    bow = BagOfWords([pair, TextExample("dogs run", "dogs", 0)])
    ids, offsets, extra = bow.encode([pair])
    assert offsets.tolist() == [0] and len(ids) == 5 and extra.tolist() == [[0.5]]  # "cat" of "a cat" is in the premise


def test_logistic_regression_separates_separable_data_and_checks_its_penalty():
    bow = BagOfWords([TextExample("good", None, 1), TextExample("bad", None, 0)])
    data = bow.encode([TextExample("good", None, 1), TextExample("bad", None, 0)])
    model = fit_logistic(data, torch.tensor([1, 0]), len(bow.vocab), 2, penalty=1e-3)
    assert model(*data).argmax(1).tolist() == [1, 0]
    with pytest.raises(ValueError, match="penalty"):
        fit_logistic(data, torch.tensor([1, 0]), len(bow.vocab), 2, penalty=-1.0)


def test_baseline_learns_the_sample_polarity_task_and_not_shuffled_labels(corpora):
    task = load_task("mr", corpora)
    result = bow_baseline(list(task.train), list(task.test), 2)
    assert result["test_acc"] == 1.0 and result["train_examples"] == len(task.train)
    # The same pipeline with labels unrelated to the words: it must not score perfectly on the test split.
    shuffled = [TextExample(ex.text_a, None, i % 2) for i, ex in enumerate(task.train)]
    assert bow_baseline(shuffled, list(task.test), 2)["test_acc"] < 1.0


def test_run_writes_every_task_with_provenance(corpora, tmp_path):
    results = run(str(tmp_path), str(corpora), train_examples=20)
    assert set(results) == {"mr", "subj", "rte"}
    assert results["mr"]["subset"]["train_examples"] == 20
    assert results["rte"]["full"]["test_examples"] > 0
    assert (tmp_path / "final.json").is_file() and (tmp_path / "provenance.json").is_file()
