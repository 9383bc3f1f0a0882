"""The fully attentional image classifier of Cordonnier et al. 2020 (Sec. 4), built from the library's layers::

    image (B, 32, 32, 3)
      -> 2x2 space-to-depth                       (B, 16, 16, 12)
      -> linear to the hidden size D              (B, 16, 16, D)
      -> L post-LayerNorm blocks:
             x = LN(x + Dropout(MHSA(x)))
             x = LN(x + Dropout(W_2 GELU(W_1 x)))
      -> mean over the 16 x 16 tokens             (B, D)
      -> linear to the classes                    (B, 10)

There is no absolute position anywhere: where a head looks comes only from its relative positional encoding.
The ``"gpsa"`` kind swaps each attention layer for ConViT's gated positional self-attention (d'Ascoli et al.
2021), started local; :func:`gpsa_gates` reads each layer's gates σ(λ_h).
At paper size (D = 400, L = 6, N_h = 9 heads of D_h = 400 with one shared value projection, a 512-wide
feed-forward) the quadratic model has 12.1M parameters.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import Tensor, nn

from .._checks import floating_input, positive_int, probability
from ..attention import MultiHeadSelfAttention
from ..dropout import Dropout
from ..gpsa import GatedPositionalSelfAttention
from ..positional import AnisotropicGaussianEncoding, LearnedRelativeEncoding2d, PositionalLogits, QuadraticEncoding
from ..tokens import space_to_depth

__all__ = ["ATTENTION_KINDS", "INIT_KINDS", "AttentionBlock", "SelfAttentionNet", "VisionConfig", "gaussian_parameters",
           "gpsa_gates", "make_attention", "no_weight_decay"]

ATTENTION_KINDS = ("quadratic", "anisotropic", "learned", "learned_content", "content", "gpsa")
INIT_KINDS = ("random", "grid")


@dataclass
class VisionConfig:
    """Every size of :class:`SelfAttentionNet`; the defaults are the paper's quadratic model.

    Attributes:
        attention: how heads decide where to look, one of ``ATTENTION_KINDS``:
            ``"quadratic"`` (isotropic Gaussian around a learned centre Δ^(h), width 1/α^(h)),
            ``"anisotropic"`` (Gaussian with a full 2x2 precision), ``"learned"`` (learned 2-D relative
            embeddings, no content), ``"learned_content"`` (query-dependent relative embeddings plus the
            content term), ``"content"`` (content only: no positions at all), ``"gpsa"`` (ConViT's gated
            positional self-attention: per head, a gate σ(λ_h) mixes a content softmax with a quadratic
            positional softmax placed on the √N_h x √N_h grid of shifts with α = ``init_alpha``; needs a square
            ``num_heads``; each head has its own value projection, so ``shared_values`` does not apply).
        image_size: side of the square input images.
        in_channels: channels of the input images.
        block: space-to-depth block; tokens form an (image_size / block)² grid.
        hidden_dim: D, the width of every token.
        depth: L, the number of blocks.
        num_heads: N_h.
        head_dim: D_h; the paper uses D_h = D = 400.
        mlp_dim: width of the feed-forward layer.
        dropout: dropout on the outputs of attention and of the feed-forward, before each residual sum.
        attention_dropout: dropout on the attention probabilities (0 keeps the content-free kinds on their
            factorised fast path).
        shared_values: one value projection for all heads, as in the paper's implementation.
        num_classes: outputs of the classifier.
        init: where the Gaussian heads of ``"quadratic"`` attention start: ``"random"`` (centres drawn from
            N(0, ``init_center_std``²), as in the paper's code) or ``"grid"`` (one head on each tap of a
            √N_h x √N_h kernel, the construction of Theorem 1; needs a square ``num_heads``).
        init_alpha: the starting α^(h) of every quadratic head. The paper's code starts its Gaussian spread at
            about 1 with the logit -½ s² ‖δ - Δ‖², which is α = s²/2 ≈ 0.5.
        init_center_std: spread of the random initial centres.
    """

    attention: str = "quadratic"
    image_size: int = 32
    in_channels: int = 3
    block: int = 2
    hidden_dim: int = 400
    depth: int = 6
    num_heads: int = 9
    head_dim: int = 400
    mlp_dim: int = 512
    dropout: float = 0.1
    attention_dropout: float = 0.0
    shared_values: bool = True
    num_classes: int = 10
    init: str = "random"
    init_alpha: float = 0.5
    init_center_std: float = 2.0

    def __post_init__(self) -> None:
        if self.attention not in ATTENTION_KINDS:
            raise ValueError(f"attention must be one of {ATTENTION_KINDS}, got {self.attention!r}")
        for name in ("image_size", "in_channels", "block", "hidden_dim", "depth", "num_heads", "head_dim",
                     "mlp_dim", "num_classes"):
            positive_int(name, getattr(self, name))
        if self.image_size % self.block:
            raise ValueError(f"image_size ({self.image_size}) must be divisible by block ({self.block})")
        for name in ("dropout", "attention_dropout"):
            probability(name, getattr(self, name))
        if self.init not in INIT_KINDS:
            raise ValueError(f"init must be one of {INIT_KINDS}, got {self.init!r}")
        if self.init == "grid" and math.isqrt(self.num_heads) ** 2 != self.num_heads:
            raise ValueError(f"init='grid' needs a square num_heads (K x K taps), got {self.num_heads}")
        if self.attention == "gpsa" and math.isqrt(self.num_heads) ** 2 != self.num_heads:
            raise ValueError(f"attention='gpsa' starts its heads on a K x K grid of shifts: num_heads must be a "
                             f"square, got {self.num_heads}")
        if not (math.isfinite(self.init_alpha) and self.init_alpha > 0):
            raise ValueError(f"init_alpha must be finite and > 0, got {self.init_alpha!r}")
        if not (math.isfinite(self.init_center_std) and self.init_center_std >= 0):
            raise ValueError(f"init_center_std must be finite and >= 0, got {self.init_center_std!r}")
        if self.attention == "learned" and self.hidden_dim % 2:
            raise ValueError(f"attention='learned' needs an even hidden_dim (rows and columns), got {self.hidden_dim}")
        if self.attention == "learned_content" and self.head_dim % 2:
            raise ValueError(f"attention='learned_content' needs an even head_dim, got {self.head_dim}")

    @property
    def grid(self) -> tuple[int, int]:
        """(H, W) of the token grid."""
        side = self.image_size // self.block
        return side, side


def make_attention(config: VisionConfig) -> MultiHeadSelfAttention:
    """One attention layer of the kind ``config.attention``: the only place the kinds are mapped to encodings."""
    side = config.grid[0]
    if config.attention == "gpsa":  # ConViT's local start: the default positional term of the layer
        return GatedPositionalSelfAttention(config.hidden_dim, config.num_heads, head_dim=config.head_dim,
                                            locality_strength=config.init_alpha, dropout=config.attention_dropout)
    positional: PositionalLogits | None
    content = False
    if config.attention == "quadratic":
        if config.init == "grid":
            positional = QuadraticEncoding.from_kernel(math.isqrt(config.num_heads), alpha=config.init_alpha)
        else:
            positional = QuadraticEncoding(config.num_heads, alpha=config.init_alpha,
                                           init_center_std=config.init_center_std)
    elif config.attention == "anisotropic":
        positional = AnisotropicGaussianEncoding(config.num_heads)
    elif config.attention == "learned":
        positional = LearnedRelativeEncoding2d(config.num_heads, max_size=side, dim=config.hidden_dim)
    elif config.attention == "learned_content":
        positional = LearnedRelativeEncoding2d(config.num_heads, max_size=side, dim=config.head_dim,
                                               query_dependent=True)
        content = True
    else:  # "content"
        positional, content = None, True
    return MultiHeadSelfAttention(config.hidden_dim, config.num_heads, head_dim=config.head_dim,
                                  positional=positional, content=content, dropout=config.attention_dropout,
                                  shared_values=config.shared_values)


class AttentionBlock(nn.Module):
    """One post-LayerNorm encoder block (as in BERT): attention, then a GELU feed-forward, each added and normalised.

    Shapes: ``(B, H, W, D)`` in and out.
    """

    def __init__(self, config: VisionConfig) -> None:
        super().__init__()
        self.attn = make_attention(config)
        self.norm1 = nn.LayerNorm(config.hidden_dim)
        self.mlp = nn.Sequential(nn.Linear(config.hidden_dim, config.mlp_dim), nn.GELU(),
                                 nn.Linear(config.mlp_dim, config.hidden_dim))
        self.norm2 = nn.LayerNorm(config.hidden_dim)
        self.drop = Dropout(config.dropout)  # nn.Dropout's distribution, cheaper random numbers

    def forward(self, x: Tensor, need_weights: bool = False) -> tuple[Tensor, Tensor | None]:
        """Returns ``(x, probs)``; ``probs`` is ``(B, N_h, N, N)`` when ``need_weights``, else ``None``."""
        attended, probs = self.attn(x, need_weights=need_weights)
        x = self.norm1(x + self.drop(attended))
        x = self.norm2(x + self.drop(self.mlp(x)))
        return x, probs


class SelfAttentionNet(nn.Module):
    """Cordonnier et al.'s attention-only CIFAR classifier (see the module docstring for the layout).

    Input: normalised images ``(B, H, W, C)`` (channels last, as :class:`~attnconv.data.augment.CropFlip` returns
    them). Output: logits ``(B, num_classes)``.
    """

    def __init__(self, config: VisionConfig) -> None:
        super().__init__()
        self.config = config
        self.embed = nn.Linear(config.block**2 * config.in_channels, config.hidden_dim)
        self.blocks = nn.ModuleList(AttentionBlock(config) for _ in range(config.depth))
        self.head = nn.Linear(config.hidden_dim, config.num_classes)

    def tokens(self, images: Tensor) -> Tensor:
        """``(B, H, W, C)`` -> the embedded token grid ``(B, H / block, W / block, D)``."""
        c = self.config
        floating_input("images", images, self.embed.weight.dtype)
        if images.dim() != 4 or tuple(images.shape[1:]) != (c.image_size, c.image_size, c.in_channels):
            raise ValueError(f"images must be (B, {c.image_size}, {c.image_size}, {c.in_channels}), "
                             f"got shape {tuple(images.shape)}")
        # The residual stream stays in the parameters' dtype. Under bfloat16 autocast the products still run in
        # bfloat16, but the sums around them and the LayerNorms then run in float32: a stream kept in bfloat16 (the
        # embedding's product, carried through every block) made the learned-encoding model diverge at the
        # recipe's learning rate (benchmarks/bf16_divergence.py).
        return self.embed(space_to_depth(images, c.block)).to(self.embed.weight.dtype)

    def forward(self, images: Tensor) -> Tensor:
        x = self.tokens(images)  # (B, H', W', D)
        for block in self.blocks:
            x, _ = block(x)
        return self.head(x.mean(dim=(1, 2)))  # mean pool over tokens -> (B, num_classes)

    @torch.no_grad()
    def attention_probs(self, images: Tensor) -> list[Tensor]:
        """Every layer's attention probabilities on ``images``: a list of L tensors ``(B, N_h, N, N)``."""
        x = self.tokens(images)
        out = []
        for block in self.blocks:
            x, probs = block(x, need_weights=True)
            out.append(probs)
        return out


