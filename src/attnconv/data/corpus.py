"""The pretraining corpus: six NLTK text collections (about 4M words), split into documents and sentences.

The corpora are the zips NLTK's downloader fetches, read from ``$ATTNCONV_DATA/nltk/corpora/<name>.zip`` (or any
folder given as ``root``) with ``zipfile``; NLTK itself is not needed. Their formats:

- **brown**: files ``brown/c[a-r]NN``, one tagged sentence per line (``The/at jury/nn ...``); tags are stripped.
- **movie_reviews**: one review per file, one tokenised sentence per line.
- **abc**, **webtext**: a few large files with one sentence (or one post) per line.
- **state_union**, **inaugural**: one speech per file, paragraphs on lines, split into sentences by punctuation.

**Documents.** A file is a document, except in the one-file-per-genre corpora (abc, webtext), whose files are cut
into blocks of :data:`BLOCK_LINES` consecutive lines. Every document has a stable id, its path in the zip and block number.

**Validation split.** A document goes to validation when the CRC-32 of its id, modulo 10,000, is below
``validation_fraction * 10,000``: the split depends on nothing but the ids, so it is the same on every machine
and does not move when a corpus is added.

**Getting the zips.** With internet, ``python -m attnconv.data.nltk_zips`` downloads them into the cache folder,
checking each one's md5, and they are found there with no setting (see :mod:`attnconv.data.nltk_zips`). NLTK's
own ``python -m nltk.downloader -d DIR/nltk brown abc movie_reviews state_union webtext inaugural
sentence_polarity subjectivity rte`` fetches the same files; then set ``ATTNCONV_DATA=DIR``.
"""

from __future__ import annotations

import os
import re
import zipfile
import zlib
from dataclasses import dataclass
from pathlib import Path

from .members import decode_text, read_member
from .nltk_zips import cached_corpora_dir
from .paths import data_root, display_path

__all__ = ["BLOCK_LINES", "PRETRAIN_CORPORA", "Corpus", "Document", "corpora_dir", "load_corpus", "read_documents",
           "split_sentences"]

#: The NLTK corpora of the pretraining text.
PRETRAIN_CORPORA = ("brown", "abc", "movie_reviews", "state_union", "webtext", "inaugural")
#: Lines per document in the one-file corpora (abc, webtext).
BLOCK_LINES = 50
_BLOCKED = ("abc", "webtext")
_SKIP = {"README", "README.txt", "CONTENTS", "cats.txt", "LICENSE"}
_SENTENCE_END = re.compile(r"[.!?][\"')\]]*(?=\s+[\"'(\[]?[A-Z0-9])")

_ABBREVIATION = re.compile(r"(?:^|\s)(?:Mr|Mrs|Ms|Dr|St|Jr|Sr|Gen|Sen|Rep|Gov|No|U\.S|[A-Z])\.$")

DOWNLOAD_HINT = ("python -m attnconv.data.nltk_zips (md5-checked, into the cache folder, found without settings), or "
                 "python -m nltk.downloader -d DIR/nltk brown abc movie_reviews state_union webtext inaugural "
                 "sentence_polarity subjectivity rte and then set ATTNCONV_DATA=DIR")


@dataclass(frozen=True)
class Document:
    """A run of consecutive sentences from one source.

    Attributes:
        id: ``<path in the zip>#<block>``, e.g. ``movie_reviews/neg/cv000_29416.txt#0``; stable across machines.
        sentences: the sentences, each a string of space-separated words.
    """

    id: str
    sentences: tuple[str, ...]

    @property
    def num_words(self) -> int:
        return sum(len(s.split()) for s in self.sentences)


@dataclass(frozen=True)
class Corpus:
    """Train and validation documents, and where they came from.

    Attributes:
        train: documents for the tokenizer and pretraining.
        validation: held-out documents for the masked-LM validation loss.
        source: the folder the zips were read from, as a reader may see it (:func:`~attnconv.data.paths.display_path`).
        description: a sentence for provenance records.
    """

    train: tuple[Document, ...]
    validation: tuple[Document, ...]
    source: str
    description: str

    def sentences(self, split: str = "train") -> list[str]:
        """Every sentence of ``split`` (``"train"`` or ``"validation"``), in document order."""
        if split not in ("train", "validation"):
            raise ValueError(f"split must be 'train' or 'validation', got {split!r}")
        return [s for d in getattr(self, split) for s in d.sentences]


def split_sentences(text: str) -> list[str]:
    """Split a paragraph after ``.``, ``!`` or ``?`` (and closing quotes) followed by a capital or a digit.

    A piece ending in a title or an initial (``Mr.``, ``S.``) is joined to the next one.
    """
    out: list[str] = []
    cuts = [0] + [m.end() for m in _SENTENCE_END.finditer(text)] + [len(text)]
    for piece in (text[a:b].strip() for a, b in zip(cuts, cuts[1:])):
        if not piece:
            continue
        if out and _ABBREVIATION.search(out[-1]):
            out[-1] = f"{out[-1]} {piece}"
        else:
            out.append(piece)
    return out


def _encodings(corpus: str, name: str) -> tuple[str, ...]:
    """The encodings a member may be in, after NLTK's declarations: brown, movie_reviews and abc's rural.txt are
    ASCII or UTF-8; inaugural, state_union, webtext and abc's science.txt are 8-bit (NLTK: Latin-1 or ISO-8859-2),
    read as UTF-8 where they are valid UTF-8 and as Latin-1 elsewhere."""
    eight_bit = corpus in ("inaugural", "state_union", "webtext") or (corpus == "abc" and "science" in name)
    return ("utf-8", "latin-1") if eight_bit else ("utf-8",)


