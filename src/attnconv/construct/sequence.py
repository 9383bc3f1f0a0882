"""Exact converters between 1-D convolutions and attention with relative positions (Chang et al. 2021).

- :func:`lightconv_to_attention`: a lightweight convolution as an attention layer with a windowed relative bias,
  no content term, identity value and output projections.
- :func:`attention_to_lightconv`: a position-only attention layer with content-independent terms (relative
  bias, T5 buckets, ALiBi) as value projection -> boundary-renormalised lightweight convolution -> output
  projection.
- :func:`attention_to_dynamic_conv`: a position-only layer with a query-dependent term (Shaw et al.), plus an
  optional fixed bias, as a dynamic lightweight convolution with W^D = W_qry [a_{-k} ... a_k] / sqrt(D_h).
- :func:`dynamic_conv_to_attention`: the converse, which needs D_h ≥ 2k+1.

Attention renormalises its softmax over the keys that exist, so the convolutions produced here use
``boundary="renormalize"``; a zero-padded convolution agrees with attention only at the interior positions
k ≤ i < N - k. A causal convolution (taps on δ = -(K-1)..0) is causal attention: the windowed bias or relative
keys with -inf on every future key. A bias on the convolution's output is the output projection's bias. A raw,
signed kernel (``weight_softmax=False``) has no softmax counterpart, since attention weights are positive and sum
to one; :meth:`~attnconv.lightconv.LightweightConv1d.to_conv1d` and :func:`~attnconv.construct.image.conv_to_mhsa`
reach it instead, with one hard head per tap (Theorem 1). A clipped kernel (Shaw et al., T5, ALiBi) has constant or decaying tails over the whole
sequence, so its convolution has 2 ``max_length`` - 1 taps.
"""

from __future__ import annotations

import math

import torch
from torch import nn

from .._checks import finite_parameters, int_at_least
from ..attention import MultiHeadSelfAttention
from ..composite import RelativeLogitSum
from ..lightconv import DynamicConv1d, LightweightConv1d, ProjectedConv1d
from ..positional.sequence import QueryRelativeLogits, RelativeLogits1d, RelativePositionBias, StaticRelativeLogits

__all__ = ["lightconv_to_attention", "attention_to_lightconv", "attention_to_dynamic_conv",
           "dynamic_conv_to_attention"]


def _identity_(linear: nn.Linear) -> None:
    """Set a square ``linear`` to the identity map with a zero bias."""
    with torch.no_grad():
        linear.weight.copy_(torch.eye(linear.in_features, dtype=linear.weight.dtype, device=linear.weight.device))
        if linear.bias is not None:
            linear.bias.zero_()


def lightconv_to_attention(conv: LightweightConv1d, interior_only: bool = False) -> MultiHeadSelfAttention:
    """An attention layer with the outputs of a lightweight convolution.

    Head h gets the bias b^(h)_δ = w^(h)_δ (the conv's kernel logits) inside the window abs(δ) ≤ k and -inf outside,
    no content term, and identity value and output projections (the conv's bias becomes b_out). Its
    probabilities softmax(b) are the kernel β = softmax(w), renormalised over the keys that exist.

    A causal conv (K taps on δ = -(K-1)..0) becomes a causal windowed bias: k = K - 1, b_δ = w_δ for δ ≤ 0 and
    -inf for δ > 0 (Proposition "causal lightweight convolution is causal relative-bias attention", chapter 05).

    Args:
        conv: the convolution. With ``boundary="renormalize"`` the layer equals it at every position.
        interior_only: accept a zero-padded conv (``boundary="zeros"``); the layer then equals it only at
            positions k ≤ i < N - k (i ≥ K - 1 for a causal conv), where no tap falls off the sequence.

    Raises:
        ValueError: ``conv`` is not a ``LightweightConv1d``, is zero-padded and ``interior_only`` is False, or has
            a raw kernel (``weight_softmax=False``), which no softmax attention computes.
    """
    if not isinstance(conv, LightweightConv1d):
        raise ValueError(f"conv must be a LightweightConv1d, got {type(conv).__name__}")
    if not conv.weight_softmax:
        raise ValueError("conv has a raw, signed kernel (weight_softmax=False): attention weights are a softmax, "
                         "positive and summing to one; use conv_to_mhsa(conv.to_conv1d()) instead (Theorem 1)")
    if conv.boundary == "zeros" and not interior_only:
        raise ValueError("conv is zero-padded (boundary='zeros'): attention renormalises at the sequence edges, so "
                         "the two agree only on interior positions; pass interior_only=True to accept that, or "
                         "use boundary='renormalize'")
    finite_parameters("conv", conv)
    positional = RelativePositionBias(conv.num_heads, conv.max_distance, window=True, causal=conv.causal)
    layer = MultiHeadSelfAttention(conv.embed_dim, conv.num_heads, positional=positional, content=False,
                                   dropout=conv.weight_dropout)
    layer = layer.to(dtype=conv.weight.dtype, device=conv.weight.device)
    with torch.no_grad():
        positional.weight.zero_()
        positional.weight[:, :conv.kernel_size] = conv.weight  # tap t is δ = t - padding_l in both
        _identity_(layer.v_proj)
        _identity_(layer.out_proj)
        if conv.bias is not None:
            layer.out_proj.bias.copy_(conv.bias)
    return layer


