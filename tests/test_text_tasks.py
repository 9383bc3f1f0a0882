"""Downstream tasks: fixed seeded 90/10 splits for MR and SUBJ, RTE's dev/test split, and errors."""

from __future__ import annotations

import zipfile

import pytest

from attnconv.data.sample_text import write_sample_corpora
from attnconv.data.tasks import TASKS, load_task


@pytest.fixture(scope="module")
def sample(tmp_path_factory):
    return write_sample_corpora(tmp_path_factory.mktemp("tasks"))


@pytest.mark.parametrize("name", ["mr", "subj"])
def test_sentence_tasks_split_90_10_by_seed(sample, name):
    data = load_task(name, sample, seed=0)
    assert (len(data.train), len(data.test)) == (72, 8) and not data.is_pair
    assert load_task(name, sample, seed=0) == data
    other = load_task(name, sample, seed=1)
    assert set(other.test) != set(data.test)
    assert set(data.train) | set(data.test) == set(other.train) | set(other.test)
    assert not set(data.train) & set(data.test)
    assert {e.label for e in data.train} == {0, 1} and len(data.label_names) == 2


def test_polarity_is_read_as_latin1(sample):
    positives = [e.text_a for e in load_task("mr", sample).train if e.label == 1]
    assert any("café" in t for t in positives)


def test_rte_trains_on_dev_sets_and_tests_on_test_sets(sample):
    data = load_task("rte", sample)
    assert data.is_pair and (len(data.train), len(data.test)) == (36, 36)
    assert {e.label for e in data.test} == {0, 1}
    assert "dev sets" in data.description


def test_errors(sample, tmp_path, monkeypatch):
    with pytest.raises(ValueError, match="name must be one of"):
        load_task("sst2", sample)
    with pytest.raises(ValueError, match="test_fraction"):
        load_task("mr", sample, test_fraction=0)
    with pytest.raises(FileNotFoundError, match="sentence_polarity.zip is missing"):
        load_task("mr", tmp_path)
    with zipfile.ZipFile(tmp_path / "subjectivity.zip", "w") as zf:
        zf.writestr("subjectivity/README.txt", "no data")
    with pytest.raises(RuntimeError, match="has no file"):
        load_task("subj", tmp_path)
    (tmp_path / "rte.zip").write_bytes(b"broken")
    with pytest.raises(RuntimeError, match="not a readable zip"):
        load_task("rte", tmp_path)
    monkeypatch.delenv("ATTNCONV_DATA", raising=False)
    with pytest.raises(FileNotFoundError, match="ATTNCONV_DATA"):
        load_task(TASKS[0])
