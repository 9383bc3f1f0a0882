"""Chang et al.'s BertSelfAttention, written out from their published code, for the conventions tests: the
projections (linear or convolutional), the relative terms, the ``convolution`` branch, and the copy of their
weights into a CompositeAttention by the conventions table's rules."""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from attnconv.composite import CompositeAttention, GroupedConv1d, MixedProjection
from attnconv.lightconv import DepthwiseSeparableConv1d

from .reference_helpers import D, _copy, _randn


def hf_activation(name):
    """The activations of the HuggingFace code base Chang et al. build on (``ACT2FN[config.hidden_act]``), as it
    writes them: ``gelu`` is PyTorch's (exact, erf) GELU, the others their own formulas."""
    return {
        "gelu": F.gelu,
        "gelu_new": lambda x: 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0)))),
        "gelu_fast": lambda x: 0.5 * x * (1.0 + torch.tanh(x * 0.7978845608 * (1.0 + 0.044715 * x * x))),
        "relu": F.relu,
        "swish": lambda x: x * torch.sigmoid(x),
        "mish": lambda x: x * torch.tanh(F.softplus(x)),
        "tanh": torch.tanh,
        "sigmoid": torch.sigmoid,
    }[name]


def _spec_activation(spec):
    """A spec's activation name: ``act`` False (their ``no_act``) is none, True or absent is ``hidden_act="gelu"``."""
    act = spec.get("act", True)
    return None if act is False else "gelu" if act is True else act


def _chang_projection(hidden, p, name, spec):
    """Chang et al.'s query/key/value projection: linear, or a convolution (grouped, or depthwise + act + pointwise),
    optionally on half of the channels with a linear map for the rest ("mixed"). Their depthwise step is
    Conv1d(C, N_h D_h, groups=C): N_h D_h / C output channels per input channel."""
    if spec is None:
        return hidden @ p[name].T + p[name + "_b"]
    out = F.conv1d(hidden.transpose(1, 2), p[name + "_conv"], p[name + "_conv_b"], padding=spec["radius"],
                   groups=spec["groups"]).transpose(1, 2)
    if spec.get("depth"):
        if _spec_activation(spec) is not None:
            out = hf_activation(_spec_activation(spec))(out)
        out = out @ p[name + "_pointwise"].T + p[name + "_pointwise_b"]
    if spec.get("mixed"):
        out = torch.cat([out, hidden @ p[name + "_linear"].T + p[name + "_linear_b"]], dim=-1)
    return out


def chang_reference(hidden, p, heads, radius, mask=None, use_qk=True, convfixed=False, convq=False, convk=False,
                    convolution=False, qk=None, value=None):
    """BertSelfAttention of Chang et al.'s code: the context layer (before BertSelfOutput), for N = max length."""
    b, n, c = hidden.shape
    if mask is not None and (qk is not None or value is not None):
        hidden = hidden.masked_fill(mask[..., None], 0.0)
    q_all = _chang_projection(hidden, p, "query", qk)
    k_all = _chang_projection(hidden, p, "key", qk)
    v_all = _chang_projection(hidden, p, "value", value)
    d = q_all.shape[-1] // heads

    def split(t):
        return t.view(b, n, heads, d).permute(0, 2, 1, 3)

    q, k, v = split(q_all), split(k_all), split(v_all)
    scores = q @ k.transpose(-1, -2) / math.sqrt(d) if use_qk else torch.zeros(b, heads, n, n, dtype=D)
    pos = torch.arange(n)
    rel = (pos[None, :] - pos[:, None]).clamp(-radius, radius) + radius  # [query, key]: clip(key - query) + k
    index = rel.expand(b, heads, n, n)
    query_weights = torch.zeros(b, heads, n, 2 * radius + 1, dtype=D)
    if convfixed:
        query_weights = query_weights + p["convfixed"]  # (1, N_h, 1, 2k+1)
    if convq:
        query_weights = query_weights + torch.einsum("dr,bhsd->bhsr", p["convq"], q) / math.sqrt(d)
    if convfixed or convq:
        scores = scores + torch.gather(query_weights, 3, index)
    if convk:
        key_weights = torch.einsum("dr,bhsd->bhsr", p["convk"], k) / math.sqrt(d)
        scores = scores + torch.gather(key_weights, 3, index).permute(0, 1, 3, 2)
    if mask is not None:
        scores = scores + (-10000.0 * mask.to(D))[:, None, None, :]
    context = torch.softmax(scores, dim=-1) @ v
    if convolution:
        values = v_all if mask is None else v_all.masked_fill(mask[..., None], 0.0)
        conv = F.conv1d(values.transpose(1, 2), p["convolution"], p["convolution_b"], padding=radius,
                        groups=c).transpose(1, 2)
        context = context + split(conv) * p["convolution_scalar"]
    return context.permute(0, 2, 1, 3).reshape(b, n, heads * d)


