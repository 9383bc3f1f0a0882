"""Small generated copies of the NLTK text zips, in their real formats, for tests and offline smoke runs.

:func:`write_sample_corpora` writes ``brown.zip`` (tagged ``word/tag`` lines), ``abc.zip``, ``movie_reviews.zip``,
``state_union.zip``, ``webtext.zip``, ``inaugural.zip``, ``sentence_polarity.zip`` (Latin-1 lines),
``subjectivity.zip`` and ``rte.zip`` (XML pairs) with sentences from a fixed toy grammar. The text means
nothing; it only lets every reader and the training loops run without the real data.
"""

from __future__ import annotations

import os
import zipfile
from pathlib import Path

import numpy as np

from .._checks import int_at_least

__all__ = ["write_sample_corpora"]

_SUBJECTS = ("the farmer", "a scientist", "the jury", "our president", "the film", "a small dog", "the council")
_VERBS = ("said", "found", "wanted", "saw", "built", "liked", "questioned")
_OBJECTS = ("the new bridge", "a strange result", "the election", "every answer", "the old house", "rain")
_ENDINGS = ("yesterday", "in the morning", "after the storm", "without doubt", "at last")
_GOOD = ("a wonderful , moving film", "brilliant and funny", "the best acting of the year")
_BAD = ("a dull , tedious mess", "boring and silly", "the worst script of the year")


def _sentence(rng: np.random.Generator) -> str:
    parts = [_SUBJECTS, _VERBS, _OBJECTS, _ENDINGS]
    return " ".join(p[int(rng.integers(len(p)))] for p in parts) + " ."


def write_sample_corpora(folder: str | os.PathLike, sentences_per_file: int = 30, seed: int = 0) -> Path:
    """Write the nine sample zips into ``folder`` (created if needed) and return it.

    Args:
        folder: destination; use it as ``root`` of :func:`attnconv.data.corpus.load_corpus` and
            :func:`attnconv.data.tasks.load_task`.
        sentences_per_file: sentences in each text file (at least 2).
        seed: seeds the generated text.
    """
    int_at_least("sentences_per_file", sentences_per_file, 2)
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)

    def lines(n: int = sentences_per_file) -> list[str]:
        return [_sentence(rng) for _ in range(n)]

    def tagged(line: str) -> str:
        return " ".join(f"{w}/{'.' if w == '.' else 'nn'}" for w in line.split())

    files: dict[str, dict[str, bytes]] = {
        "brown": {f"brown/c{g}0{i}": ("\n\n".join("\t" + tagged(s) for s in lines()) + "\n").encode()
                  for g in "ab" for i in range(1, 4)} | {"brown/README": b"sample", "brown/cats.txt": b"ca01 news"},
        "abc": {"abc/rural.txt": "\n".join(lines(3 * sentences_per_file)).encode(), "abc/README": b"sample"},
        "movie_reviews": {f"movie_reviews/{c}/cv00{i}.txt": "\n".join(lines()).encode()
                          for c in ("neg", "pos") for i in range(3)},
        "state_union": {f"state_union/19{50 + i}-Sample.txt": ("Mr. Speaker:\n" + " ".join(s.capitalize() for s in lines())).encode()
                        for i in range(4)},
        "webtext": {"webtext/overheard.txt": "\n".join(lines(2 * sentences_per_file)).encode()},
        "inaugural": {f"inaugural/18{10 + i}-Sample.txt": " ".join(s.capitalize() for s in lines()).encode()
                      for i in range(3)},
        "sentence_polarity": {
            "sentence_polarity/rt-polarity.pos": "\n".join(f"{_GOOD[i % 3]} , café {i} ." for i in range(40)).encode("latin-1"),
            "sentence_polarity/rt-polarity.neg": "\n".join(f"{_BAD[i % 3]} , {i} ." for i in range(40)).encode("latin-1")},
        "subjectivity": {"subjectivity/plot.tok.gt9.5000": "\n".join(lines(40)).encode(),
                         "subjectivity/quote.tok.gt9.5000": "\n".join(f"{_GOOD[i % 3]} , i think {i} ." for i in range(40)).encode()},
        "rte": {f"rte/rte{r}_{split}.xml": _rte_xml(rng, r, 12) for r in (1, 2, 3) for split in ("dev", "test")},
    }
    for name, members in files.items():
        with zipfile.ZipFile(folder / f"{name}.zip", "w") as zf:
            for member, data in members.items():
                zf.writestr(member, data)
    return folder


def _rte_xml(rng: np.random.Generator, release: int, pairs: int) -> bytes:
    body = []
    for i in range(pairs):
        t = _sentence(rng)
        value = "TRUE" if i % 2 == 0 else "FALSE"
        h = t.split(" ")[0:4] if value == "TRUE" else _sentence(rng).split(" ")[0:4]
        body.append(f'<pair id="{i}" value="{value}" task="IR">\n\t<t>{t}</t>\n\t<h>{" ".join(h)}</h>\n</pair>')
    return (f'<?xml version="1.0" encoding="UTF-8"?>\n<entailment-corpus challenge="{release}">\n'
            + "\n".join(body) + "\n</entailment-corpus>\n").encode()
