"""Example sentences for the language chapters.

Local NLTK corpora are read from ``$ATTNCONV_DATA/nltk/corpora/<corpus>.zip``. The Brown corpus stores one
sentence per line as ``word/tag`` tokens (``The/at jury/nn said/vbd ...``); the tags are dropped. Without a
local copy, a fixed built-in sentence is returned, and its ``source`` says so.
"""

from __future__ import annotations

import zipfile
from dataclasses import dataclass

from .._checks import int_at_least
from .nltk_zips import cached_corpora_dir
from .paths import data_root

__all__ = ["ExampleSentence", "example_sentence", "BUILTIN_SENTENCE"]

#: The sentence used when no corpus is found (the book's own words, so that the chapter always has text).
BUILTIN_SENTENCE = ("a convolution reads a fixed window of neighbours around every word , while attention "
                    "decides from the words themselves where to look .")


@dataclass(frozen=True)
class ExampleSentence:
    """One sentence for a chapter, with where it came from.

    Attributes:
        words: the tokens, in order.
        source: a sentence saying which data this is, for the chapter to print.
        is_real: ``True`` when the words come from a corpus on disk.
    """

    words: tuple[str, ...]
    source: str
    is_real: bool


def _is_text(name: str) -> bool:
    """Whether an archive member holds corpus text: not a folder, and not documentation (README, CONTENTS,
    ``cats.txt``)."""
    base = name.rsplit("/", 1)[-1]
    return bool(base) and not base.isupper() and not base.upper().startswith("README") and base != "cats.txt"


def _words(line: str) -> list[str]:
    """The words of one corpus line, without part-of-speech tags (``word/tag`` -> ``word``)."""
    tokens = line.split()
    if tokens and all("/" in t for t in tokens):
        tokens = [t.rsplit("/", 1)[0] for t in tokens]
    return tokens


def example_sentence(index: int = 0, corpus: str = "brown", min_words: int = 8,
                     max_words: int = 40) -> ExampleSentence:
    """Sentence number ``index`` (counting those of ``min_words`` to ``max_words`` words) of a local corpus.

    Lines are read from the archive's text files in sorted order (documentation such as README and CONTENTS is
    skipped), so ``index`` is stable across machines. Without
    the corpus zip (in ``$ATTNCONV_DATA/nltk/corpora``, or in the cache when ``ATTNCONV_DATA`` is unset, where
    ``prepare_data("nltk")`` puts it), returns :data:`BUILTIN_SENTENCE`.

    Raises:
        ValueError: ``index`` is negative or beyond the sentences of the corpus, or the word limits are empty.
        RuntimeError: the zip exists but cannot be read.
    """
    int_at_least("index", index, 0)
    if not 1 <= min_words <= max_words:
        raise ValueError(f"min_words and max_words must satisfy 1 ≤ min_words ≤ max_words, got {min_words}, {max_words}")
    root = data_root()
    archive = (cached_corpora_dir() if root is None else root / "nltk" / "corpora") / f"{corpus}.zip"
    if not archive.is_file():
        return ExampleSentence(tuple(BUILTIN_SENTENCE.split()), f"the book's built-in sentence (no {corpus} corpus "
                               "here: python -m attnconv.data.nltk_zips fetches it)", False)
    count = 0
    try:
        with zipfile.ZipFile(archive) as zf:
            for name in sorted(filter(_is_text, zf.namelist())):
                for line in zf.read(name).decode("utf-8", errors="replace").splitlines():
                    words = _words(line)
                    if min_words <= len(words) <= max_words:
                        if count == index:
                            return ExampleSentence(tuple(words), f"{corpus} corpus, sentence {index} (from {name} "
                                                   f"in {archive.name})", True)
                        count += 1
    except zipfile.BadZipFile as err:
        raise RuntimeError(f"{archive} is not a readable zip archive ({err}); replace it with a fresh copy") from err
    raise ValueError(f"index must be below the {count} sentences of {min_words}-{max_words} words in {archive.name}, "
                     f"got {index}")
