"""The convolution options of the small BERT (Chang et al. 2021): a config's ``conv_*`` fields and ``hidden_act``,
checked and resolved against its attention variant.

A variant name (:data:`attnconv.models.bert.VARIANTS`) fixes which projections are convolutions and whether they
have a GELU or cover half of the heads. The config's fields refine that, with the options of Chang et al.'s code
(its ``qk`` and ``value_forward`` settings and its ``hidden_act``):

- ``conv_projections``: which of ``query``, ``key``, ``value`` are convolutions (``None``: the variant's);
- ``conv_kernel_size``, ``conv_activation``, ``conv_groups``, ``conv_depth_multiplier``, ``mixed_projections``: one
  value for every convolutional projection, or a dict from projection name to its own value (names left out get
  the default), so that the query/key convolutions and the value convolution can differ, as in their code;
- ``hidden_act``: the activation of every MLP and of the masked-LM head (HuggingFace's ``hidden_act``). Chang et
  al.'s convolutions use the same function between their depthwise and pointwise steps; here that is
  ``conv_activation="hidden_act"``, while the default ``"auto"`` keeps the variant's (a GELU for ``conv-*-gelu``).

:func:`conv_options` checks every field before any weight exists (so a training run refuses a bad value before
any data loads) and returns the keyword arguments of :class:`~attnconv.composite.CompositeAttention`. With every
field at its default they are exactly the variant's, so a default config builds the same model as before the
fields existed.
"""

from __future__ import annotations

from typing import Any, Mapping

from .._checks import flag, positive_int
from ..conv_projections import ACTIVATIONS, CONV_PROJECTIONS, projection_settings
from ..taps import odd_kernel_size

__all__ = ["AUTO", "HIDDEN_ACT", "HIDDEN_ACTS", "check_hidden_act", "conv_options"]

AUTO = "auto"  # conv_activation: the variant's
HIDDEN_ACT = "hidden_act"  # conv_activation: the model's hidden_act, as in Chang et al.'s code
HIDDEN_ACTS = tuple(a for a in ACTIVATIONS if a is not None)  # names hidden_act takes


def check_hidden_act(value: object) -> str:
    """``value`` if it is one of ``HIDDEN_ACTS``, else ``TypeError`` (not a string) or ``ValueError``."""
    if not isinstance(value, str):
        raise TypeError(f"hidden_act must be one of {HIDDEN_ACTS}, got {type(value).__name__} {value!r}")
    if value not in HIDDEN_ACTS:
        raise ValueError(f"hidden_act must be one of {HIDDEN_ACTS}, got {value!r}")
    return value


def _projections(value: object, variant_projections: tuple[str, ...]) -> tuple[str, ...]:
    if value is None:
        return tuple(variant_projections)
    if isinstance(value, str) or not isinstance(value, (list, tuple)):
        raise TypeError(f"conv_projections must be None (the variant's) or a list of names from {CONV_PROJECTIONS}, "
                        f"such as ['query', 'key'], got {type(value).__name__} {value!r}")
    for name in value:
        if name not in CONV_PROJECTIONS:
            raise ValueError(f"conv_projections must name some of {CONV_PROJECTIONS}, got {name!r}")
    if len(set(value)) != len(value):
        raise ValueError(f"conv_projections names a projection twice: {list(value)!r}")
    return tuple(value)


def _per_name(field: str, value: object, names: tuple[str, ...], default: object,
              check: Any) -> tuple[dict[str, Any], Any]:
    """Each convolutional projection's value of ``field`` (``value`` for all, or a dict's own, ``default`` where it
    names none), and what the layer takes: that dict, or the one value. ``check(field, v)`` checks one value and
    returns it resolved."""
    if isinstance(value, Mapping):
        unknown = [k for k in value if k not in names]
        if unknown:
            raise ValueError(f"{field} maps the convolutional projections {names} to values, got the names {unknown}")
        per_name = {name: check(field, value.get(name, default)) for name in names}
        return per_name, per_name
    if isinstance(value, (list, tuple, set)):
        raise TypeError(f"{field} must be one value, or a dict from projection name to a value (such as "
                        f"{{'query': ..., 'value': ...}}), got {type(value).__name__} {value!r}")
    checked = check(field, value)
    return dict.fromkeys(names, checked), checked


def _activation(hidden_act: str, variant_activation: str | None):
    def check(field: str, v: object) -> str | None:
        if v is not None and not isinstance(v, str):
            raise TypeError(f"{field} must be 'auto', 'hidden_act', None or one of {HIDDEN_ACTS}, got "
                            f"{type(v).__name__} {v!r}")
        if v == AUTO:
            return variant_activation
        if v == HIDDEN_ACT:
            return hidden_act
        if v not in ACTIVATIONS:
            raise ValueError(f"{field} must be 'auto', 'hidden_act', None or one of {HIDDEN_ACTS}, got {v!r}")
        return v
    return check


