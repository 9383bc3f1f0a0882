"""The paper's attention network (every attention kind), the ResNet18 baseline, and their counts."""

from __future__ import annotations

import dataclasses

import pytest
import torch
from torch import nn

from attnconv.models import (ATTENTION_KINDS, MODEL_NAMES, ResNet, ResNetConfig, SelfAttentionNet, VisionConfig,
                             build_model, count_parameters, gaussian_parameters, make_attention, model_cost,
                             no_weight_decay)
from attnconv.positional import AnisotropicGaussianEncoding, LearnedRelativeEncoding2d, QuadraticEncoding

TINY = VisionConfig(hidden_dim=16, depth=2, num_heads=4, head_dim=8, mlp_dim=32, dropout=0.0)


@pytest.mark.parametrize("kind", ATTENTION_KINDS)
def test_every_kind_trains(kind):
    torch.manual_seed(0)
    model = SelfAttentionNet(dataclasses.replace(TINY, attention=kind))
    x = torch.randn(3, 32, 32, 3)
    logits = model(x)
    assert logits.shape == (3, 10)
    logits.sum().backward()
    for name, p in model.named_parameters():
        assert p.grad is not None and torch.isfinite(p.grad).all(), name
    probs = model.attention_probs(x)
    assert len(probs) == 2 and probs[0].shape == (3, 4, 256, 256)
    torch.testing.assert_close(probs[1].sum(-1), torch.ones(3, 4, 256))


def test_kinds_map_to_the_library_encodings():
    expected = {"quadratic": (QuadraticEncoding, False), "anisotropic": (AnisotropicGaussianEncoding, False),
                "learned": (LearnedRelativeEncoding2d, False), "learned_content": (LearnedRelativeEncoding2d, True),
                "content": (type(None), True)}
    for kind, (cls, content) in expected.items():
        layer = make_attention(dataclasses.replace(TINY, attention=kind))
        assert type(layer.positional) is cls and layer.content is content, kind
        assert layer.shared_values and layer.head_dim == 8
    learned = make_attention(dataclasses.replace(TINY, attention="learned_content")).positional
    assert learned.query_dependent and learned.max_size == 16


def test_content_free_attention_is_the_same_for_every_image():
    model = SelfAttentionNet(dataclasses.replace(TINY, attention="quadratic")).eval()
    probs = model.attention_probs(torch.randn(2, 32, 32, 3))[0]
    assert torch.equal(probs[0], probs[1])
    content = SelfAttentionNet(dataclasses.replace(TINY, attention="learned_content")).eval()
    probs = content.attention_probs(torch.randn(2, 32, 32, 3))[0]
    assert not torch.allclose(probs[0], probs[1])


def test_paper_sizes_and_flops():
    """Parameters and FLOPs at paper size against Cordonnier et al.'s table (12.1M, 12.3M, 29.5M; 6.2 GFLOPs)."""
    paper = {"sa-quadratic": 12.1e6, "sa-learned": 12.3e6, "sa-learned-content": 29.5e6}
    for name, params in paper.items():
        with torch.device("meta"):
            model = build_model(name, VisionConfig())
        assert abs(count_parameters(model) - params) / params < 0.01, (name, count_parameters(model))
    with torch.device("meta"):  # the counts of a real model (test_model_cost_on_meta_tensors_equals_...)
        cost = model_cost(build_model("sa-quadratic", VisionConfig()))
    assert cost.params == 12_086_844
    assert abs(cost.weight_flops - 6.2e9) / 6.2e9 < 0.01  # the paper's convention: 2 x params x 256 tokens
    assert cost.flops > cost.weight_flops
    with torch.device("meta"):
        resnet = model_cost(ResNet(ResNetConfig()))
    assert resnet.params == 11_173_962 and abs(resnet.flops - 1.11e9) / 1.11e9 < 0.01
    assert resnet.attention_flops == 0


@pytest.mark.parametrize("name", MODEL_NAMES)
def test_model_cost_on_meta_tensors_equals_the_cost_on_the_cpu(name):
    """Chapter 06 counts the paper-size models built on the meta device (shapes only: nothing is allocated,
    initialised or computed): every count must be the one a real model gives."""
    config = ResNetConfig(width=8, blocks=(1, 1)) if name == "resnet18" else TINY
    torch.manual_seed(0)
    real = model_cost(build_model(name, config))
    with torch.device("meta"):
        shapes_only = build_model(name, config)
    assert next(shapes_only.parameters()).is_meta
    assert model_cost(shapes_only) == real and real.flops >= real.weight_flops > 0


def test_weight_flops_are_two_per_weight_per_token():
    model = SelfAttentionNet(TINY)
    cost = model_cost(model)
    tokens = 16 * 16
    linear = [m for m in model.modules() if isinstance(m, nn.Linear)]
    per_token = sum(m.weight.numel() for m in linear if m is not model.head)
    assert cost.weight_flops == 2 * tokens * per_token + 2 * model.head.weight.numel()
    # attention products A V: one (N x N) @ (N x D_h) product per head and layer, here factorised per axis
    assert cost.attention_flops > 0
    content = model_cost(SelfAttentionNet(dataclasses.replace(TINY, attention="content")))
    assert content.attention_flops == 2 * 2 * 2 * (4 * 256 * 256 * 8)  # 2 layers x (Q Kᵀ, A V) x 2 FLOPs per MAC


def test_model_cost_keeps_the_mode():
    model = SelfAttentionNet(TINY).train()
    model_cost(model)
    assert model.training


