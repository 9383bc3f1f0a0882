"""A small BERT (Devlin et al. 2019) whose attention can hold convolutions (Chang et al. 2021).

Shapes: B batch, N tokens (any N ≤ ``max_length``), C = ``hidden_dim``, V vocabulary, N_h heads. ::

    embeddings:  E = LN( tok[x] + seg[t] (+ pos[0..N-1] if absolute) )                  (B, N, C)
    block:       post-LN  h = LN(h + Attn(h)); h = LN(h + MLP(h)),  MLP(h) = act(h W_1) W_2
                 pre-LN   h = h + Attn(LN(h)); h = h + MLP(LN(h))
    MLM head:    logits = LN(act(h W)) tok^T + b                      (tied to the token embeddings) (·, V)
    classifier:  logits = tanh(h_[CLS] W_p) W_c                                          (B, labels)

with act the config's ``hidden_act`` (the exact GELU by default).

The attention of every block is chosen by a variant name (:data:`VARIANTS`), all built from
:class:`~attnconv.attention.MultiHeadSelfAttention` and :class:`~attnconv.composite.CompositeAttention`:

1. ``absolute``: absolute position embeddings, content attention (the BERT baseline);
2. ``fixed``: + a fixed lightweight convolution, the relative bias b^(h)_δ;
3. ``dynamic``: + a query-dependent dynamic convolution (Shaw et al.'s relative keys);
4. ``composite``: + both;
5. ``fixed-noabs``, ``dynamic-noabs``, ``composite-noabs``: 2-4 without absolute position embeddings;
6. ``conv-query``, ``conv-key``, ``conv-value``: a depthwise-separable convolution as that projection;
7. ``conv-query-gelu``, ``conv-key-gelu``, ``conv-value-gelu``: the same with a GELU between the depthwise and
   pointwise steps (Chang et al.'s default);
8. ``conv-query-mixed``, ``conv-key-mixed``, ``conv-value-mixed``: the convolution on half of the heads only;
9. ``convolution``: content attention plus a depthwise convolution of the values, times a learned scalar
   (Chang et al.'s ``convolution`` variant).

The config's ``conv_*`` fields and ``hidden_act`` refine a variant with the other options of Chang et al.'s code
(:mod:`attnconv.models.bert_options`).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from .._checks import int_at_least, positive_int, probability, values_readable
from ..attention import MultiHeadSelfAttention
from ..composite import CompositeAttention
from ..conv_projections import Activation
from .bert_options import conv_options
from ..positional.sequence import KeyRelativeLogits, QueryRelativeLogits, RelativePositionBias
from ..taps import check_padding_mask

__all__ = ["BERT_SIZES", "VARIANTS", "AttentionVariant", "BertClassifier", "BertConfig", "BertEncoder",
           "BertForMaskedLM", "composite_layers", "make_bert_attention"]


@dataclass(frozen=True)
class AttentionVariant:
    """Which position information a BERT variant uses.

    Attributes:
        absolute: learned absolute position embeddings added to the token embeddings.
        fixed: a relative bias b^(h)_δ (fixed lightweight convolution) in every layer's logits.
        query_dynamic: a query-dependent relative term (dynamic lightweight convolution).
        conv_projections: projections (``"query"``, ``"key"``, ``"value"``) that are depthwise-separable convs.
        conv_activation: ``None`` or ``"gelu"`` between their depthwise and pointwise steps.
        mixed_projections: those convolutions cover half of the heads only.
        value_conv: a depthwise convolution of the values added to the context, times a learned scalar.
    """

    absolute: bool = True
    fixed: bool = False
    query_dynamic: bool = False
    conv_projections: tuple[str, ...] = ()
    conv_activation: str | None = None
    mixed_projections: bool = False
    value_conv: bool = False

    @property
    def is_plain(self) -> bool:
        """``True`` for a standard attention layer (no relative term, convolutional projection or branch)."""
        return not (self.fixed or self.query_dynamic or self.conv_projections or self.value_conv)


#: The attention variants by name (see the module's docstring).
VARIANTS: dict[str, AttentionVariant] = {
    "absolute": AttentionVariant(),
    "fixed": AttentionVariant(fixed=True),
    "dynamic": AttentionVariant(query_dynamic=True),
    "composite": AttentionVariant(fixed=True, query_dynamic=True),
    "fixed-noabs": AttentionVariant(absolute=False, fixed=True),
    "dynamic-noabs": AttentionVariant(absolute=False, query_dynamic=True),
    "composite-noabs": AttentionVariant(absolute=False, fixed=True, query_dynamic=True),
    "conv-query": AttentionVariant(conv_projections=("query",)),
    "conv-key": AttentionVariant(conv_projections=("key",)),
    "conv-value": AttentionVariant(conv_projections=("value",)),
    **{f"conv-{name}-gelu": AttentionVariant(conv_projections=(name,), conv_activation="gelu")
       for name in ("query", "key", "value")},
    **{f"conv-{name}-mixed": AttentionVariant(conv_projections=(name,), mixed_projections=True)
       for name in ("query", "key", "value")},
    "convolution": AttentionVariant(value_conv=True),
}


@dataclass
class BertConfig:
    """Sizes and options of a small BERT.

    Attributes:
        vocab_size: V (the tokenizer's).
        hidden_dim: C.
        depth: number of blocks.
        num_heads: N_h; C must be divisible by N_h.
        mlp_dim: hidden width of each block's MLP.
        max_length: longest input N; also the number of absolute position embeddings.
        variant: a key of :data:`VARIANTS`.
        max_distance: k, the clipping distance of the relative terms (kernels over offsets -k..k).
        conv_kernel_size: kernel size of convolutional projections (odd), or a dict from projection name to its own
            (not with the ``convolution`` variant, whose value branch takes the one size).
        pre_norm: pre-LN blocks (post-LN, as in BERT, when ``False``).
        dropout: dropout on embeddings, residual branches and attention probabilities.
        type_vocab_size: segment ids (2: a and b).
        pad_id: the ``[PAD]`` id (its embedding is zero and gets no gradient).
        hidden_act: the activation of every block's MLP and of the MLM head's transform, HuggingFace's
            ``hidden_act`` (``"gelu"``, the exact GELU, or ``"gelu_new"``, ``"gelu_fast"``, ``"relu"``, ``"swish"``,
            ``"mish"``, ``"tanh"``, ``"sigmoid"``). Not the classifier's pooler, which is ``tanh`` as in BERT, and
            not the convolutions' activation unless ``conv_activation="hidden_act"``.
        conv_projections: which of ``"query"``, ``"key"``, ``"value"`` are convolutions; ``None``: the variant's
            (``conv-key``: the key). Added to any variant's relative terms; ``[]`` makes none convolutional.
        conv_activation: between the depthwise and pointwise steps of those convolutions: ``"auto"``, the
            variant's (a GELU for ``conv-*-gelu``, none otherwise); ``None``; an activation name, as for
            ``hidden_act``; or ``"hidden_act"``, the model's ``hidden_act``, as Chang et al.'s code does
            (``ACT2FN[config.hidden_act]``, unless its ``no_act``).
        conv_groups: ``None``, depthwise-separable convolutions; G, each is one ``nn.Conv1d`` with G groups (Chang
            et al.'s non-depthwise convolution), which takes no activation and no depth multiplier; G divides C.
        conv_depth_multiplier: m, depthwise output channels per input channel (m C into the pointwise step).
        mixed_projections: the convolutions cover half of the heads, the others stay linear; ``None``: the
            variant's (``True`` for ``conv-*-mixed``). Needs N_h ≥ 2.

    Each ``conv_*`` option is one value for every convolutional projection, or a dict from projection name to its
    own value (names left out get the layer's default: 3, ``None``, ``None``, 1, ``False``), as Chang et al. set
    their query/key and value convolutions apart. Every field is checked here, before any weight or data exists;
    at their defaults the model is the variant's, weight for weight.
    """

    vocab_size: int = 8000
    hidden_dim: int = 256
    depth: int = 4
    num_heads: int = 4
    mlp_dim: int = 1024
    max_length: int = 128
    variant: str = "absolute"
    max_distance: int = 16
    conv_kernel_size: int | dict[str, int] = 3
    pre_norm: bool = False
    dropout: float = 0.1
    type_vocab_size: int = 2
    pad_id: int = 0
    hidden_act: str = "gelu"
    conv_projections: tuple[str, ...] | None = None
    conv_activation: str | None | dict[str, str | None] = "auto"
    conv_groups: int | None | dict[str, int | None] = None
    conv_depth_multiplier: int | dict[str, int] = 1
    mixed_projections: bool | None | dict[str, bool] = None

    def __post_init__(self) -> None:
        for name in ("vocab_size", "hidden_dim", "depth", "num_heads", "mlp_dim", "max_length", "type_vocab_size"):
            positive_int(name, getattr(self, name))
        if self.hidden_dim % self.num_heads:
            raise ValueError(f"hidden_dim ({self.hidden_dim}) must be divisible by num_heads ({self.num_heads})")
        if self.variant not in VARIANTS:
            raise ValueError(f"variant must be one of {tuple(VARIANTS)}, got {self.variant!r}")
        int_at_least("max_distance", self.max_distance, 1)
        probability("dropout", self.dropout)
        if not 0 <= self.pad_id < self.vocab_size:
            raise ValueError(f"pad_id must be in [0, vocab_size={self.vocab_size}), got {self.pad_id!r}")
        if isinstance(self.conv_projections, list):  # as read back from JSON
            self.conv_projections = tuple(self.conv_projections)
        conv_options(self, self.attention)  # checks the conv_* fields and hidden_act

    @property
    def attention(self) -> AttentionVariant:
        """The variant named by ``variant`` (before the ``conv_*`` fields refine it)."""
        return VARIANTS[self.variant]

    @property
    def conv_options(self) -> dict[str, object]:
        """The convolution arguments of each block's :class:`~attnconv.composite.CompositeAttention`: the variant's,
        refined by the ``conv_*`` fields (:func:`attnconv.models.bert_options.conv_options`)."""
        return conv_options(self, self.attention)


#: Model sizes by name, ``tiny`` for tests, ``cpu-quick`` (4 layers, hidden 256, 4 heads) and ``base-small``.
BERT_SIZES: dict[str, BertConfig] = {
    "tiny": BertConfig(vocab_size=200, hidden_dim=32, depth=2, num_heads=2, mlp_dim=64, max_length=64, max_distance=4),
    "cpu-quick": BertConfig(hidden_dim=256, depth=4, num_heads=4, mlp_dim=1024, max_length=128, max_distance=16),
    "base-small": BertConfig(hidden_dim=512, depth=8, num_heads=8, mlp_dim=2048, max_length=128, max_distance=32),
}


def make_bert_attention(config: BertConfig) -> MultiHeadSelfAttention:
    """One block's attention for ``config.variant``: the standard layer for plain variants without convolutional
    projections, else a :class:`~attnconv.composite.CompositeAttention` with the variant's terms and the
    projections of ``config.conv_options``."""
    v, conv = config.attention, config.conv_options
    if v.is_plain and not conv["conv_projections"]:
        return MultiHeadSelfAttention(config.hidden_dim, config.num_heads, dropout=config.dropout)
    return CompositeAttention(config.hidden_dim, config.num_heads, config.max_distance, config.max_length,
                              content=True, fixed=v.fixed, query_dynamic=v.query_dynamic, **conv,
                              value_conv=v.value_conv, dropout=config.dropout, query_chunk=config.max_length)


class BertBlock(nn.Module):
    """Attention and MLP, each in a residual branch with LayerNorm after (post-LN) or before (pre-LN)."""

    def __init__(self, config: BertConfig) -> None:
        super().__init__()
        self.pre_norm = config.pre_norm
        self.attn = make_bert_attention(config)
        self.norm1 = nn.LayerNorm(config.hidden_dim)
        self.mlp = nn.Sequential(nn.Linear(config.hidden_dim, config.mlp_dim), Activation(config.hidden_act),
                                 nn.Linear(config.mlp_dim, config.hidden_dim))
        self.norm2 = nn.LayerNorm(config.hidden_dim)
        self.drop = nn.Dropout(config.dropout)

    def forward(self, h: Tensor, padding_mask: Tensor | None = None) -> Tensor:
        """``(B, N, C)`` -> ``(B, N, C)``; ``padding_mask`` bool ``(B, N)``, ``True`` on padding.

        Padded tokens are zeroed first, so that nothing they hold (NaN included) reaches the MLP's gradients."""
        if padding_mask is not None:
            check_padding_mask(padding_mask, h)
            h = h.masked_fill(padding_mask[..., None], 0.0)
        if self.pre_norm:
            h = h + self.drop(self.attn(self.norm1(h), key_padding_mask=padding_mask)[0])
            return h + self.drop(self.mlp(self.norm2(h)))
        h = self.norm1(h + self.drop(self.attn(h, key_padding_mask=padding_mask)[0]))
        return self.norm2(h + self.drop(self.mlp(h)))


class BertEncoder(nn.Module):
    """Embeddings and blocks: token ids ``(B, N)`` -> hidden states ``(B, N, C)``.

    Attributes:
        token_embedding: ``(V, C)``, shared with the MLM head's output layer.
        position_embedding: ``(max_length, C)``, or ``None`` for variants without absolute positions.
        segment_embedding: ``(type_vocab_size, C)``.
    """

    def __init__(self, config: BertConfig) -> None:
        super().__init__()
        self.config = config
        c = config.hidden_dim
        self.token_embedding = nn.Embedding(config.vocab_size, c, padding_idx=config.pad_id)
        self.position_embedding = nn.Embedding(config.max_length, c) if config.attention.absolute else None
        self.segment_embedding = nn.Embedding(config.type_vocab_size, c)
        self.embed_norm = nn.LayerNorm(c)
        self.drop = nn.Dropout(config.dropout)
        self.blocks = nn.ModuleList(BertBlock(config) for _ in range(config.depth))
        self.final_norm = nn.LayerNorm(c) if config.pre_norm else nn.Identity()
        self.apply(_init_weights)

    def forward(self, input_ids: Tensor, token_type_ids: Tensor | None = None,
                padding_mask: Tensor | None = None) -> Tensor:
        """Hidden states ``(B, N, C)``.

        Args:
            input_ids: ``(B, N)`` long, N ≤ ``max_length``.
            token_type_ids: ``(B, N)`` long segment ids (default all 0).
            padding_mask: ``(B, N)`` bool, ``True`` on padding (default: no padding).
        """
        if not isinstance(input_ids, Tensor):
            raise TypeError(f"input_ids must be a torch.Tensor, got {type(input_ids).__name__}")
        if input_ids.dim() != 2:
            raise ValueError(f"input_ids must be (B, N), got shape {tuple(input_ids.shape)}")
        n = input_ids.shape[1]
        if n > self.config.max_length:
            raise ValueError(f"input_ids has N={n} tokens, more than max_length={self.config.max_length}")
        for name, t in (("token_type_ids", token_type_ids), ("padding_mask", padding_mask)):
            if t is not None and t.shape != input_ids.shape:
                raise ValueError(f"{name} must have the shape of input_ids {tuple(input_ids.shape)}, "
                                 f"got {tuple(t.shape)}")
        _check_ids("input_ids", input_ids, self.config.vocab_size)
        if token_type_ids is not None:
            _check_ids("token_type_ids", token_type_ids, self.config.type_vocab_size)
        if padding_mask is not None and padding_mask.dtype != torch.bool:
            raise TypeError(f"padding_mask must be a bool tensor (True = padding), got {padding_mask.dtype}")
        h = self.token_embedding(input_ids)
        h = h + self.segment_embedding(torch.zeros_like(input_ids) if token_type_ids is None else token_type_ids)
        if self.position_embedding is not None:
            h = h + self.position_embedding.weight[:n]
        h = self.drop(self.embed_norm(h))
        for block in self.blocks:
            h = block(h, padding_mask)
        return self.final_norm(h)


def _check_ids(name: str, ids: Tensor, size: int) -> None:
    """``TypeError`` unless ``ids`` holds integers, ``ValueError`` unless they lie in ``[0, size)``."""
    if ids.dtype not in (torch.int64, torch.int32, torch.int16, torch.int8, torch.uint8):
        raise TypeError(f"{name} must be an integer tensor, got {ids.dtype}")
    if ids.numel() and values_readable(ids):  # not on meta, in vmap, jit.trace or torch.compile
        lo, hi = torch.stack(torch.aminmax(ids)).tolist()  # one device-to-host copy
        if lo < 0 or hi >= size:
            raise ValueError(f"{name} must lie in [0, {size}), got values from {lo} to {hi}")


def _init_weights(module: nn.Module) -> None:
    """BERT's initialisation: N(0, 0.02) for linear and embedding weights and for the relative terms (the bias
    b_δ and the tables a_δ), zero biases. The relative kernels thus start nearly uniform: what a trained model
    shows is learned, not left over from a random start."""
    if isinstance(module, RelativePositionBias):
        nn.init.normal_(module.weight, std=0.02)
    elif isinstance(module, (QueryRelativeLogits, KeyRelativeLogits)):
        nn.init.normal_(module.embedding, std=0.02)
    if isinstance(module, (nn.Linear, nn.Embedding)):
        nn.init.normal_(module.weight, std=0.02)
        if isinstance(module, nn.Linear) and module.bias is not None:
            nn.init.zeros_(module.bias)
        if isinstance(module, nn.Embedding) and module.padding_idx is not None:
            with torch.no_grad():
                module.weight[module.padding_idx].zero_()


class BertForMaskedLM(nn.Module):
    """The encoder and an MLM head whose output layer is the token embedding matrix (tied weights)."""

    def __init__(self, config: BertConfig) -> None:
        super().__init__()
        self.config = config
        self.encoder = BertEncoder(config)
        c = config.hidden_dim
        self.transform = nn.Sequential(nn.Linear(c, c), Activation(config.hidden_act), nn.LayerNorm(c))
        self.transform.apply(_init_weights)
        self.output_bias = nn.Parameter(torch.zeros(config.vocab_size))

    def forward(self, input_ids: Tensor, token_type_ids: Tensor | None = None, padding_mask: Tensor | None = None,
                labels: Tensor | None = None) -> Tensor:
        """Vocabulary logits: ``(B, N, V)``, or ``(M, V)`` for the M positions with ``labels != -100``."""
        h = self.encoder(input_ids, token_type_ids, padding_mask)
        if labels is not None:
            h = h[labels != -100]  # predict only where a token was masked: (M, C)
        return self.transform(h) @ self.encoder.token_embedding.weight.T + self.output_bias

    def loss(self, input_ids: Tensor, token_type_ids: Tensor | None, padding_mask: Tensor | None,
             labels: Tensor) -> tuple[Tensor, Tensor]:
        """Mean cross-entropy over masked positions, and the number of them predicted correctly.

        ``labels``: ``(B, N)`` integers, a token id in ``[0, V)`` where a token is predicted, -100 elsewhere. With
        no predicted position at all, the loss is 0 (with zero gradients), not the NaN of a mean over nothing.
        """
        if not isinstance(labels, Tensor) or labels.dtype not in (torch.int64, torch.int32):
            raise TypeError(f"labels must be an int64 or int32 tensor, got {getattr(labels, 'dtype', type(labels))}")
        if labels.shape != getattr(input_ids, "shape", None):
            raise ValueError(f"labels must have the shape of input_ids {tuple(getattr(input_ids, 'shape', ()))}, "
                             f"got {tuple(labels.shape)}")
        if not values_readable(labels):
            return self._static_loss(input_ids, token_type_ids, padding_mask, labels)
        predicted = labels[labels != -100]
        if predicted.numel():
            lo, hi = torch.stack(torch.aminmax(predicted)).tolist()
            if lo < 0 or hi >= self.config.vocab_size:
                raise ValueError(f"labels must be -100 or a token id in [0, vocab_size={self.config.vocab_size}), "
                                 f"got values from {lo} to {hi}")
        logits = self(input_ids, token_type_ids, padding_mask, labels)
        if not predicted.numel():
            return logits.float().sum() * 0.0, predicted.new_zeros(())
        return F.cross_entropy(logits.float(), predicted), (logits.argmax(-1) == predicted).sum()

    def _static_loss(self, input_ids: Tensor, token_type_ids: Tensor | None, padding_mask: Tensor | None,
                     labels: Tensor) -> tuple[Tensor, Tensor]:
        """:meth:`loss` where the labels cannot be read (the meta device, ``torch.compile``, ``vmap``, tracing): the
        same two numbers without a shape that depends on the labels' values, so without the label-range check. The
        logits of every position are computed and the unpredicted ones ignored, which costs the vocabulary product at
        all N positions instead of the M predicted ones."""
        logits = self(input_ids, token_type_ids, padding_mask)  # (B, N, V)
        chosen = labels != -100
        total = F.cross_entropy(logits.float().flatten(0, 1), labels.flatten().long(), ignore_index=-100,
                                reduction="sum")
        return total / chosen.sum().clamp(min=1), ((logits.argmax(-1) == labels) & chosen).sum()


class BertClassifier(nn.Module):
    """The encoder and a classifier on the ``[CLS]`` token: ``tanh(h_0 W_p + b_p) W_c + b_c``."""

    def __init__(self, config: BertConfig, num_labels: int = 2) -> None:
        super().__init__()
        self.config = config
        self.num_labels = positive_int("num_labels", num_labels)
        self.encoder = BertEncoder(config)
        self.pooler = nn.Sequential(nn.Linear(config.hidden_dim, config.hidden_dim), nn.Tanh())
        self.drop = nn.Dropout(config.dropout)
        self.head = nn.Linear(config.hidden_dim, num_labels)
        self.pooler.apply(_init_weights)
        self.head.apply(_init_weights)

    def forward(self, input_ids: Tensor, token_type_ids: Tensor | None = None,
                padding_mask: Tensor | None = None) -> Tensor:
        """Class logits ``(B, num_labels)``."""
        h = self.encoder(input_ids, token_type_ids, padding_mask)
        return self.head(self.drop(self.pooler(h[:, 0])))

    @classmethod
    def from_pretrained(cls, mlm: BertForMaskedLM, num_labels: int = 2, dropout: float | None = None
                        ) -> "BertClassifier":
        """A classifier whose encoder starts from a pretrained :class:`BertForMaskedLM`'s (a copy)."""
        config = mlm.config if dropout is None else replace(mlm.config, dropout=dropout)
        model = cls(config, num_labels)
        model.encoder.load_state_dict(mlm.encoder.state_dict())
        return model


def composite_layers(model: nn.Module) -> list[CompositeAttention]:
    """The :class:`~attnconv.composite.CompositeAttention` layers of a BERT, block by block."""
    return [m for m in model.modules() if isinstance(m, CompositeAttention)]