def _kernel_size(field: str, v: object) -> int:
    odd_kernel_size(v, field)
    return v


def _groups(field: str, v: object) -> int | None:
    return None if v is None else positive_int(field, v)


def _mixed(variant_mixed: bool):
    def check(field: str, v: object) -> bool:
        return variant_mixed if v is None else flag(field, v)
    return check


def conv_options(config: Any, variant: Any) -> dict[str, Any]:
    """The convolution keyword arguments of :class:`~attnconv.composite.CompositeAttention` for a
    :class:`~attnconv.models.bert.BertConfig` ``config`` of attention variant ``variant`` (an ``AttentionVariant``).

    Returns ``conv_projections``, ``conv_kernel_size``, ``conv_activation``, ``conv_groups``,
    ``conv_depth_multiplier`` and ``mixed_projections``, each per projection (a dict) where the config gives
    per-projection values, with ``"auto"``, ``"hidden_act"`` and ``None`` resolved.

    Raises:
        TypeError: a field of the wrong type (a list where one value or a dict is expected, a string for a bool).
        ValueError: a value out of range or unknown, a dict naming a projection that is not convolutional, an option
            set without convolutional projections, or options that do not fit together (``conv_groups`` with an
            activation or a depth multiplier, groups that do not divide the channels, ``mixed_projections`` with
            one head, a per-projection ``conv_kernel_size`` with the ``convolution`` branch).
    """
    hidden_act = check_hidden_act(config.hidden_act)
    names = _projections(config.conv_projections, variant.conv_projections)
    if isinstance(config.conv_kernel_size, Mapping) and variant.value_conv:
        raise ValueError("conv_kernel_size must be one odd int with the convolution variant, whose value branch "
                         f"takes it as its kernel size, got {config.conv_kernel_size!r}")
    sizes, size = _per_name("conv_kernel_size", config.conv_kernel_size, names, 3, _kernel_size)
    acts, act = _per_name("conv_activation", config.conv_activation, names, None,
                          _activation(hidden_act, variant.conv_activation))
    groups, group = _per_name("conv_groups", config.conv_groups, names, None, _groups)
    mults, mult = _per_name("conv_depth_multiplier", config.conv_depth_multiplier, names, 1, positive_int)
    mixed, mix = _per_name("mixed_projections", config.mixed_projections, names, False,
                           _mixed(variant.mixed_projections))
    if not names:
        for field, value, unset in (("conv_activation", config.conv_activation, (AUTO, None)),
                                    ("conv_groups", config.conv_groups, (None,)),
                                    ("conv_depth_multiplier", config.conv_depth_multiplier, (1,)),
                                    ("mixed_projections", config.mixed_projections, (None, False))):
            if not isinstance(value, Mapping) and value not in unset:
                raise ValueError(f"{field}={value!r} applies to convolutional projections, but variant "
                                 f"{config.variant!r} has none: choose a conv-* variant or set conv_projections")
    _check_fit(config, names, acts, groups, mults, mixed)
    projection_settings(names, sizes, acts, groups, mixed, mults, config.num_heads)  # the layer's own checks
    return {"conv_projections": names, "conv_kernel_size": size, "conv_activation": act, "conv_groups": group,
            "conv_depth_multiplier": mult, "mixed_projections": mix}


def _check_fit(config: Any, names: tuple[str, ...], acts: dict, groups: dict, mults: dict, mixed: dict) -> None:
    c, heads = config.hidden_dim, config.num_heads
    for name in names:
        g = groups[name]
        if mixed[name] and heads < 2:
            raise ValueError(f"mixed_projections needs num_heads >= 2 (half of the heads convolutional, half linear), "
                             f"got num_heads={heads}")
        if g is None:
            continue
        if acts[name] is not None:
            raise ValueError(f"conv_groups={g} makes the {name} projection one grouped convolution, which has no "
                             f"step for conv_activation={acts[name]!r} (the variant's or the config's): set "
                             "conv_activation=None, or choose a variant without -gelu")
        if mults[name] != 1:
            raise ValueError(f"conv_groups={g} makes the {name} projection one grouped convolution, which has no "
                             f"depthwise step for conv_depth_multiplier={mults[name]}")
        out = (heads // 2) * (c // heads) if mixed[name] else c
        if c % g or out % g:
            raise ValueError(f"conv_groups={g} must divide the {name} convolution's input channels (hidden_dim={c}) "
                             f"and its output channels ({out})")