def gaussian_parameters(model: nn.Module) -> list[dict[str, Tensor]]:
    """The centres Δ^(h) ``(N_h, 2)`` and precisions ``(N_h, 2, 2)`` of every Gaussian layer, in order.

    For the quadratic encoding the precision is α^(h) I; for the anisotropic one it is Σ^(h)^-1. Returns an
    empty list for models without Gaussian attention. Tensors are detached float copies on the CPU.
    """
    out = []
    for module in model.modules():
        if isinstance(module, QuadraticEncoding):
            eye = torch.eye(module.dims, dtype=module.centers.dtype, device=module.centers.device)
            precision = module.alpha[:, None, None] * eye
        elif isinstance(module, AnisotropicGaussianEncoding):
            precision = module.precision()
        else:
            continue
        out.append({"centers": module.centers.detach().float().cpu().clone(),
                    "precision": precision.detach().float().cpu().clone()})
    return out


def gpsa_gates(model: nn.Module) -> list[Tensor]:
    """The gates σ(λ_h) ``(N_h,)`` of every GPSA layer, in order: the weight each head puts on its positional map
    (1 - σ(λ_h) goes to content). An empty list for models without GPSA. Detached float copies on the CPU."""
    return [torch.sigmoid(m.gating.detach().float()).cpu() for m in model.modules()
            if isinstance(m, GatedPositionalSelfAttention)]


def no_weight_decay(model: nn.Module) -> set[str]:
    """Names of the parameters the paper trains without weight decay: the Gaussian centres and spreads; and GPSA's
    gate logits λ_h, as ConViT (whose optimiser decays no 1-D parameter): decay would pull every gate to ½."""
    names = set()
    for prefix, module in model.named_modules():
        if isinstance(module, (QuadraticEncoding, AnisotropicGaussianEncoding)):
            names.update(f"{prefix}.{n}" if prefix else n for n, _ in module.named_parameters())
        elif isinstance(module, GatedPositionalSelfAttention):
            names.add(f"{prefix}.gating" if prefix else "gating")
    return names
