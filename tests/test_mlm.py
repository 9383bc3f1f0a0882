"""Masked-LM examples: sentence pairs within the length limit, dynamic padding, and 80/10/10 masking."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from attnconv.data.corpus import Document, load_corpus
from attnconv.data.mlm import (IGNORE_INDEX, EncodedDocuments, PairExamples, encode_pairs, load_or_encode,
                               make_pairs, mask_tokens, mlm_batch, pad_pairs)
from attnconv.data.sample_text import write_sample_corpora
from attnconv.data.tokenizer import SpecialIds, special_ids, train_wordpiece

IDS = SpecialIds(pad=0, unk=1, cls=2, sep=3, mask=4, vocab_size=50)


def _encoded(doc_sentences: list[list[list[int]]]) -> EncodedDocuments:
    sentences = [s for d in doc_sentences for s in d]
    ids = np.array([t for s in sentences for t in s], dtype=np.int32)
    starts = np.concatenate([[0], np.cumsum([len(s) for s in sentences])])
    docs = np.concatenate([[0], np.cumsum([len(d) for d in doc_sentences])])
    return EncodedDocuments(ids, starts, docs)


def test_pairs_are_consecutive_text_within_the_limit():
    rng = np.random.default_rng(0)
    docs = [[list(range(100 * d + 10 * s + 5, 100 * d + 10 * s + 5 + int(rng.integers(1, 9)))) for s in range(8)]
            for d in range(5)] + [[list(range(5, 45))]]  # the last: one sentence longer than the limit
    enc = _encoded(docs)
    pairs = make_pairs(enc, max_length=16, seed=3)
    assert len(pairs) > 5
    for e in range(len(pairs)):
        a, b = pairs.segments(e)
        assert len(a) >= 1 and len(a) + len(b) <= 16 - 3
    streams = ["," + ",".join(map(str, (t for s in d for t in s))) + "," for d in docs]
    for e in range(len(pairs)):  # untruncated pairs are a contiguous piece of one document
        a, b = pairs.segments(e)
        piece = "," + ",".join(map(str, [*a, *b])) + ","
        if len(a) + len(b) < 13:
            assert any(piece in s for s in streams)
    again = make_pairs(enc, max_length=16, seed=3)
    assert np.array_equal(again.tokens, pairs.tokens) and np.array_equal(again.a_lengths, pairs.a_lengths)


def test_padding_to_the_longest_with_segments_and_mask():
    ex = PairExamples.from_segments([([10, 11], [12]), ([13, 14, 15, 16], []), ([17], [18, 19])])
    batch = pad_pairs(ex, [0, 1, 2], IDS)
    assert batch.input_ids.tolist() == [[2, 10, 11, 3, 12, 3], [2, 13, 14, 15, 16, 3], [2, 17, 3, 18, 19, 3]]
    assert batch.token_type_ids.tolist() == [[0, 0, 0, 0, 1, 1], [0] * 6, [0, 0, 0, 1, 1, 1]]
    assert not batch.padding_mask.any()
    short = pad_pairs(ex, [0, 2], IDS)  # dynamic: padded to 6, not to any maximum
    assert short.input_ids.shape == (2, 6)
    batch = pad_pairs(ex, [2, 0], IDS)
    assert batch.input_ids.shape == (2, 6) and not batch.padding_mask.any()
    one = pad_pairs(PairExamples.from_segments([([10], []), ([11, 12, 13], [14])]), [0, 1], IDS)
    assert one.padding_mask.tolist() == [[False] * 3 + [True] * 4, [False] * 7]
    assert one.input_ids[0, 3:].eq(IDS.pad).all()


def test_masking_rates_and_rules():
    ids = torch.randint(5, 50, (400, 64))
    maskable = torch.ones_like(ids, dtype=torch.bool)
    maskable[:, 0] = maskable[:, -8:] = False  # specials and padding
    inputs, labels = mask_tokens(ids, maskable, IDS, torch.Generator().manual_seed(0))
    chosen = labels != IGNORE_INDEX
    assert not chosen[~maskable].any() and torch.equal(inputs[~maskable], ids[~maskable])
    assert torch.equal(labels[chosen], ids[chosen])
    assert abs(chosen.float().sum() / maskable.sum() - 0.15) < 0.01
    masked = (inputs == IDS.mask) & chosen
    kept = (inputs == ids) & chosen
    assert abs(masked.sum() / chosen.sum() - 0.8) < 0.02
    assert abs(kept.sum() / chosen.sum() - (0.1 + 0.1 / 45)) < 0.02  # random draws can hit the same token
    assert ((inputs[chosen] >= 5) | (inputs[chosen] == IDS.mask)).all()
    assert torch.equal(inputs[~chosen], ids[~chosen])
    again = mask_tokens(ids, maskable, IDS, torch.Generator().manual_seed(0))
    assert torch.equal(again[0], inputs) and torch.equal(again[1], labels)


def test_every_batch_predicts_something_and_errors():
    ids = torch.tensor([[2, 7, 3]])
    maskable = torch.tensor([[False, True, False]])
    _, labels = mask_tokens(ids, maskable, IDS, torch.Generator().manual_seed(1), mask_prob=0.01)
    assert labels.tolist() == [[IGNORE_INDEX, 7, IGNORE_INDEX]]
    with pytest.raises(ValueError, match="mask_prob"):
        mask_tokens(ids, maskable, IDS, torch.Generator(), mask_prob=1.5)
    with pytest.raises(ValueError, match="maskable marks no token"):
        mask_tokens(ids, torch.zeros_like(maskable), IDS, torch.Generator())
    with pytest.raises(ValueError, match="max_length"):
        make_pairs(_encoded([[[5, 6]]]), max_length=4)
    with pytest.raises(ValueError, match="short_fraction"):
        make_pairs(_encoded([[[5, 6]]]), short_fraction=2.0)


def test_real_tokenizer_pipeline_and_cache(tmp_path):
    corpus = load_corpus(write_sample_corpora(tmp_path / "c"), validation_fraction=0.2)
    tokenizer = train_wordpiece(corpus.sentences(), vocab_size=300)
    ids = special_ids(tokenizer)
    enc = load_or_encode(tokenizer, corpus.train, tmp_path / "cache")
    cached = load_or_encode(tokenizer, corpus.train, tmp_path / "cache")
    assert np.array_equal(enc.ids, cached.ids) and enc.num_documents == len(corpus.train)
    assert tokenizer.decode(enc.sentences(0)[0].tolist()) == corpus.train[0].sentences[0].lower().replace(" .", ".")
    batch = mlm_batch(make_pairs(enc, 32, seed=0), [0, 1, 2], ids, torch.Generator().manual_seed(0))
    assert batch.input_ids.shape[1] <= 32 and (batch.input_ids[:, 0] == ids.cls).all()
    assert ((batch.labels != IGNORE_INDEX) <= ~batch.padding_mask).all()
    pairs = encode_pairs(tokenizer, ["the farmer said"] * 2, ["a dog saw rain " * 20, "rain"], max_length=12)
    assert all(len(a) + len(b) <= 9 and len(a) == 3 for a, b in map(pairs.segments, range(2)))
    with pytest.raises(ValueError, match="texts_b"):
        encode_pairs(tokenizer, ["a"], ["b", "c"])
    with pytest.raises(ValueError, match="max_length"):
        encode_pairs(tokenizer, ["a"], max_length=3)


def test_documents_can_be_given_directly():
    tokenizer = train_wordpiece(["alpha beta gamma delta"] * 20, vocab_size=100)
    enc = load_or_encode(tokenizer, [Document("x#0", ("alpha beta", "gamma delta"))], None)
    assert enc.sentence_starts.tolist() == [0, 2, 4]