def test_gaussian_parameters_and_weight_decay_exclusions():
    quad = SelfAttentionNet(dataclasses.replace(TINY, attention="quadratic"))
    layers = gaussian_parameters(quad)
    assert len(layers) == 2 and layers[0]["centers"].shape == (4, 2)
    enc = quad.blocks[0].attn.positional
    torch.testing.assert_close(layers[0]["precision"], enc.alpha.detach()[:, None, None] * torch.eye(2))
    assert no_weight_decay(quad) == {f"blocks.{i}.attn.positional.{n}" for i in range(2) for n in ("centers", "log_alpha")}
    aniso = SelfAttentionNet(dataclasses.replace(TINY, attention="anisotropic"))
    torch.testing.assert_close(gaussian_parameters(aniso)[1]["precision"],
                               aniso.blocks[1].attn.positional.precision().detach())
    assert len(no_weight_decay(aniso)) == 6
    learned = SelfAttentionNet(dataclasses.replace(TINY, attention="learned"))
    assert gaussian_parameters(learned) == [] and no_weight_decay(learned) == set()


def test_resnet_forward_and_shape():
    model = ResNet(ResNetConfig(width=4, blocks=(1, 1, 1, 1)))
    assert model(torch.randn(2, 32, 32, 3)).shape == (2, 10)
    assert model.stages[-1].conv2.out_channels == 32


def test_build_model_names():
    assert MODEL_NAMES == ("resnet18", "sa-quadratic", "sa-anisotropic", "sa-learned", "sa-learned-content", "sa-content",
                           "sa-gpsa")
    model = build_model("sa-learned-content", TINY)
    assert model.config.attention == "learned_content" and TINY.attention == "quadratic"


def test_bad_configs_and_inputs():
    with pytest.raises(ValueError, match="attention must be one of"):
        VisionConfig(attention="sparse")
    with pytest.raises(ValueError, match="must be divisible by block"):
        VisionConfig(image_size=30, block=4)
    with pytest.raises(ValueError, match="hidden_dim must be a positive integer"):
        VisionConfig(hidden_dim=0)
    with pytest.raises(ValueError, match="dropout must be in"):
        VisionConfig(dropout=1.0)
    with pytest.raises(ValueError, match="even hidden_dim"):
        VisionConfig(attention="learned", hidden_dim=15)
    with pytest.raises(ValueError, match="even head_dim"):
        VisionConfig(attention="learned_content", head_dim=7)
    with pytest.raises(ValueError, match="every entry of blocks must be a positive integer"):
        ResNetConfig(blocks=(2, 0))
    with pytest.raises(ValueError, match="blocks must be a non-empty"):
        ResNetConfig(blocks=())
    with pytest.raises(ValueError, match="name must be one of"):
        build_model("vit", TINY)
    with pytest.raises(ValueError, match="resnet18 needs a ResNetConfig"):
        build_model("resnet18", TINY)
    with pytest.raises(ValueError, match="sa-quadratic needs a VisionConfig"):
        build_model("sa-quadratic", ResNetConfig())
    with pytest.raises(ValueError, match=r"images must be \(B, 32, 32, 3\)"):
        SelfAttentionNet(TINY)(torch.randn(2, 3, 32, 32))
    with pytest.raises(ValueError, match=r"images must be \(B, H, W, 3\)"):
        ResNet(ResNetConfig(width=4))(torch.randn(2, 3, 32, 32))


def _stream_dtypes(net: SelfAttentionNet, images: torch.Tensor) -> set[torch.dtype]:
    """The dtypes of the residual stream: every block's input and both of its LayerNorms' outputs."""
    seen: set[torch.dtype] = set()
    hooks = [m.register_forward_hook(lambda _m, _i, out: seen.add(out.dtype))
             for block in net.blocks for m in (block.norm1, block.norm2)]
    hooks += [block.register_forward_pre_hook(lambda _m, args: seen.add(args[0].dtype)) for block in net.blocks]
    try:
        net(images)
    finally:
        for h in hooks:
            h.remove()
    return seen


@pytest.mark.parametrize("kind", ["quadratic", "learned"])
def test_residual_stream_stays_in_the_parameters_dtype_under_bf16_autocast(kind):
    """Under bfloat16 autocast the products run in bfloat16 but the residual stream (sums and LayerNorms) stays
    float32; a stream carried in bfloat16 made the cpu-long learned-encoding run diverge. A bfloat16 model keeps
    its stream in bfloat16, its parameters' dtype."""
    torch.manual_seed(0)
    config = VisionConfig(attention=kind, hidden_dim=16, depth=2, num_heads=4, head_dim=8, mlp_dim=32)
    net = SelfAttentionNet(config).eval()
    images = torch.randn(2, 32, 32, 3)
    products: list[torch.dtype] = []
    hook = net.blocks[0].mlp[0].register_forward_hook(lambda _m, _i, out: products.append(out.dtype))
    with torch.autocast("cpu", dtype=torch.bfloat16):
        assert _stream_dtypes(net, images) == {torch.float32}
    hook.remove()
    assert products == [torch.bfloat16], "the products themselves still run in bfloat16"
    # the wrong variant: the embedding's bfloat16 product handed on as it is, as the model once did
    plain = net.tokens
    net.tokens = lambda x: plain(x).to(torch.bfloat16)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        assert _stream_dtypes(net, images) == {torch.bfloat16}
    del net.tokens
    assert _stream_dtypes(net.bfloat16(), images.bfloat16()) == {torch.bfloat16}
    assert _stream_dtypes(net.float(), images) == {torch.float32}