def _position_only_terms(module: MultiHeadSelfAttention) -> list[RelativeLogits1d]:
    if not isinstance(module, MultiHeadSelfAttention):
        raise ValueError(f"module must be a MultiHeadSelfAttention, got {type(module).__name__}")
    if module.content:
        raise ValueError("module has a content term: only position-only attention (content=False) is a convolution")
    positional = module.positional
    terms = list(positional.terms) if isinstance(positional, RelativeLogitSum) else [positional]
    if not all(isinstance(t, RelativeLogits1d) for t in terms):
        raise ValueError("module's positional terms must be 1-D relative terms from attnconv.positional.sequence")
    return terms


def _kernel_radius(terms: list[RelativeLogits1d], max_length: int | None) -> int:
    """The kernel radius r: the smallest window if some term is windowed, else max_length - 1."""
    windows = [t.max_distance for t in terms if t.window]
    if windows:
        return min(windows)
    if max_length is None:
        raise ValueError("the kernel has clipped or unbounded tails over the whole sequence: give max_length, "
                         "the longest sequence the convolution must reproduce")
    return int_at_least("max_length", max_length, 1) - 1


def _value_projection(module: MultiHeadSelfAttention) -> nn.Linear:
    """A copy of the values' ``nn.Linear``, widened to one block per head when the layer shares its values."""
    v = module.v_proj
    if not isinstance(v, nn.Linear):
        raise ValueError(f"module's value projection must be nn.Linear, got {type(v).__name__}")
    heads = module.num_heads if module.shared_values else 1
    out = nn.Linear(v.in_features, v.out_features * heads, bias=v.bias is not None)
    out = out.to(dtype=v.weight.dtype, device=v.weight.device)
    with torch.no_grad():
        out.weight.copy_(v.weight.repeat(heads, 1))
        if v.bias is not None:
            out.bias.copy_(v.bias.repeat(heads))
    return out


def _output_projection(module: MultiHeadSelfAttention) -> nn.Linear:
    out = nn.Linear(module.out_proj.in_features, module.out_proj.out_features, bias=module.out_proj.bias is not None)
    out = out.to(dtype=module.out_proj.weight.dtype, device=module.out_proj.weight.device)
    out.load_state_dict(module.out_proj.state_dict())
    return out


def attention_to_lightconv(module: MultiHeadSelfAttention, max_length: int | None = None) -> ProjectedConv1d:
    """The boundary-renormalised lightweight convolution computed by a relative-bias-only attention layer.

    The layer's logits b^(h)_δ (a sum of :class:`~attnconv.positional.RelativePositionBias` and
    :class:`~attnconv.positional.ALiBi` terms) become the kernel logits w^(h) of a
    :class:`~attnconv.lightconv.LightweightConv1d` with ``boundary="renormalize"``, between copies of the value
    and output projections. A windowed kernel keeps its 2k+1 taps; a clipped or unbounded one gets
    2 ``max_length`` - 1 taps with its tails written out.

    Args:
        module: a :class:`~attnconv.attention.MultiHeadSelfAttention` (or
            :class:`~attnconv.composite.CompositeAttention`) with ``content=False`` and content-independent 1-D terms.
        max_length: the longest sequence to reproduce, needed for clipped or unbounded kernels; defaults to
            ``module.max_length`` when the module has one.

    Returns:
        a :class:`~attnconv.lightconv.ProjectedConv1d` equal to ``module`` on every sequence with N ≤ max_length.

    Raises:
        ValueError: the module has a content term or a query- or key-dependent term, its projections are not
            linear, or ``max_length`` is missing for a kernel with tails.
    """
    terms = _position_only_terms(module)
    finite_parameters("module", module)
    if not all(isinstance(t, StaticRelativeLogits) for t in terms):
        raise ValueError("module has a query- or key-dependent term: its kernel changes from token to token, so it "
                         "is a dynamic convolution (see attention_to_dynamic_conv), not a lightweight one")
    radius = _kernel_radius(terms, max_length if max_length is not None else getattr(module, "max_length", None))
    logits = sum(t.kernel_logits(radius) for t in terms)  # (N_h, 2r+1)
    conv = LightweightConv1d(module.num_heads * module.head_dim, module.num_heads, 2 * radius + 1,
                             boundary="renormalize", weight_dropout=module.dropout)
    conv = conv.to(dtype=logits.dtype, device=logits.device)
    with torch.no_grad():
        conv.weight.copy_(logits)
    return ProjectedConv1d(conv, _value_projection(module), _output_projection(module))


