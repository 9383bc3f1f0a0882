"""The pretraining corpus: formats, deterministic document split, and clear errors without data."""

from __future__ import annotations

import zipfile

import pytest

from attnconv.data.corpus import (BLOCK_LINES, PRETRAIN_CORPORA, corpora_dir, load_corpus, read_documents,
                                  split_sentences)
from attnconv.data.sample_text import write_sample_corpora


@pytest.fixture(scope="module")
def sample(tmp_path_factory):
    return write_sample_corpora(tmp_path_factory.mktemp("corpora"), sentences_per_file=60)


def test_brown_tags_are_stripped_and_other_files_skipped(sample):
    docs = read_documents("brown", sample)
    assert [d.id for d in docs] == [f"brown/c{g}0{i}#0" for g in "ab" for i in range(1, 4)]  # README, cats.txt skipped
    words = [w for d in docs for s in d.sentences for w in s.split()]
    assert words and not any("/" in w for w in words)
    assert docs[0].sentences[0].endswith(" .")


def test_one_file_corpora_are_cut_into_blocks(sample):
    docs = read_documents("abc", sample)
    assert len(docs) == 4 and all(len(d.sentences) <= BLOCK_LINES for d in docs)  # 180 lines -> 50+50+50+30
    assert sum(len(d.sentences) for d in docs) == 180


def test_speeches_are_split_into_sentences_keeping_titles():
    assert split_sentences('Mr. Speaker, Mr. President: It is late. "Yes!" He said. 3 cats ran.') == [
        "Mr. Speaker, Mr. President: It is late.", '"Yes!"', "He said.", "3 cats ran."]
    assert split_sentences("PRESIDENT HARRY S. TRUMAN spoke.") == ["PRESIDENT HARRY S. TRUMAN spoke."]


def test_split_is_deterministic_disjoint_and_depends_only_on_document_ids(sample):
    a = load_corpus(sample, validation_fraction=0.3)
    b = load_corpus(sample, validation_fraction=0.3)
    assert a == b
    train, val = {d.id for d in a.train}, {d.id for d in a.validation}
    assert train and val and not train & val
    assert len(train) + len(val) == sum(len(read_documents(c, sample)) for c in PRETRAIN_CORPORA)
    only_brown = load_corpus(sample, corpora=("brown",), validation_fraction=0.3)
    assert {d.id for d in only_brown.validation} == {i for i in val if i.startswith("brown/")}
    assert f"{len(val)} held out" in a.description
    assert a.sentences("validation") == [s for d in a.validation for s in d.sentences]


def test_no_data_says_where_to_put_it(monkeypatch, tmp_path):
    monkeypatch.delenv("ATTNCONV_DATA", raising=False)
    monkeypatch.setenv("ATTNCONV_CACHE", str(tmp_path / "cache"))
    with pytest.raises(FileNotFoundError, match="attnconv.data.nltk_zips"):
        load_corpus()
    downloaded = tmp_path / "cache" / "nltk" / "corpora"
    downloaded.mkdir(parents=True)
    assert corpora_dir() == downloaded  # found with no setting once downloaded
    monkeypatch.setenv("ATTNCONV_DATA", str(tmp_path))
    with pytest.raises(FileNotFoundError, match="nltk/corpora"):
        corpora_dir()
    (tmp_path / "nltk" / "corpora").mkdir(parents=True)
    with pytest.raises(FileNotFoundError, match="brown.zip is missing"):
        read_documents("brown")


def test_bad_archives_and_arguments(tmp_path):
    (tmp_path / "brown.zip").write_bytes(b"not a zip")
    with pytest.raises(RuntimeError, match="not a readable zip"):
        read_documents("brown", tmp_path)
    with zipfile.ZipFile(tmp_path / "abc.zip", "w") as zf:
        zf.writestr("abc/README", "nothing")
    with pytest.raises(RuntimeError, match="holds no text"):
        read_documents("abc", tmp_path)
    with pytest.raises(ValueError, match="corpus must be one of"):
        read_documents("wikipedia", tmp_path)
    with pytest.raises(ValueError, match="corpora must be"):
        load_corpus(tmp_path, corpora=())
    with pytest.raises(ValueError, match="validation_fraction"):
        load_corpus(tmp_path, validation_fraction=1.0)


def test_a_small_copy_still_gets_a_validation_document(tmp_path):
    """A mirror's sample corpora hold a few dozen documents: the hashed 2% split would leave validation empty, so
    the document with the lowest hash is held out instead, the same one every time."""
    from attnconv.data.corpus import load_corpus
    from attnconv.data.sample_text import write_sample_corpora

    folder = write_sample_corpora(tmp_path / "corpora", sentences_per_file=5)
    first, again = load_corpus(folder), load_corpus(folder)
    assert len(first.validation) == 1 and len(first.train) >= 2
    assert first.validation[0].id == again.validation[0].id