def _chang_params(c, heads, radius, qk=None, value=None, seed=8, head_size=None):
    torch.manual_seed(seed)
    inner = c if head_size is None else heads * head_size  # all_head_size (= hidden_size unless head_size)
    d = inner // heads
    p = {"convfixed": _randn(1, heads, 1, 2 * radius + 1), "convq": _randn(d, 2 * radius + 1),
         "convk": _randn(d, 2 * radius + 1), "convolution": _randn(inner, 1, 2 * radius + 1, scale=0.5),
         "convolution_b": _randn(inner), "convolution_scalar": 1 + 0.5 * _randn(1, heads, 1, 1)}
    for name, spec in (("query", qk), ("key", qk), ("value", value)):
        p[name], p[name + "_b"] = _randn(inner, c, scale=0.4), _randn(inner)
        if spec is None:
            continue
        out = inner // 2 if spec.get("mixed") else inner
        conv_out = inner if spec.get("depth") else out
        p[name + "_conv"] = _randn(conv_out, c // spec["groups"], 2 * spec["radius"] + 1, scale=0.4)
        p[name + "_conv_b"] = _randn(conv_out)
        p[name + "_pointwise"], p[name + "_pointwise_b"] = _randn(out, conv_out, scale=0.4), _randn(out)
        p[name + "_linear"], p[name + "_linear_b"] = _randn(inner - out, c, scale=0.4), _randn(inner - out)
    return p


def _ours_from_chang(layer: CompositeAttention, p, qk=None, value=None):
    """Copy Chang et al.'s weights into a CompositeAttention; a square out_proj becomes the identity (to compare
    contexts)."""
    for name, spec in (("query", qk), ("key", qk), ("value", value)):
        proj = getattr(layer, name[0] + "_proj")
        if proj is None:
            continue
        if spec is None:
            _copy(proj.weight, p[name])
            _copy(proj.bias, p[name + "_b"])
            continue
        conv = proj.conv if isinstance(proj, MixedProjection) else proj
        if isinstance(conv, GroupedConv1d):
            _copy(conv.conv.weight, p[name + "_conv"])
            _copy(conv.conv.bias, p[name + "_conv_b"])
        else:
            assert isinstance(conv, DepthwiseSeparableConv1d)
            _copy(conv.depthwise.weight, p[name + "_conv"])
            _copy(conv.depthwise.bias, p[name + "_conv_b"])
            _copy(conv.pointwise.weight, p[name + "_pointwise"])
            _copy(conv.pointwise.bias, p[name + "_pointwise_b"])
        if isinstance(proj, MixedProjection):
            _copy(proj.linear.weight, p[name + "_linear"])
            _copy(proj.linear.bias, p[name + "_linear_b"])
    if layer.fixed_term is not None:
        _copy(layer.fixed_term.weight, p["convfixed"][0, :, 0, :])
    if layer.query_term is not None:
        _copy(layer.query_term.embedding, p["convq"].T)
    if layer.key_term is not None:
        _copy(layer.key_term.embedding, p["convk"].T.flip(0))
    if layer.value_conv is not None:
        _copy(layer.value_conv.weight, p["convolution"])
        if layer.value_conv.bias is not None:
            _copy(layer.value_conv.bias, p["convolution_b"])
        if layer.value_conv_scale.dim() == 1:
            _copy(layer.value_conv_scale, p["convolution_scalar"].view(-1))
    if layer.out_proj.weight.shape[0] == layer.out_proj.weight.shape[1]:  # else the caller applies out_proj to theirs
        _copy(layer.out_proj.weight, torch.eye(layer.out_proj.weight.shape[0], dtype=D))
        _copy(layer.out_proj.bias, torch.zeros_like(layer.out_proj.bias))
    return layer


def _unpadded(ours, theirs, mask):
    return (ours, theirs) if mask is None else (ours[~mask], theirs[~mask])


CHANG_PROJECTIONS = {
    "depth-gelu": dict(radius=1, groups=8, depth=True),
    "depth-no_act": dict(radius=1, groups=8, depth=True, act=False),
    "grouped": dict(radius=2, groups=2),
    "depth-mixed": dict(radius=1, groups=8, depth=True, mixed=True),
    "grouped-mixed": dict(radius=1, groups=4, mixed=True),
}


def _composite_for(spec, heads=2, c=8, radius=2, n=12, which=("query", "key"), mixed_split="heads", **kw):
    depth = spec.get("depth", False)
    return CompositeAttention(
        c, heads, radius, n, fixed=True, conv_projections=which, conv_kernel_size=2 * spec["radius"] + 1,
        conv_activation=_spec_activation(spec) if depth else None,
        conv_groups=None if depth else spec["groups"], mixed_projections=spec.get("mixed", False),
        mixed_split=mixed_split, **kw).to(D)