def attention_to_dynamic_conv(module: MultiHeadSelfAttention, max_length: int | None = None) -> ProjectedConv1d:
    """The dynamic lightweight convolution computed by a position-only layer with Shaw et al.'s relative keys.

    Head h's logit for offset δ is (X_i W_qry^(h) + b_qry^(h))·a_δ / sqrt(D_h) (+ b^(h)_δ from any fixed terms):
    linear in X_i, so it is X_i W^D + b^D with

        W^D_h = W_qry^(h) [a_{-r} ... a_r] / sqrt(D_h)      (rank ≤ D_h),  a_δ = a_{clip(δ)},

    the kernel predictor of a :class:`~attnconv.lightconv.DynamicConv1d` (``boundary="renormalize"``).

    Args:
        module: a layer with ``content=False``, exactly one :class:`~attnconv.positional.QueryRelativeLogits`,
            any number of content-independent terms, and ``nn.Linear`` query and value projections.
        max_length: as in :func:`attention_to_lightconv`.

    Returns:
        a :class:`~attnconv.lightconv.ProjectedConv1d`: kernels predicted from X, applied to X W_val.
    """
    terms = _position_only_terms(module)
    finite_parameters("module", module)
    query_terms = [t for t in terms if isinstance(t, QueryRelativeLogits)]
    static = [t for t in terms if isinstance(t, StaticRelativeLogits)]
    if len(query_terms) != 1 or len(query_terms) + len(static) != len(terms):
        raise ValueError("module must have exactly one QueryRelativeLogits term and otherwise only "
                         "content-independent terms (a key-dependent term is not predicted from the query)")
    if not isinstance(module.q_proj, nn.Linear):
        raise ValueError(f"module's query projection must be nn.Linear, got {type(module.q_proj).__name__}")
    term = query_terms[0]
    radius = _kernel_radius(terms, max_length if max_length is not None else getattr(module, "max_length", None))
    offsets = torch.arange(-radius, radius + 1, device=term.embedding.device)
    clipped = offsets.clamp(-term.max_distance, term.max_distance) + term.max_distance
    a = term.embedding[clipped] / math.sqrt(term.head_dim)  # (2r+1, D_h): a_{clip(δ)} / sqrt(D_h)
    w_q = module.q_proj.weight.view(module.num_heads, module.head_dim, module.embed_dim)  # (N_h, D_h, C)
    weight = (a @ w_q).reshape(-1, module.embed_dim)  # (N_h (2r+1), C): W^D, head-major
    bias = torch.zeros(module.num_heads, 2 * radius + 1, dtype=weight.dtype, device=weight.device)
    if module.q_proj.bias is not None:
        bias = bias + module.q_proj.bias.view(module.num_heads, module.head_dim) @ a.T
    for t in static:
        bias = bias + t.kernel_logits(radius)
    if term.window and radius > term.max_distance:  # another, wider window: this term masks beyond its own
        bias = bias.masked_fill(offsets.abs() > term.max_distance, float("-inf"))
    if term.causal:  # a causal query term masks every future key
        bias = bias.masked_fill(offsets > 0, float("-inf"))
    conv = DynamicConv1d(module.embed_dim, module.num_heads, 2 * radius + 1, boundary="renormalize",
                         weight_dropout=module.dropout).to(dtype=weight.dtype, device=weight.device)
    with torch.no_grad():
        conv.kernel_proj.weight.copy_(weight)
        conv.kernel_proj.bias.copy_(bias.flatten())
    return ProjectedConv1d(conv, _value_projection(module), _output_projection(module))


