"""Chapter 05's explorable, ``ch05-bias``: draw a relative-bias kernel b_{-k..k} over a real sentence.

The reader drags 2k+1 bars (k = 1 to 4). The page computes the banded attention matrix softmax_j(b_{j-i}) of one
head with windowed relative biases (:class:`attnconv.positional.RelativePositionBias`), which is a
lightweight convolution renormalised over the taps inside the sentence, and sets it beside the zero-padded
lightweight convolution (:class:`attnconv.lightconv.LightweightConv1d`, ``boundary="zeros"``) on two signals: a
sequence of ones, where the two differ only at the ends, and the words' lengths.

``compute(inputs)`` in the page:

- inputs: ``bias`` ``(2k+1,)`` the biases b_δ for δ = -k..k (key minus query); ``features`` ``(N, C)`` one row per
  token (the page's: C = 2, ones and the words' lengths over the longest).
- outputs: ``kernel`` ``(2k+1,)`` β = softmax(b); ``attention`` ``(N, N)`` the attention matrix (query rows, key
  columns); ``zero_band`` ``(N, N)`` the zero-padded convolution's matrix (rows near the ends sum to less than 1);
  ``renormalized`` and ``zero_padded`` ``(N, C)``, the two convolutions of ``features``.

:func:`reference` computes the same outputs with the library.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np
import torch

from ..lightconv import LightweightConv1d
from ..positional.sequence import RelativePositionBias
from . import Explorable

__all__ = ["bias_explorable", "reference", "sentence_features"]


def sentence_features(max_words: int = 20) -> tuple[list[str], np.ndarray, bool]:
    """The words of the book's example sentence (at most ``max_words``), their features ``(N, 2)`` (ones, and
    each word's length over the longest), and whether the sentence is real text."""
    from ..data.text import example_sentence

    sentence = example_sentence(index=0)
    words = list(sentence.words)[:max_words]
    lengths = np.array([len(w) for w in words], dtype=np.float64)
    return words, np.stack([np.ones(len(words)), lengths / lengths.max()], axis=1), bool(sentence.is_real)


def bias_explorable(bias: Sequence[float] = (-1.0, 1.0, 2.0, 1.0, -1.0), max_words: int = 20) -> Explorable:
    """The explorable of chapter 05 (see the module docstring), starting from the biases ``bias`` (2k+1 values,
    k from 1 to 4)."""
    bias = [float(b) for b in bias]
    if len(bias) % 2 == 0 or not 3 <= len(bias) <= 9 or not all(np.isfinite(bias)):
        raise ValueError(f"bias must hold 2k+1 finite values with k from 1 to 4, got {bias!r}")
    words, features, real = sentence_features(max_words)
    note = ("the first sentence of the Brown corpus (NLTK); computed in this page" if real else
            "the book's built-in sentence (no NLTK corpus was found when this page was built); computed in this page")
    return Explorable("ch05-bias", "explore_bias.js", {"words": words, "features": features.tolist(), "bias": bias},
                      "Draw a relative-bias kernel: the band, and the two convolutions it gives", note)


def reference(inputs: dict[str, Any]) -> dict[str, Any]:
    """The outputs of the page's ``compute`` for the same ``inputs``, with ``attnconv`` in float64."""
    bias = torch.tensor(inputs["bias"], dtype=torch.float64)
    x = torch.tensor(np.asarray(inputs["features"], dtype=np.float64))[None]  # (1, N, C)
    k, n, c = (len(bias) - 1) // 2, x.shape[1], x.shape[2]
    positional = RelativePositionBias(1, k, window=True).double()
    zeros = LightweightConv1d(c, 1, 2 * k + 1, boundary="zeros").double()
    renorm = LightweightConv1d(c, 1, 2 * k + 1, boundary="renormalize").double()
    with torch.no_grad():
        for module in (positional, zeros, renorm):
            module.weight.copy_(bias[None])
        attention = torch.softmax(positional((n,), None, None), dim=-1)[0]  # (N, N)
        band = LightweightConv1d(n, 1, 2 * k + 1, boundary="zeros").double()  # on the identity: its matrix
        band.weight.copy_(bias[None])
        zero_band = band(torch.eye(n, dtype=torch.float64)[None])[0]  # (N, N): row i, column j = β_{j-i}
        return {"kernel": zeros.kernel[0].numpy(), "attention": attention.numpy(), "zero_band": zero_band.numpy(),
                "renormalized": renorm(x)[0].numpy(), "zero_padded": zeros(x)[0].numpy()}
