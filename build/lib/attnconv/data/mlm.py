"""Masked-language-model examples: sentence pairs ``[CLS] a [SEP] b [SEP]``, 15% masking, dynamic padding.

Pipeline, in the order of a training run:

1. :func:`encode_documents` turns documents into token ids (one flat array plus sentence and document offsets),
   cached with :func:`load_or_encode`;
2. :func:`make_pairs` cuts each document into examples of at most ``max_length`` tokens: a run of consecutive
   sentences split at a random sentence boundary into segment a and segment b (Devlin et al. 2019, without
   their next-sentence task, as in RoBERTa);
3. :func:`mlm_batch` pads a batch to its longest example (not to ``max_length``), marks the padding, and masks
   15% of the real tokens: 80% of those become ``[MASK]``, 10% a random token, 10% stay unchanged. The model
   must predict the original token at every chosen position (``labels``; -100 elsewhere).

Every random choice comes from a seeded ``numpy`` or ``torch`` generator passed in, so examples and masks are
reproducible.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import numpy as np
import torch
from torch import Tensor
from tokenizers import Tokenizer

from .._checks import int_at_least
from .cache import load_arrays, save_arrays
from .corpus import Document
from .tokenizer import SpecialIds

__all__ = ["IGNORE_INDEX", "EncodedDocuments", "MLMBatch", "PairExamples", "encode_documents", "encode_pairs",
           "load_or_encode", "make_pairs", "mask_tokens", "mlm_batch", "pad_pairs"]

#: The label of positions that are not predicted (PyTorch's cross-entropy ignores it).
IGNORE_INDEX = -100


@dataclass(frozen=True)
class EncodedDocuments:
    """Token ids of many documents, flat.

    Attributes:
        ids: ``(T,)`` int32, all tokens in order.
        sentence_starts: ``(S+1,)`` int64: sentence s is ``ids[sentence_starts[s]:sentence_starts[s+1]]``.
        document_starts: ``(D+1,)`` int64: document d holds sentences ``document_starts[d]:document_starts[d+1]``.
    """

    ids: np.ndarray
    sentence_starts: np.ndarray
    document_starts: np.ndarray

    def sentences(self, doc: int) -> list[np.ndarray]:
        """The token ids of each sentence of document ``doc``."""
        a, b = self.document_starts[doc], self.document_starts[doc + 1]
        return [self.ids[self.sentence_starts[s]:self.sentence_starts[s + 1]] for s in range(a, b)]

    @property
    def num_documents(self) -> int:
        return len(self.document_starts) - 1


def encode_documents(tokenizer: Tokenizer, documents: Sequence[Document]) -> EncodedDocuments:
    """Tokenise every sentence (no special tokens) into an :class:`EncodedDocuments`."""
    sentences = [s for d in documents for s in d.sentences]
    encodings = tokenizer.encode_batch(sentences, add_special_tokens=False)
    lengths = np.array([len(e.ids) for e in encodings], dtype=np.int64)
    ids = np.fromiter((i for e in encodings for i in e.ids), dtype=np.int32, count=int(lengths.sum()))
    sentence_starts = np.concatenate([[0], np.cumsum(lengths)])
    document_starts = np.concatenate([[0], np.cumsum([len(d.sentences) for d in documents])]).astype(np.int64)
    return EncodedDocuments(ids, sentence_starts, document_starts)


def load_or_encode(tokenizer: Tokenizer, documents: Sequence[Document], cache_dir: str | os.PathLike | None
                   ) -> EncodedDocuments:
    """:func:`encode_documents`, cached in ``cache_dir`` under a hash of the tokenizer and the documents."""
    if cache_dir is None:
        return encode_documents(tokenizer, documents)
    digest = hashlib.sha256(tokenizer.to_str().encode())
    for d in documents:
        digest.update(d.id.encode())
        digest.update("\n".join(d.sentences).encode("utf-8"))
    folder = Path(cache_dir) / f"encoded-{digest.hexdigest()[:16]}"
    names = ("ids", "sentence_starts", "document_starts")
    cached = load_arrays(folder, names)
    if cached is not None:
        return EncodedDocuments(*(cached[0][n] for n in names))
    encoded = encode_documents(tokenizer, documents)
    save_arrays(folder, {n: getattr(encoded, n) for n in names}, {"documents": len(documents)})
    return encoded


@dataclass(frozen=True)
class PairExamples:
    """Segment pairs (a, b), stored flat; b may be empty (a single-segment example).

    Attributes:
        tokens: ``(T,)`` int32: example e is ``tokens[starts[e]:starts[e+1]]``, a followed by b.
        starts: ``(E+1,)`` int64.
        a_lengths: ``(E,)`` int64, the length of segment a.
    """

    tokens: np.ndarray
    starts: np.ndarray
    a_lengths: np.ndarray

    def __len__(self) -> int:
        return len(self.a_lengths)

    def segments(self, e: int) -> tuple[np.ndarray, np.ndarray]:
        """Segment a and segment b of example ``e``."""
        t = self.tokens[self.starts[e]:self.starts[e + 1]]
        return t[:self.a_lengths[e]], t[self.a_lengths[e]:]

    @classmethod
    def from_segments(cls, pairs: Sequence[tuple[Sequence[int], Sequence[int]]]) -> "PairExamples":
        lengths = np.array([len(a) + len(b) for a, b in pairs], dtype=np.int64)
        tokens = np.fromiter((i for a, b in pairs for i in (*a, *b)), dtype=np.int32, count=int(lengths.sum()))
        return cls(tokens, np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64),
                   np.array([len(a) for a, _ in pairs], dtype=np.int64))


def _check_max_length(max_length: int, minimum: int) -> None:
    int_at_least("max_length", max_length, minimum)


def _truncate(a: list[int], b: list[int], budget: int) -> None:
    """Drop tokens from the end of the longer segment until both fit in ``budget``."""
    while len(a) + len(b) > budget:
        (a if len(a) > len(b) else b).pop()


def make_pairs(encoded: EncodedDocuments, max_length: int = 128, seed: int = 0,
               short_fraction: float = 0.1) -> PairExamples:
    """Cut documents into sentence-pair examples of at most ``max_length`` tokens with special tokens.

    Consecutive sentences are gathered until they reach the target length L - 3 (with probability
    ``short_fraction`` a shorter random target, so that the model also sees short inputs); the run is split at
    a random sentence boundary into a and b. A run of one sentence is split inside the sentence. The longer
    segment is truncated if the run is too long. Runs of fewer than 2 tokens are dropped.

    Raises:
        ValueError: ``max_length`` < 5 or ``short_fraction`` outside [0, 1].
    """
    _check_max_length(max_length, 5)
    if not 0 <= short_fraction <= 1:
        raise ValueError(f"short_fraction must be in [0, 1], got {short_fraction!r}")
    rng = np.random.default_rng(seed)
    budget = max_length - 3
    pairs: list[tuple[list[int], list[int]]] = []
    for doc in range(encoded.num_documents):
        sentences = [s.tolist() for s in encoded.sentences(doc) if len(s)]
        i = 0
        while i < len(sentences):
            target = int(rng.integers(2, budget + 1)) if rng.random() < short_fraction else budget
            run, size = [], 0
            while i < len(sentences) and (size < target or not run):
                run.append(sentences[i])
                size += len(sentences[i])
                i += 1
            if len(run) >= 2:
                cut = int(rng.integers(1, len(run)))
                a = [t for s in run[:cut] for t in s]
                b = [t for s in run[cut:] for t in s]
            else:
                tokens = run[0][:budget]
                if len(tokens) < 2:
                    continue
                cut = int(rng.integers(1, len(tokens)))
                a, b = tokens[:cut], tokens[cut:]
            _truncate(a, b, budget)
            pairs.append((a, b))
    return PairExamples.from_segments(pairs)


def encode_pairs(tokenizer: Tokenizer, texts_a: Sequence[str], texts_b: Sequence[str] | None = None,
                 max_length: int = 128) -> PairExamples:
    """Tokenise sentences (or sentence pairs) for classification, truncated to ``max_length`` with specials.

    Raises:
        ValueError: ``texts_b`` has a different length from ``texts_a``, or ``max_length`` < 4.
    """
    _check_max_length(max_length, 4)
    if texts_b is not None and len(texts_b) != len(texts_a):
        raise ValueError(f"texts_b must have one text per texts_a ({len(texts_a)}), got {len(texts_b)}")
    enc_a = tokenizer.encode_batch(list(texts_a), add_special_tokens=False)
    enc_b = tokenizer.encode_batch(list(texts_b), add_special_tokens=False) if texts_b is not None else None
    budget = max_length - (3 if texts_b is not None else 2)
    pairs = []
    for i, ea in enumerate(enc_a):
        a, b = list(ea.ids), list(enc_b[i].ids) if enc_b is not None else []
        _truncate(a, b, budget)
        pairs.append((a, b))
    return PairExamples.from_segments(pairs)


@dataclass
class MLMBatch:
    """One padded batch.

    Attributes:
        input_ids: ``(B, N)`` long, N the longest example of the batch.
        token_type_ids: ``(B, N)`` long: 0 for ``[CLS] a [SEP]``, 1 for ``b [SEP]``.
        padding_mask: ``(B, N)`` bool, ``True`` on padding.
        labels: ``(B, N)`` long: the original token where one was masked, :data:`IGNORE_INDEX` elsewhere
            (``None`` for an unmasked batch).
    """

    input_ids: Tensor
    token_type_ids: Tensor
    padding_mask: Tensor
    labels: Tensor | None = None

    def to(self, device: torch.device) -> "MLMBatch":
        return MLMBatch(*(None if t is None else t.to(device) for t in
                          (self.input_ids, self.token_type_ids, self.padding_mask, self.labels)))


def pad_pairs(examples: PairExamples, indices: Sequence[int], ids: SpecialIds) -> MLMBatch:
    """``[CLS] a [SEP] b [SEP]`` (``[CLS] a [SEP]`` when b is empty) for each index, padded to the longest."""
    rows = []
    for e in indices:
        a, b = examples.segments(int(e))
        first = [ids.cls, *a.tolist(), ids.sep]
        second = [*b.tolist(), ids.sep] if len(b) else []
        rows.append((first, second))
    n = max(len(f) + len(s) for f, s in rows)
    input_ids = torch.full((len(rows), n), ids.pad, dtype=torch.long)
    types = torch.zeros((len(rows), n), dtype=torch.long)
    padding = torch.ones((len(rows), n), dtype=torch.bool)
    for r, (first, second) in enumerate(rows):
        input_ids[r, :len(first) + len(second)] = torch.tensor(first + second)
        types[r, len(first):len(first) + len(second)] = 1
        padding[r, :len(first) + len(second)] = False
    return MLMBatch(input_ids, types, padding)


def mask_tokens(input_ids: Tensor, maskable: Tensor, ids: SpecialIds, generator: torch.Generator,
                mask_prob: float = 0.15) -> tuple[Tensor, Tensor]:
    """BERT's masking: choose each maskable token with probability ``mask_prob``; 80/10/10 mask/random/keep.

    Args:
        input_ids: ``(B, N)`` long.
        maskable: ``(B, N)`` bool, ``False`` on special tokens and padding.
        ids: the special ids; random replacements are drawn from the non-special tokens.
        generator: a CPU ``torch.Generator``.
        mask_prob: in (0, 1).

    Returns:
        ``(inputs, labels)``, both ``(B, N)``: the corrupted inputs, and the original ids at chosen positions
        (:data:`IGNORE_INDEX` elsewhere). At least one token per batch is chosen.
    """
    if not 0 < mask_prob < 1:
        raise ValueError(f"mask_prob must be in (0, 1), got {mask_prob!r}")
    if maskable.shape != input_ids.shape or maskable.dtype != torch.bool:
        raise ValueError(f"maskable must be a bool tensor of shape {tuple(input_ids.shape)}")
    if not bool(maskable.any()):
        raise ValueError("maskable marks no token: there is nothing to predict")
    u = torch.rand(input_ids.shape, generator=generator)
    chosen = (u < mask_prob) & maskable
    if not bool(chosen.any()):  # a tiny batch can draw nothing; predict its first maskable token instead
        chosen.view(-1)[maskable.view(-1).nonzero()[0]] = True
    labels = torch.where(chosen, input_ids, torch.full_like(input_ids, IGNORE_INDEX))
    action = torch.rand(input_ids.shape, generator=generator)
    first_regular = max(ids.pad, ids.unk, ids.cls, ids.sep, ids.mask) + 1
    random_ids = torch.randint(first_regular, ids.vocab_size, input_ids.shape, generator=generator)
    inputs = input_ids.clone()
    inputs[chosen & (action < 0.8)] = ids.mask
    swap = chosen & (action >= 0.8) & (action < 0.9)
    inputs[swap] = random_ids[swap]
    return inputs, labels


def mlm_batch(examples: PairExamples, indices: Sequence[int], ids: SpecialIds, generator: torch.Generator,
              mask_prob: float = 0.15) -> MLMBatch:
    """A padded, masked batch of the examples ``indices`` (see :func:`pad_pairs` and :func:`mask_tokens`)."""
    batch = pad_pairs(examples, indices, ids)
    special = (batch.input_ids == ids.cls) | (batch.input_ids == ids.sep) | batch.padding_mask
    batch.input_ids, batch.labels = mask_tokens(batch.input_ids, ~special, ids, generator, mask_prob)
    return batch
