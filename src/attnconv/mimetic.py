"""Mimetic initialisation of an attention layer (Trockman & Kolter, ICML 2023).

Trained Vision Transformers have query and key weights whose product is close to a positive multiple of the
identity, and value and output weights whose product is close to a negative one. Mimetic initialisation starts a
layer there. In the paper's notation (row vectors, ``q = x W_q``), for every head h and with d = C channels,

    W_q^(h) W_k^(h)T  ≈  α1 Z1^(h) + β1 I          (d x d, one Z1^(h) per head)
    W_v W_proj        ≈  α2 Z2 - β2 I              (d x d, all heads together)

where every Z has independent N(0, 1/d) entries. Each target T is factored by its singular value decomposition
T = U S V^T: the left factor is U S^½ and the right one S^½ V^T, cut to the rank the factors can hold.

**Exact or approximate.** A head's W_q^(h) W_k^(h)T has rank at most D_h. With D_h ≥ d it equals its target;
with D_h < d (a ViT's usual case, and the book's: d = 64, D_h = 32) it is the target's best rank-D_h approximation
(Eckart-Young: the D_h largest singular values are kept). This is the paper's "≈". The same holds for
W_v W_proj with N_h D_h in place of D_h; when N_h D_h > d the d directions are spread over all N_h D_h value
channels by a random matrix with orthonormal rows R (d x N_h D_h), W_v = U S^½ R and W_proj = R^T S^½ V^T, so that
every head receives values (the paper has N_h D_h = d and no R).

In this library's layer the paper's matrices are transposes of ``nn.Linear`` weights: W_q^(h) is
``q_proj.weight[h D_h:(h+1) D_h].T`` (C x D_h), W_k^(h) likewise, W_v is ``v_proj.weight.T`` (C x N_h D_h) and
W_proj is ``out_proj.weight.T`` (N_h D_h x C). The biases are left as they are.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import torch
from torch import Tensor, nn

from ._checks import real_number
from .attention import MultiHeadSelfAttention

__all__ = ["MimeticTargets", "mimetic_init_", "query_key_products", "value_output_product"]


class MimeticTargets(NamedTuple):
    """The matrices a mimetic initialisation aimed at, in float64 on the CPU."""

    query_key: Tensor
    """``(N_h, C, C)``, α1 Z1^(h) + β1 I for every head h."""
    value_output: Tensor
    """``(C, C)``, α2 Z2 - β2 I."""


def query_key_products(attention: MultiHeadSelfAttention) -> Tensor:
    """W_q^(h) W_k^(h)T of every head, ``(N_h, C, C)``: the bilinear form of the content logits before 1/sqrt(D_h)."""
    d_h, n_h, c = attention.head_dim, attention.num_heads, attention.embed_dim
    q = attention.q_proj.weight.detach().view(n_h, d_h, c)  # (N_h, D_h, C): W_q^(h)T
    k = attention.k_proj.weight.detach().view(n_h, d_h, c)
    return q.transpose(1, 2) @ k


def value_output_product(attention: MultiHeadSelfAttention) -> Tensor:
    """W_v W_proj, ``(C, D_out)``: the map a token's features go through when every head attends only to it."""
    return attention.v_proj.weight.detach().T @ attention.out_proj.weight.detach().T


def _factors(target: Tensor, rank: int, width: int, generator: torch.Generator | None) -> tuple[Tensor, Tensor]:
    """Left ``(C, width)`` and right ``(width, C)`` factors whose product is the best rank-``rank`` approximation of
    ``target``; when ``width`` exceeds C, a random matrix with orthonormal rows spreads them over ``width``."""
    u, s, vh = torch.linalg.svd(target)
    root = s[:rank].sqrt()
    left, right = u[:, :rank] * root, root[:, None] * vh[:rank]  # (C, r), (r, C)
    if width > rank:
        spread = torch.randn(width, rank, generator=generator, dtype=torch.float64)
        rows = torch.linalg.qr(spread).Q.T  # (r, width), orthonormal rows
        left, right = left @ rows, rows.T @ right
    return left, right


