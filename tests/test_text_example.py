"""attnconv.data.text.example_sentence: a local NLTK corpus zip when present, a built-in sentence otherwise."""

from __future__ import annotations

import zipfile

import pytest

from attnconv.data.text import BUILTIN_SENTENCE, example_sentence

BROWN_FILE = (
    "\n\n\tThe/at jury/nn said/vbd it/pps would/md look/vb into/in the/at reports/nns ./.\n\n\n"
    "\tShort/jj one/cd ./.\n\n\n"
    "\tA/at second/od long/jj sentence/nn follows/vbz here/rb with/in tags/nns ./.\n"
)


@pytest.fixture
def tiny_corpus(tmp_path, monkeypatch):
    """A brown.zip in NLTK's layout: tagged text files plus documentation that must be skipped."""
    folder = tmp_path / "nltk" / "corpora"
    folder.mkdir(parents=True)
    with zipfile.ZipFile(folder / "brown.zip", "w") as zf:
        zf.writestr("brown/", "")
        zf.writestr("brown/CONTENTS", "This directory contains the Brown Corpus in a tagged form, and more words\n")
        zf.writestr("brown/README", "Brown Corpus documentation that is long enough to count as a sentence here\n")
        zf.writestr("brown/cats.txt", "ca01 news ca02 news ca03 news ca04 news ca05 news\n")
        zf.writestr("brown/ca01", BROWN_FILE)
    monkeypatch.setenv("ATTNCONV_DATA", str(tmp_path))
    return folder


def test_reads_tagged_sentences_without_tags(tiny_corpus):
    first = example_sentence(0)
    assert first.is_real and first.words == ("The", "jury", "said", "it", "would", "look", "into", "the", "reports", ".")
    assert "brown corpus, sentence 0" in first.source and "ca01" in first.source
    second = example_sentence(1)  # the 3-word sentence is shorter than min_words and skipped
    assert second.words[:3] == ("A", "second", "long")
    assert example_sentence(0, min_words=2, max_words=3).words == ("Short", "one", ".")


def test_index_beyond_the_corpus(tiny_corpus):
    with pytest.raises(ValueError, match="index must be below the 2 sentences"):
        example_sentence(2)


def test_corrupt_zip(tiny_corpus):
    (tiny_corpus / "brown.zip").write_bytes(b"not a zip")
    with pytest.raises(RuntimeError, match="not a readable zip archive"):
        example_sentence(0)


def test_builtin_sentence_without_data(monkeypatch):
    monkeypatch.delenv("ATTNCONV_DATA", raising=False)
    sentence = example_sentence()
    assert not sentence.is_real and sentence.words == tuple(BUILTIN_SENTENCE.split())
    assert "built-in sentence" in sentence.source and "attnconv.data.nltk_zips" in sentence.source  # how to get it


def test_missing_corpus_falls_back(tiny_corpus):
    assert not example_sentence(corpus="webtext").is_real


@pytest.mark.parametrize("kwargs, message", [(dict(index=-1), "index must be a non-negative integer"),
                                             (dict(min_words=5, max_words=4), "min_words and max_words")])
def test_bad_arguments(kwargs, message):
    with pytest.raises(ValueError, match=message):
        example_sentence(**kwargs)


def test_a_sentence_from_the_download_cache_without_attnconv_data(monkeypatch, tmp_path):
    """Where prepare_data("nltk") puts the zips (the cache, as in Colab), the chapter's sentence is real text."""
    from attnconv.data.sample_text import write_sample_corpora

    monkeypatch.delenv("ATTNCONV_DATA", raising=False)
    monkeypatch.setenv("ATTNCONV_CACHE", str(tmp_path / "cache"))
    write_sample_corpora(tmp_path / "cache" / "nltk" / "corpora")
    sentence = example_sentence()
    assert sentence.is_real and "brown corpus, sentence 0" in sentence.source
