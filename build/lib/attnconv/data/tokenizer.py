"""A WordPiece tokenizer (BERT's subword vocabulary) trained on the corpus's training split, cached on disk.

The tokenizer lower-cases, strips accents, splits on whitespace and punctuation, and breaks rare words into
pieces from a vocabulary of about 8,000 (``##`` marks a piece that continues a word). It is trained with the
Hugging Face ``tokenizers`` library and saved as one ``tokenizer.json``, written atomically under a name that
hashes the training text and the settings, so a different corpus never reuses a stale vocabulary.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Sequence

from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, trainers

from .._checks import int_at_least

__all__ = ["SPECIAL_TOKENS", "SpecialIds", "load_or_train_tokenizer", "load_tokenizer", "save_tokenizer",
           "special_ids", "train_wordpiece"]

#: The special tokens, ids 0-4 in this order.
SPECIAL_TOKENS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")


@dataclass(frozen=True)
class SpecialIds:
    """The ids of the special tokens and the vocabulary size V."""

    pad: int
    unk: int
    cls: int
    sep: int
    mask: int
    vocab_size: int


def special_ids(tokenizer: Tokenizer) -> SpecialIds:
    """The special-token ids of a tokenizer trained by :func:`train_wordpiece`.

    Raises:
        ValueError: a special token is missing from the vocabulary.
    """
    ids = []
    for token in SPECIAL_TOKENS:
        i = tokenizer.token_to_id(token)
        if i is None:
            raise ValueError(f"tokenizer has no {token} token; train it with train_wordpiece")
        ids.append(i)
    return SpecialIds(*ids, vocab_size=tokenizer.get_vocab_size())


def train_wordpiece(sentences: Iterable[str], vocab_size: int = 8000, min_frequency: int = 2) -> Tokenizer:
    """Train a lower-casing WordPiece tokenizer.

    Args:
        sentences: training text, one sentence per item.
        vocab_size: target vocabulary size V, including :data:`SPECIAL_TOKENS` (at least 100).
        min_frequency: a merge needs this many occurrences.

    Raises:
        ValueError: ``vocab_size`` < 100 or ``min_frequency`` < 1.
    """
    int_at_least("vocab_size", vocab_size, 100)
    int_at_least("min_frequency", min_frequency, 1)
    tokenizer = Tokenizer(models.WordPiece(unk_token="[UNK]"))
    tokenizer.normalizer = normalizers.BertNormalizer(lowercase=True, strip_accents=True)
    tokenizer.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tokenizer.decoder = decoders.WordPiece()
    trainer = trainers.WordPieceTrainer(vocab_size=vocab_size, min_frequency=min_frequency,
                                        special_tokens=list(SPECIAL_TOKENS), show_progress=False)
    tokenizer.train_from_iterator(sentences, trainer=trainer)
    return tokenizer


def save_tokenizer(tokenizer: Tokenizer, path: str | os.PathLike) -> None:
    """Write ``tokenizer.json`` atomically (a temporary file renamed into place)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    try:
        tokenizer.save(tmp)
        os.replace(tmp, path)
    finally:
        Path(tmp).unlink(missing_ok=True)


def load_tokenizer(path: str | os.PathLike) -> Tokenizer:
    """A tokenizer saved by :func:`save_tokenizer`.

    Raises:
        FileNotFoundError: no file at ``path``.
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"no tokenizer at {path}")
    tokenizer = Tokenizer.from_file(str(path))
    special_ids(tokenizer)
    return tokenizer


def _fingerprint(sentences: Sequence[str], vocab_size: int, min_frequency: int) -> str:
    digest = hashlib.sha256(f"wordpiece v1 {vocab_size} {min_frequency}\n".encode())
    for s in sentences:
        digest.update(s.encode("utf-8"))
        digest.update(b"\n")
    return digest.hexdigest()[:16]


def load_or_train_tokenizer(sentences: Sequence[str], cache_dir: str | os.PathLike, vocab_size: int = 8000,
                            min_frequency: int = 2) -> Tokenizer:
    """The tokenizer for these sentences and settings: from ``cache_dir`` if trained before, else trained and saved.

    The file is ``cache_dir/wordpiece-<V>-<hash>.json``, the hash covering every sentence and setting.
    """
    path = Path(cache_dir) / f"wordpiece-{vocab_size}-{_fingerprint(sentences, vocab_size, min_frequency)}.json"
    if path.is_file():
        return load_tokenizer(path)
    tokenizer = train_wordpiece(sentences, vocab_size, min_frequency)
    save_tokenizer(tokenizer, path)
    return tokenizer
