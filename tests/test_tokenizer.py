"""WordPiece training, special tokens, and the atomic on-disk cache."""

from __future__ import annotations

import pytest

import attnconv.data.tokenizer as tok
from attnconv.data.corpus import load_corpus
from attnconv.data.sample_text import write_sample_corpora


@pytest.fixture(scope="module")
def sentences(tmp_path_factory):
    return load_corpus(write_sample_corpora(tmp_path_factory.mktemp("c")), validation_fraction=0.2).sentences()


def test_wordpiece_has_special_ids_and_lowercases(sentences):
    t = tok.train_wordpiece(sentences, vocab_size=400)
    ids = tok.special_ids(t)
    assert (ids.pad, ids.unk, ids.cls, ids.sep, ids.mask) == (0, 1, 2, 3, 4)
    assert 5 < ids.vocab_size <= 400
    enc = t.encode("The FARMER said", add_special_tokens=False)
    assert enc.tokens[:2] == ["the", "farmer"]
    pieces = t.encode("questioner", add_special_tokens=False).tokens  # an unseen word: split into known pieces
    assert len(pieces) > 1 and all(p.startswith("##") for p in pieces[1:])
    assert t.decode(t.encode("questioner", add_special_tokens=False).ids) == "questioner"


def test_cache_reuses_the_file_and_keys_on_the_text(sentences, tmp_path, monkeypatch):
    first = tok.load_or_train_tokenizer(sentences, tmp_path, vocab_size=150)
    files = sorted(p.name for p in tmp_path.iterdir())
    assert len(files) == 1 and files[0].startswith("wordpiece-150-")

    def fail(*args, **kwargs):
        raise AssertionError("trained again instead of loading the cache")

    monkeypatch.setattr(tok, "train_wordpiece", fail)
    again = tok.load_or_train_tokenizer(sentences, tmp_path, vocab_size=150)
    assert again.get_vocab() == first.get_vocab()
    monkeypatch.undo()
    tok.load_or_train_tokenizer(sentences[:-1], tmp_path, vocab_size=150)  # different text: a new file
    assert len(list(tmp_path.iterdir())) == 2
    assert not list(tmp_path.glob(".*tmp"))


def test_errors(sentences, tmp_path):
    with pytest.raises(ValueError, match="vocab_size"):
        tok.train_wordpiece(sentences, vocab_size=10)
    with pytest.raises(ValueError, match="min_frequency"):
        tok.train_wordpiece(sentences, min_frequency=0)
    with pytest.raises(FileNotFoundError, match="no tokenizer"):
        tok.load_tokenizer(tmp_path / "missing.json")
