"""Chapter 05's explorable, ``ch05-bias``: draw a relative-bias kernel b_{-k..k} over a real sentence.

The reader drags 2k+1 bars (k = 1 to 4). The page computes the banded attention matrix softmax_j(b_{j-i}) of one
head with windowed relative biases (:class:`attnconv.positional.RelativePositionBias`), which is a
lightweight convolution renormalised over the taps inside the sentence, and sets it beside the zero-padded
lightweight convolution (:class:`attnconv.lightconv.LightweightConv1d`, ``boundary="zeros"``) on two signals: a
sequence of ones, where the two differ only at the ends, and the words' lengths.

``compute(inputs)`` in the page:

- inputs: ``bias`` ``(2k+1,)`` the biases b_δ for δ = -k..k (key minus query), k from 1 to 4; ``features``
  ``(N, C)`` one row per token (the page's: C = 2, ones and the words' lengths over the longest), N at most
  ``MAX_TOKENS``.
- outputs: ``kernel`` ``(2k+1,)`` β = softmax(b); ``attention_taps`` and ``zero_taps`` ``(N, 2k+1)``, the two
  bands stored by taps (row i, tap t: the weight of key i + t - k, 0 outside the sentence): the attention
  matrix's and the zero-padded convolution's (rows near the ends sum to less than 1); ``renormalized`` and
  ``zero_padded`` ``(N, C)``, the two convolutions of ``features``; and, for N up to ``DENSE_LIMIT``, the same
  bands as ``(N, N)`` matrices (query rows, key columns), ``attention`` and ``zero_band``.

Every output costs O(N k C), so 10,000 tokens take milliseconds. Odd input (a bias that is not finite, an even
number of biases, ragged or non-finite features, more than ``MAX_TOKENS`` tokens) is refused with a message (a
``RangeError``). Each typed bias in the page refuses a value outside [-4, 4] (or empty, or not a number) with a
message next to it, and the page computes nothing, its numbers reading "not computed", until the field holds a
value it can take (or its bar, a k button or the flat kernel replaces it).

:func:`reference` computes the same outputs with the library.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np
import torch

from ..lightconv import LightweightConv1d
from ..positional.sequence import RelativePositionBias
from . import Explorable

__all__ = ["DENSE_LIMIT", "MAX_TOKENS", "bias_explorable", "reference", "sentence_features"]

MAX_TOKENS = 100_000  # the most tokens the page's compute takes
DENSE_LIMIT = 512  # up to this many tokens it also returns the (N, N) matrices


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
    """The outputs of the page's ``compute`` for the same ``inputs``, with ``attnconv`` in float64 (above
    ``DENSE_LIMIT`` tokens only the kernel and the two convolutions, which the library computes in O(N k C))."""
    bias = torch.tensor(inputs["bias"], dtype=torch.float64)
    x = torch.tensor(np.asarray(inputs["features"], dtype=np.float64))[None]  # (1, N, C)
    k, n, c = (len(bias) - 1) // 2, x.shape[1], x.shape[2]
    positional = RelativePositionBias(1, k, window=True).double()
    zeros = LightweightConv1d(c, 1, 2 * k + 1, boundary="zeros").double()
    renorm = LightweightConv1d(c, 1, 2 * k + 1, boundary="renormalize").double()
    with torch.no_grad():
        for module in (zeros, renorm):
            module.weight.copy_(bias[None])
        out = {"kernel": zeros.kernel[0].numpy(), "renormalized": renorm(x)[0].numpy(),
               "zero_padded": zeros(x)[0].numpy()}
        if n > DENSE_LIMIT:
            return out
        positional.weight.copy_(bias[None])
        attention = torch.softmax(positional((n,), None, None), dim=-1)[0]  # (N, N)
        band = LightweightConv1d(n, 1, 2 * k + 1, boundary="zeros").double()  # on the identity: its matrix
        band.weight.copy_(bias[None])
        zero_band = band(torch.eye(n, dtype=torch.float64)[None])[0]  # (N, N): row i, column j = β_{j-i}
    taps = lambda m: np.stack([np.array([m[i, i + t - k] if 0 <= i + t - k < n else 0.0  # noqa: E731
                                         for t in range(2 * k + 1)]) for i in range(n)])
    return {**out, "attention": attention.numpy(), "zero_band": zero_band.numpy(),
            "attention_taps": taps(attention.numpy()), "zero_taps": taps(zero_band.numpy())}