@torch.no_grad()
def mimetic_init_(attention: MultiHeadSelfAttention, alpha1: float = 0.7, beta1: float = 0.7,
                  alpha2: float = 0.4, beta2: float = 0.4,
                  generator: torch.Generator | None = None) -> MimeticTargets:
    """Set a layer's query, key, value and output weights in place so that W_q^(h) W_k^(h)T ≈ α1 Z1^(h) + β1 I
    for every head and W_v W_proj ≈ α2 Z2 - β2 I (see the module's docstring for the shapes and when ≈ is =).

    Args:
        attention: a :class:`~attnconv.attention.MultiHeadSelfAttention` (or a subclass) with the content term, a
            value projection per head (``shared_values=False``), ``out_dim == embed_dim`` and ``nn.Linear``
            projections.
        alpha1: α1 ≥ 0, the weight of the random part of W_q W_k^T.
        beta1: β1 ≥ 0, the weight of its identity.
        alpha2: α2 ≥ 0, the weight of the random part of W_v W_proj.
        beta2: β2 ≥ 0, the weight of its negative identity.
        generator: the source of Z1, Z2 (and of the spreading matrix); the global one if ``None``.

    Returns:
        The targets, a :class:`MimeticTargets`.

    Raises:
        TypeError: ``attention`` is not a multi-head self-attention layer with ``nn.Linear`` projections, a weight is
            not a real number, or ``generator`` is not a ``torch.Generator``.
        ValueError: the layer has no content term, shares one value projection between its heads, has
            ``out_dim != embed_dim``, or a weight is negative, NaN or infinite.
    """
    if not isinstance(attention, MultiHeadSelfAttention):
        raise TypeError(f"attention must be a MultiHeadSelfAttention, got {type(attention).__name__}")
    if attention.q_proj is None or attention.k_proj is None or not attention.content:
        raise ValueError("attention must have the content term (content=True): mimetic initialisation sets the "
                         "query-key product W_q W_k^T, which a position-only layer does not have")
    if attention.v_proj is None or attention.shared_values:
        raise ValueError("attention must have a value projection per head (shared_values=False, value_proj=True): "
                         "mimetic initialisation sets W_v W_proj over all heads together")
    if attention.out_dim != attention.embed_dim:
        raise ValueError(f"attention must have out_dim == embed_dim for W_v W_proj to be close to -I, got "
                         f"out_dim={attention.out_dim}, embed_dim={attention.embed_dim}")
    for name in ("q_proj", "k_proj", "v_proj", "out_proj"):
        if type(getattr(attention, name)) is not nn.Linear:
            raise TypeError(f"attention.{name} must be an nn.Linear, got {type(getattr(attention, name)).__name__}")
    weights = {}
    for name, value in (("alpha1", alpha1), ("beta1", beta1), ("alpha2", alpha2), ("beta2", beta2)):
        weights[name] = real_number(name, value)
        if weights[name] < 0:
            raise ValueError(f"{name} must be >= 0, got {value!r}")
    if generator is not None and not isinstance(generator, torch.Generator):
        raise TypeError(f"generator must be a torch.Generator or None, got {type(generator).__name__}")

    c, d_h, n_h = attention.embed_dim, attention.head_dim, attention.num_heads
    eye = torch.eye(c, dtype=torch.float64)
    scale = 1 / math.sqrt(c)  # Z has N(0, 1/d) entries
    query_key = []
    for h in range(n_h):
        target = weights["alpha1"] * scale * torch.randn(c, c, generator=generator, dtype=torch.float64) \
            + weights["beta1"] * eye
        w_q, w_k_t = _factors(target, min(d_h, c), d_h, generator)  # (C, D_h), (D_h, C)
        rows = slice(h * d_h, (h + 1) * d_h)
        attention.q_proj.weight[rows] = w_q.T.to(attention.q_proj.weight)
        attention.k_proj.weight[rows] = w_k_t.to(attention.k_proj.weight)
        query_key.append(target)
    inner = n_h * d_h
    value_output = weights["alpha2"] * scale * torch.randn(c, c, generator=generator, dtype=torch.float64) \
        - weights["beta2"] * eye
    w_v, w_proj = _factors(value_output, min(inner, c), inner, generator)  # (C, N_h D_h), (N_h D_h, C)
    attention.v_proj.weight.copy_(w_v.T.to(attention.v_proj.weight))
    attention.out_proj.weight.copy_(w_proj.T.to(attention.out_proj.weight))
    return MimeticTargets(torch.stack(query_key), value_output)
