"""Downstream classification tasks from the NLTK zips: MR (polarity), SUBJ (subjectivity) and RTE (entailment).

- **mr**: Pang & Lee's sentence polarity v1.0, ``sentence_polarity/rt-polarity.{neg,pos}``, 5,331 sentences
  each; labels 0 = negative, 1 = positive.
- **subj**: Pang & Lee's subjectivity v1.0, ``subjectivity/{plot,quote}.tok.gt9.5000``, 5,000 each; labels
  0 = objective (plot summaries), 1 = subjective (review snippets).
- **rte**: PASCAL RTE 1-3, ``rte/rte{1,2,3}_{dev,test}.xml``, pairs (text, hypothesis); labels 0 = no
  entailment, 1 = entailment. The split follows the releases: the three dev sets train, the three test sets
  evaluate (GLUE's RTE merges these and more, so its numbers are not comparable).

MR and SUBJ have no official split: a permutation seeded by ``seed`` puts 90% in train and 10% in test.
"""

from __future__ import annotations

import os
import xml.etree.ElementTree as ET
import zipfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .corpus import DOWNLOAD_HINT, corpora_dir
from .members import decode_text, read_member
from .paths import display_path

__all__ = ["TASKS", "TaskData", "TextExample", "load_task"]

#: The downstream tasks.
TASKS = ("mr", "subj", "rte")
_FILES = {
    "mr": ("sentence_polarity", {"rt-polarity.neg": 0, "rt-polarity.pos": 1}, ("negative", "positive")),
    "subj": ("subjectivity", {"plot.tok.gt9.5000": 0, "quote.tok.gt9.5000": 1}, ("objective", "subjective")),
}


@dataclass(frozen=True)
class TextExample:
    """A sentence (``text_b is None``) or a sentence pair, and its integer label."""

    text_a: str
    text_b: str | None
    label: int


@dataclass(frozen=True)
class TaskData:
    """A task's train and test examples.

    Attributes:
        name: one of :data:`TASKS`.
        train, test: the examples.
        label_names: ``label_names[y]`` names label y.
        description: where the data came from and how it was split, for provenance.
    """

    name: str
    train: tuple[TextExample, ...]
    test: tuple[TextExample, ...]
    label_names: tuple[str, ...]
    description: str

    @property
    def is_pair(self) -> bool:
        return self.train[0].text_b is not None


def _open(archive: Path) -> zipfile.ZipFile:
    if not archive.is_file():
        raise FileNotFoundError(f"{archive} is missing. Get it with {DOWNLOAD_HINT}")
    try:
        return zipfile.ZipFile(archive)
    except zipfile.BadZipFile as err:
        raise RuntimeError(f"{archive} is not a readable zip archive ({err}); replace it with a fresh copy") from err


def _member(zf: zipfile.ZipFile, name: str) -> bytes:
    matches = [n for n in zf.namelist() if Path(n).name == name]
    if not matches:
        raise RuntimeError(f"{zf.filename} has no file {name!r}; is it the NLTK release of this corpus?")
    return read_member(zf, matches[0])


def _sentence_task(name: str, folder: Path, seed: int, test_fraction: float) -> TaskData:
    corpus, files, label_names = _FILES[name]
    examples = []
    with _open(folder / f"{corpus}.zip") as zf:
        for file, label in files.items():
            member = _member(zf, file)  # the 2004/2005 releases are Latin-1
            text = decode_text(member, file, zf.filename, ("latin-1",))
            examples += [TextExample(line.strip(), None, label) for line in text.splitlines() if line.strip()]
    order = np.random.default_rng(seed).permutation(len(examples))
    n_test = int(round(test_fraction * len(examples)))
    test = tuple(examples[i] for i in np.sort(order[:n_test]))
    train = tuple(examples[i] for i in np.sort(order[n_test:]))
    return TaskData(name, train, test, label_names,
                    f"{corpus}.zip from {display_path(folder)}: {len(examples):,} sentences, seeded ({seed}) split "
                    f"{len(train):,} train / {len(test):,} test")


def _rte_pairs(raw: bytes, where: str) -> list[TextExample]:
    try:
        root = ET.fromstring(raw)
    except ET.ParseError as err:
        raise RuntimeError(f"{where} is not valid RTE XML ({err})") from err
    out = []
    for pair in root.iter("pair"):
        value = (pair.get("value") or pair.get("entailment") or "").upper()
        if value not in ("TRUE", "FALSE", "YES", "NO"):
            continue
        t, h = pair.findtext("t"), pair.findtext("h")
        if t and h:
            out.append(TextExample(" ".join(t.split()), " ".join(h.split()), int(value in ("TRUE", "YES"))))
    return out


def _rte(folder: Path) -> TaskData:
    train, test = [], []
    with _open(folder / "rte.zip") as zf:
        for release in (1, 2, 3):
            for split, target in (("dev", train), ("test", test)):
                name = f"rte{release}_{split}.xml"
                target += _rte_pairs(_member(zf, name), name)
    if not train or not test:
        raise RuntimeError(f"rte.zip in {folder} holds no labelled pairs in its dev or test files")
    return TaskData("rte", tuple(train), tuple(test), ("not_entailment", "entailment"),
                    f"rte.zip from {display_path(folder)}: RTE 1-3 dev sets ({len(train):,} pairs) train, test sets "
                    f"({len(test):,} pairs) evaluate")


def load_task(name: str, root: str | os.PathLike | None = None, seed: int = 0, test_fraction: float = 0.1) -> TaskData:
    """Load a downstream task.

    Args:
        name: one of :data:`TASKS`.
        root: folder with the zips (default ``$ATTNCONV_DATA/nltk/corpora``).
        seed: seeds the MR and SUBJ split (RTE's split is fixed by the releases).
        test_fraction: share of MR and SUBJ held out, in (0, 1).

    Raises:
        ValueError: unknown ``name`` or bad ``test_fraction``.
        FileNotFoundError: no data.
    """
    if name not in TASKS:
        raise ValueError(f"name must be one of {TASKS}, got {name!r}")
    if not 0 < test_fraction < 1:
        raise ValueError(f"test_fraction must be in (0, 1), got {test_fraction!r}")
    folder = corpora_dir(root)
    return _rte(folder) if name == "rte" else _sentence_task(name, folder, seed, test_fraction)