def _strip_tags(line: str) -> str:
    """``The/at jury/nn`` -> ``The jury``."""
    return " ".join(t.rsplit("/", 1)[0] for t in line.split())


def _file_sentences(corpus: str, name: str, text: str) -> list[str]:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    if corpus == "brown":
        return [_strip_tags(line) for line in lines]
    if corpus in ("movie_reviews",) + _BLOCKED:
        return lines
    return [s for line in lines for s in split_sentences(line)]


def corpora_dir(root: str | os.PathLike | None = None) -> Path:
    """The folder holding the NLTK zips: ``root`` itself, else ``$ATTNCONV_DATA/nltk/corpora``, else the
    download folder of :func:`attnconv.data.nltk_zips.download_corpora` when it exists.

    Raises:
        FileNotFoundError: none of these exists.
    """
    if root is None:
        base = data_root()
        if base is None:
            folder = cached_corpora_dir()
            if not folder.is_dir():
                raise FileNotFoundError(f"no text corpora: ATTNCONV_DATA is not set and nothing was downloaded to "
                                        f"{folder}. Get the NLTK zips with {DOWNLOAD_HINT}")
            return folder
        folder = base / "nltk" / "corpora"
    else:
        folder = Path(root).expanduser()
    if not folder.is_dir():
        raise FileNotFoundError(f"no corpus folder at {folder}; it must hold the NLTK zips (<name>.zip). "
                                f"Get them with {DOWNLOAD_HINT}")
    return folder


def read_documents(corpus: str, root: str | os.PathLike | None = None) -> list[Document]:
    """All documents of one corpus zip, files in sorted order.

    Args:
        corpus: one of :data:`PRETRAIN_CORPORA`.
        root: folder with ``<corpus>.zip`` (default :func:`corpora_dir`).

    Raises:
        ValueError: unknown ``corpus``.
        FileNotFoundError: the zip is missing.
        RuntimeError: the zip is unreadable or holds no text, or a member is corrupt or not text in its corpus's
            encoding (the message names the member).
    """
    if corpus not in PRETRAIN_CORPORA:
        raise ValueError(f"corpus must be one of {PRETRAIN_CORPORA}, got {corpus!r}")
    archive = corpora_dir(root) / f"{corpus}.zip"
    if not archive.is_file():
        raise FileNotFoundError(f"{archive} is missing. Get it with {DOWNLOAD_HINT}")
    docs: list[Document] = []
    try:
        with zipfile.ZipFile(archive) as zf:
            names = sorted(n for n in zf.namelist() if not n.endswith("/") and Path(n).name not in _SKIP)
            for name in names:
                if corpus == "brown" and not re.fullmatch(r"c[a-r]\d\d", Path(name).name):
                    continue
                text = decode_text(read_member(zf, name, archive), name, archive, _encodings(corpus, name))
                sentences = _file_sentences(corpus, name, text)
                step = BLOCK_LINES if corpus in _BLOCKED else max(1, len(sentences))
                for block, start in enumerate(range(0, len(sentences), step)):
                    docs.append(Document(f"{name}#{block}", tuple(sentences[start:start + step])))
    except zipfile.BadZipFile as err:
        raise RuntimeError(f"{archive} is not a readable zip archive ({err}); replace it with a fresh copy") from err
    if not docs:
        raise RuntimeError(f"{archive} holds no text files of the {corpus} corpus")
    return docs


def _is_validation(doc_id: str, fraction: float) -> bool:
    return zlib.crc32(doc_id.encode("utf-8")) % 10_000 < round(fraction * 10_000)


def load_corpus(root: str | os.PathLike | None = None, corpora: tuple[str, ...] = PRETRAIN_CORPORA,
                validation_fraction: float = 0.02) -> Corpus:
    """The pretraining corpus, split deterministically into train and validation documents.

    Args:
        root: folder with the zips (default ``$ATTNCONV_DATA/nltk/corpora``).
        corpora: which corpora to read, a non-empty subset of :data:`PRETRAIN_CORPORA`.
        validation_fraction: in (0, 1): the expected share of documents held out.

    Raises:
        ValueError: bad ``corpora`` or ``validation_fraction``, or a split came out empty.
        FileNotFoundError: no data (the message says where to put it).
    """
    if not corpora or any(c not in PRETRAIN_CORPORA for c in corpora):
        raise ValueError(f"corpora must be a non-empty subset of {PRETRAIN_CORPORA}, got {corpora!r}")
    if not 0 < validation_fraction < 1:
        raise ValueError(f"validation_fraction must be in (0, 1), got {validation_fraction!r}")
    folder = corpora_dir(root)
    train: list[Document] = []
    val: list[Document] = []
    for name in corpora:
        for doc in read_documents(name, folder):
            (val if _is_validation(doc.id, validation_fraction) else train).append(doc)
    if not val and len(train) >= 2:  # a small copy (a mirror's sample): the document whose hash is lowest
        first = min(range(len(train)), key=lambda i: zlib.crc32(train[i].id.encode("utf-8")))
        val.append(train.pop(first))
    if not train or not val:
        raise ValueError(f"validation_fraction={validation_fraction} leaves an empty split for "
                         f"{sum(map(len, (train, val)))} documents; change it or add data")
    words = sum(d.num_words for d in train) + sum(d.num_words for d in val)
    description = (f"NLTK corpora {', '.join(corpora)}: {words:,} words in {len(train) + len(val):,} documents, "
                   f"{len(val):,} held out for validation")
    return Corpus(tuple(train), tuple(val), display_path(folder), description)
