"""A bag-of-words logistic regression on the text tasks: where the tiny BERTs of chapter 07 stand.

Each example becomes the set of its lower-cased words (for a sentence pair, the words of each sentence in their
own namespace, plus the share of the hypothesis's words found in the premise). A linear layer on those binary
features is trained to convergence with L-BFGS and an L2 penalty λ, chosen from a few values on a 10% slice of
the training examples and then refitted on all of them. The splits are those of fine-tuning
(``attnconv.data.tasks.load_task`` with the same split seed, and the same subset of ``train_examples``).

    python -m attnconv.train.bow --out results/bow-baseline
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from pathlib import Path
from typing import Any, Sequence

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor, nn

from ..data.tasks import TASKS, TextExample, load_task

__all__ = ["BagOfWords", "BagOfWordsLinear", "bow_baseline", "fit_logistic", "words"]

_WORD = re.compile(r"[a-z0-9']+|[^\sa-z0-9']")
PENALTIES = (1e-4, 1e-3, 1e-2, 1e-1)


def words(text: str) -> list[str]:
    """Lower-cased word and punctuation tokens."""
    return _WORD.findall(text.lower())


class BagOfWords:
    """Binary word features over the vocabulary of the training examples (words seen at least ``min_count`` times).

    ``encode`` returns ``(ids, offsets, extra)`` for ``nn.EmbeddingBag``: the feature ids of all examples
    concatenated, where each example starts, and ``(N, 1)`` overlap shares for pairs (``(N, 0)`` otherwise).
    """

    def __init__(self, examples: Sequence[TextExample], min_count: int = 1) -> None:
        counts: dict[str, int] = {}
        for ex in examples:
            for feature in self.features(ex):
                counts[feature] = counts.get(feature, 0) + 1
        self.vocab = {f: i for i, f in enumerate(sorted(f for f, c in counts.items() if c >= min_count))}
        self.pairs = examples[0].text_b is not None

    @staticmethod
    def features(ex: TextExample) -> set[str]:
        a = {f"a:{w}" for w in words(ex.text_a)}
        return a if ex.text_b is None else a | {f"b:{w}" for w in words(ex.text_b)}

    def encode(self, examples: Sequence[TextExample]) -> tuple[Tensor, Tensor, Tensor]:
        ids, offsets, extra = [], [], []
        for ex in examples:
            offsets.append(len(ids))
            ids.extend(sorted(self.vocab[f] for f in self.features(ex) if f in self.vocab))
            if self.pairs:
                hyp, premise = set(words(ex.text_b)), set(words(ex.text_a))
                extra.append([len(hyp & premise) / max(1, len(hyp))])
        extra_t = torch.tensor(extra, dtype=torch.float32) if self.pairs else torch.zeros(len(examples), 0)
        return torch.tensor(ids, dtype=torch.long), torch.tensor(offsets, dtype=torch.long), extra_t


class BagOfWordsLinear(nn.Module):
    """Logits ``(N, classes)`` = Σ_{words} W_word + V · extra + b, from the ``BagOfWords.encode`` triple."""

    def __init__(self, vocab: int, extra: int, classes: int) -> None:
        super().__init__()
        self.words = nn.EmbeddingBag(vocab, classes, mode="sum")
        nn.init.zeros_(self.words.weight)
        self.extra = nn.Parameter(torch.zeros(extra, classes))
        self.bias = nn.Parameter(torch.zeros(classes))

    def forward(self, ids: Tensor, offsets: Tensor, extra: Tensor) -> Tensor:
        return self.words(ids, offsets) + extra @ self.extra + self.bias


def fit_logistic(data: tuple[Tensor, Tensor, Tensor], labels: Tensor, vocab: int, classes: int,
                 penalty: float, iterations: int = 200) -> BagOfWordsLinear:
    """Minimise mean cross-entropy + λ/2 ‖W‖² (no penalty on the bias) with full-batch L-BFGS."""
    if not penalty >= 0:
        raise ValueError(f"penalty must be >= 0, got {penalty!r}")
    torch.manual_seed(0)
    model = BagOfWordsLinear(vocab, data[2].shape[1], classes)
    opt = torch.optim.LBFGS(model.parameters(), lr=1.0, max_iter=iterations, history_size=20,
                            line_search_fn="strong_wolfe", tolerance_grad=1e-6, tolerance_change=1e-9)

    def closure() -> Tensor:
        opt.zero_grad()
        loss = F.cross_entropy(model(*data), labels)
        loss = loss + 0.5 * penalty * (model.words.weight.pow(2).sum() + model.extra.pow(2).sum())
        loss.backward()
        return loss

    opt.step(closure)
    return model


def _accuracy(model: BagOfWordsLinear, data: tuple[Tensor, Tensor, Tensor], labels: Tensor) -> float:
    with torch.no_grad():
        return float((model(*data).argmax(1) == labels).float().mean())


def _subset(examples: Sequence[TextExample], indices: np.ndarray) -> list[TextExample]:
    return [examples[i] for i in indices]


def bow_baseline(train: Sequence[TextExample], test: Sequence[TextExample], classes: int,
                 penalties: Sequence[float] = PENALTIES, seed: int = 0) -> dict[str, Any]:
    """Choose λ on a seeded 10% slice of ``train``, refit on all of ``train``, score on ``test``.

    Returns ``{"test_acc", "train_acc", "penalty", "validation_acc" (per λ), "vocab", "train_examples",
    "test_examples"}``.
    """
    if len(train) < 10 or not test:
        raise ValueError(f"need at least 10 training examples and one test example, got {len(train)} and {len(test)}")
    order = np.random.default_rng(seed).permutation(len(train))
    cut = len(train) // 10
    held, rest = _subset(train, np.sort(order[:cut])), _subset(train, np.sort(order[cut:]))
    scores = {}
    for penalty in penalties:
        bow = BagOfWords(rest)
        model = fit_logistic(bow.encode(rest), torch.tensor([e.label for e in rest]), len(bow.vocab), classes, penalty)
        scores[penalty] = _accuracy(model, bow.encode(held), torch.tensor([e.label for e in held]))
    best = max(penalties, key=lambda p: (scores[p], p))  # ties: the stronger penalty
    bow = BagOfWords(train)
    train_y, test_y = torch.tensor([e.label for e in train]), torch.tensor([e.label for e in test])
    model = fit_logistic(bow.encode(train), train_y, len(bow.vocab), classes, best)
    return {"test_acc": _accuracy(model, bow.encode(test), test_y), "train_acc": _accuracy(model, bow.encode(train), train_y),
            "penalty": best, "validation_acc": {str(p): s for p, s in scores.items()}, "vocab": len(bow.vocab),
            "train_examples": len(train), "test_examples": len(test)}


def run(out_dir: str | None, root: str | None = None, train_examples: int = 2000, split_seed: int = 0,
        tasks: Sequence[str] = TASKS) -> dict[str, Any]:
    """The baseline on every task: on the fine-tuning subset of ``train_examples`` and on the whole training split."""
    from .provenance import device_description, git_commit
    start, results, sources = time.perf_counter(), {}, {}
    for name in tasks:
        task = load_task(name, root, seed=split_seed)
        train = list(task.train)
        keep = np.sort(np.random.default_rng(split_seed).permutation(len(train))[:train_examples])
        subset = _subset(train, keep) if train_examples < len(train) else train
        results[name] = {"subset": bow_baseline(subset, task.test, len(task.label_names)),
                         "full": bow_baseline(train, task.test, len(task.label_names))}
        sources[name] = task.description
    if out_dir is not None:
        out = Path(out_dir)
        out.mkdir(parents=True, exist_ok=True)
        (out / "final.json").write_text(json.dumps(results, indent=2) + "\n")
        prov = {"device": device_description(torch.device("cpu")), "torch": torch.__version__, **git_commit(),
                "data_source": sources, "train_examples": train_examples, "split_seed": split_seed,
                "wall_time_s": time.perf_counter() - start, "date": time.strftime("%Y-%m-%d %H:%M:%S %Z")}
        (out / "provenance.json").write_text(json.dumps(prov, indent=2) + "\n")
    return results


def _at_least_ten(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 10:
        raise argparse.ArgumentTypeError(f"must be an integer of at least 10, got {text!r}")
    return value


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m attnconv.train.bow", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", required=True, help="folder for final.json and provenance.json")
    parser.add_argument("--root", default=None, help="folder with the NLTK zips (default $ATTNCONV_DATA/nltk/corpora)")
    parser.add_argument("--train-examples", type=_at_least_ten, default=2000,
                        help="the fine-tuning subset size (10 or more: a tenth of it chooses the penalty)")
    args = parser.parse_args(argv)
    try:
        results = run(args.out, args.root, args.train_examples)
    except FileNotFoundError as err:  # no corpus folder, or a zip missing from it: the user's data, not a bug
        print(f"{parser.prog}: --root {args.root or '(default)'}: {' '.join(str(err).split())}", file=sys.stderr)
        return 2
    print(json.dumps({t: {k: round(v["test_acc"], 4) for k, v in r.items()} for t, r in results.items()}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