def dynamic_conv_to_attention(conv: DynamicConv1d, interior_only: bool = False) -> MultiHeadSelfAttention:
    """A position-only attention layer with Shaw et al.'s relative keys that computes a dynamic convolution.

    Every dynamic lightweight convolution is such a layer once D_h ≥ 2k+1: take a_δ = sqrt(D_h) e_{δ+k} (a
    scaled basis vector), so that q·a_δ / sqrt(D_h) is coordinate δ + k of the query, and let those coordinates
    of W_qry^(h) be head h's rows of W^D. The values copy head h's channels into the first C / N_h coordinates of
    the head, and the output projection copies them back. Here D_h = max(C / N_h, 2k+1).

    A causal conv (K taps on δ = -(K-1)..0) becomes causal relative keys with k = K - 1, and D_h = max(C / N_h, K);
    a ``conv_bias`` becomes the output projection's bias.

    Args:
        conv: the convolution; with ``boundary="renormalize"`` the layer equals it at every position. With a
            padding mask it equals a conv with ``padded_keys="excluded"`` (the default); fairseq's
            ``padded_keys="zeros"`` keeps padded keys in the kernel's softmax, which an attention mask does not.
        interior_only: accept a zero-padded conv, equal only at positions k ≤ i < N - k (i ≥ K - 1 if causal).

    Raises:
        ValueError: as :func:`lightconv_to_attention`.
    """
    if not isinstance(conv, DynamicConv1d):
        raise ValueError(f"conv must be a DynamicConv1d, got {type(conv).__name__}")
    if not conv.weight_softmax:
        raise ValueError("conv has raw, signed kernels (weight_softmax=False): attention weights are a softmax, "
                         "positive and summing to one, so no attention layer computes them")
    if conv.boundary == "zeros" and not interior_only:
        raise ValueError("conv is zero-padded (boundary='zeros'): attention renormalises at the sequence edges; "
                         "pass interior_only=True to accept equality on interior positions only")
    if conv.value_dim != conv.embed_dim:
        raise ValueError(f"conv convolves values of value_dim={conv.value_dim} channels, not its input's "
                         f"embed_dim={conv.embed_dim}: this layer attends over its own input (wrap it in a "
                         "ProjectedConv1d with a value projection instead)")
    finite_parameters("conv", conv)
    heads, width, c = conv.num_heads, conv.kernel_size, conv.embed_dim
    group = c // heads
    head_dim = max(group, width)
    term = QueryRelativeLogits(heads, head_dim, conv.max_distance, window=True, causal=conv.causal)
    layer = MultiHeadSelfAttention(c, heads, head_dim=head_dim, positional=term, content=False,
                                   dropout=conv.weight_dropout)
    layer = layer.to(dtype=conv.kernel_proj.weight.dtype, device=conv.kernel_proj.weight.device)
    device = conv.kernel_proj.weight.device
    inner = torch.arange(heads, device=device)[:, None] * head_dim  # first coordinate of each head
    taps = (inner + torch.arange(width, device=device)).flatten()  # head h, tap t -> query coordinate h D_h + t
    channels = (inner + torch.arange(group, device=device)).flatten()  # head h, channel c' -> coordinate h D_h + c'
    with torch.no_grad():
        term.embedding.zero_()  # row t is δ = t - k; tap t of the conv is δ = t - padding_l, the same for t < K
        term.embedding[:width, :width] = math.sqrt(head_dim) * torch.eye(width, dtype=term.embedding.dtype,
                                                                          device=device)
        layer.q_proj.weight.zero_()
        layer.q_proj.bias.zero_()
        layer.q_proj.weight[taps] = conv.kernel_proj.weight
        if conv.kernel_proj.bias is not None:
            layer.q_proj.bias[taps] = conv.kernel_proj.bias
        selection = torch.zeros(heads * head_dim, c, dtype=layer.v_proj.weight.dtype, device=device)
        selection[channels, torch.arange(c, device=device)] = 1.0
        layer.v_proj.weight.copy_(selection)
        layer.v_proj.bias.zero_()
        layer.out_proj.weight.copy_(selection.T)
        layer.out_proj.bias.zero_()
        if conv.conv_bias is not None:
            layer.out_proj.bias.copy_(conv.conv_bias)
    return layer
