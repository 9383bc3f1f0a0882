"""Every public layer of the library under the tools PyTorch users take it to: the meta device, ``torch.func.vmap``
and ``torch.jit.trace``, and every dtype a model is moved to.

Each layer has data-dependent checks (finite results, masks that keep a key, ids in range); they read values on the
host, which none of these tools allows. ``attnconv._checks.values_readable`` is the one place that says when to
skip them, and these tests hold every layer to it. Sizes are tiny: the whole file runs in seconds.
"""

from __future__ import annotations

import importlib
import pkgutil
from dataclasses import dataclass
from typing import Callable

import pytest
import torch
from torch import Tensor, nn

import attnconv
from attnconv import (CompositeAttention, DepthwiseSeparableConv1d, DynamicConv1d, GatedPositionalSelfAttention,
                      LightweightConv1d, MultiHeadSelfAttention)
from attnconv._checks import values_readable
from attnconv.construct import conv_to_mhsa
from attnconv.finite import deferred_finite_checks
from attnconv.conv_projections import GroupedConv1d, MixedProjection
from attnconv.lightconv import ProjectedConv1d
from attnconv.models import (ATTENTION_KINDS, VARIANTS, BertClassifier, BertConfig, BertForMaskedLM, ResNet,
                             ResNetConfig, SelfAttentionNet, SmallCNN, VisionConfig)
from attnconv.positional import (ALiBi, AnisotropicGaussianEncoding, KeyRelativeLogits, LearnedRelativeEncoding2d,
                                 QuadraticEncoding, QueryRelativeLogits, RelativePositionBias, RotaryEmbedding,
                                 SignedQuadraticEncoding)
from attnconv.composite import RelativeLogitSum
from attnconv.construct.patches import conv_to_patch_mhsa
from attnconv.toeplitz import ToeplitzMultiplier

# jit.trace is deprecated in favour of torch.compile and torch.export, but people still use it; vmap falls back to a
# loop for the fused CPU attention kernel.
pytestmark = [pytest.mark.filterwarnings("ignore::DeprecationWarning"),
              pytest.mark.filterwarnings("ignore::torch.jit.TracerWarning"),
              pytest.mark.filterwarnings("ignore:There is a performance drop:UserWarning")]

B, N, C = 2, 5, 8  # batch, tokens, channels of the sequence layers
GRID = (3, 4)  # the image layers' token grid


def _seq(dtype=None) -> Tensor:
    return torch.randn(B, N, C, dtype=dtype)


def _img(channels: int = C, dtype=None) -> Tensor:
    return torch.randn(B, *GRID, channels, dtype=dtype)


def _mask() -> Tensor:
    mask = torch.zeros(B, N, dtype=torch.bool)
    mask[0, -2:] = True  # the first sequence is padded: the masked paths run
    return mask


@dataclass
class Case:
    """A layer, how to build it, and its example inputs (a tuple; the first is the one whose dtype follows the
    layer's)."""

    build: Callable[[], nn.Module]
    inputs: Callable[[], tuple[Tensor, ...]]
    kwargs: dict | None = None  # keyword arguments of the call (need_weights=True, ...)

    def __post_init__(self) -> None:
        self.kwargs = self.kwargs or {}


def _seq_case(build, mask: bool = False, **kwargs) -> Case:
    return Case(build, (lambda: (_seq(), _mask())) if mask else (lambda: (_seq(),)), kwargs)


def _img_case(build, channels: int = C, **kwargs) -> Case:
    return Case(build, lambda: (_img(channels),), kwargs)


def _mhsa(positional=None, content=True, **kw) -> Callable[[], nn.Module]:
    def build() -> nn.Module:
        encoding = None if positional is None else positional()
        heads = 4 if encoding is None else encoding.num_heads
        return MultiHeadSelfAttention(C, heads, head_dim=kw.pop("head_dim", 4), positional=encoding, content=content,
                                      **kw)
    return build


def _bert(variant: str, classifier: bool = False) -> Callable[[], nn.Module]:
    config = BertConfig(vocab_size=30, hidden_dim=8, depth=1, num_heads=2, mlp_dim=16, max_length=8, variant=variant,
                        max_distance=2, dropout=0.0)
    return lambda: BertClassifier(config, 3) if classifier else BertForMaskedLM(config)


def _ids() -> tuple[Tensor, ...]:
    ids = torch.randint(1, 30, (B, 7))
    padding = torch.zeros(B, 7, dtype=torch.bool)
    padding[1, -3:] = True
    return ids, torch.zeros_like(ids), padding


def _vision(kind: str) -> Callable[[], nn.Module]:
    return lambda: SelfAttentionNet(VisionConfig(attention=kind, image_size=8, block=2, hidden_dim=8, depth=1,
                                                 num_heads=4, head_dim=8, mlp_dim=8, dropout=0.0))


def _conv_as_attention(alpha) -> Callable[[], nn.Module]:
    return lambda: conv_to_mhsa(nn.Conv2d(3, 4, 3, padding=1), alpha=alpha)


CASES: dict[str, Case] = {
    # multi-head self-attention, its paths and every positional encoding in it
    "mhsa": _seq_case(_mhsa()),
    "mhsa-padded": _seq_case(_mhsa(), mask=True),
    "mhsa-weights": _seq_case(_mhsa(), need_weights=True),
    "mhsa-image": _img_case(_mhsa()),
    "mhsa-shared-values": _seq_case(_mhsa(head_dim=8, shared_values=True)),
    "quadratic": _img_case(_mhsa(lambda: QuadraticEncoding(4, dims=2), content=False)),
    "quadratic-weights": _img_case(_mhsa(lambda: QuadraticEncoding(4, dims=2), content=False), need_weights=True),
    "quadratic-hard": _img_case(_mhsa(lambda: QuadraticEncoding.from_kernel(3, alpha=None), content=False)),
    "quadratic-content": _img_case(_mhsa(lambda: QuadraticEncoding.local_init(4))),
    "signed-quadratic": _img_case(_mhsa(lambda: SignedQuadraticEncoding(torch.randn(4, 3)), content=False)),
    "anisotropic": _img_case(_mhsa(lambda: AnisotropicGaussianEncoding(4), content=False)),
    "learned": _img_case(_mhsa(lambda: LearnedRelativeEncoding2d(4, max_size=4, dim=8), content=False)),
    "learned-content": _img_case(lambda: MultiHeadSelfAttention(
        C, 4, head_dim=8, positional=LearnedRelativeEncoding2d(4, max_size=4, dim=8, query_dependent=True))),
    "relative-bias": _seq_case(_mhsa(lambda: RelativePositionBias(2, 2), content=False)),
    "relative-bias-window-padded": _seq_case(_mhsa(lambda: RelativePositionBias(2, 1, window=True), content=False),
                                             mask=True),
    "relative-bias-buckets": _seq_case(_mhsa(lambda: RelativePositionBias(2, 8, num_buckets=8))),
    "query-relative": _seq_case(_mhsa(lambda: QueryRelativeLogits(2, 4, 2))),
    "key-relative": _seq_case(_mhsa(lambda: KeyRelativeLogits(2, 4, 2, causal=True)), mask=True),
    "alibi": _seq_case(_mhsa(lambda: ALiBi(2, causal=True), content=False)),
    "relative-sum": _seq_case(_mhsa(lambda: RelativeLogitSum([RelativePositionBias(2, 2), ALiBi(2)]),
                                    content=False)),
    # composite attention (Chang et al.)
    "composite": _seq_case(lambda: CompositeAttention(C, 2, 2, max_length=16), mask=True),
    "composite-dynamic": _seq_case(lambda: CompositeAttention(C, 2, 2, max_length=16, query_dynamic=True,
                                                              key_dynamic=True, query_chunk=2)),
    "composite-window-padded": _seq_case(lambda: CompositeAttention(C, 2, 1, max_length=16, window=True), mask=True,
                                         need_weights=True),
    "composite-position-only": _seq_case(lambda: CompositeAttention(C, 2, 2, max_length=16, content=False)),
    "composite-conv-projections": _seq_case(lambda: CompositeAttention(
        C, 2, 2, max_length=16, conv_projections=("query", "key", "value"), conv_activation="gelu"), mask=True),
    "composite-grouped": _seq_case(lambda: CompositeAttention(C, 2, 2, max_length=16, conv_projections=("key",),
                                                              conv_groups=2)),
    "composite-mixed": _seq_case(lambda: CompositeAttention(C, 2, 2, max_length=16, conv_projections=("value",),
                                                            mixed_projections=True)),
    "composite-value-conv": _seq_case(lambda: CompositeAttention(C, 2, 2, max_length=16, value_conv=True,
                                                                 value_conv_scale="per_head"), mask=True),
    # gated positional self-attention (ConViT)
    "gpsa": _img_case(lambda: GatedPositionalSelfAttention(C, 4)),
    "gpsa-signed": _img_case(lambda: GatedPositionalSelfAttention(C, 4, positional=SignedQuadraticEncoding(
        torch.randn(4, 3)))),
    # lightweight, dynamic and depthwise-separable convolutions
    "lightconv": _seq_case(lambda: LightweightConv1d(C, 2, 3, bias=True)),
    "lightconv-renormalize": _seq_case(lambda: LightweightConv1d(C, 2, 3, boundary="renormalize"), mask=True),
    "lightconv-causal": _seq_case(lambda: LightweightConv1d(C, 2, 4, causal=True)),
    "lightconv-signed": _seq_case(lambda: LightweightConv1d(C, 2, 3, weight_softmax=False)),
    "dynamic": _seq_case(lambda: DynamicConv1d(C, 2, 3, conv_bias=True)),
    "dynamic-renormalize": _seq_case(lambda: DynamicConv1d(C, 2, 3, boundary="renormalize"), mask=True),
    "dynamic-cut-long-kernel": _seq_case(lambda: DynamicConv1d(C, 2, 7, causal=True, cut_long_kernel=True)),
    "depthwise-separable": _seq_case(lambda: DepthwiseSeparableConv1d(C, 6, 3, activation="gelu",
                                                                      depth_multiplier=2), mask=True),
    "grouped-conv": _seq_case(lambda: GroupedConv1d(C, 6, 3, groups=2)),
    "mixed-projection": _seq_case(lambda: MixedProjection(C, 4, 2, 1, 3)),
    "projected-lightconv": _seq_case(lambda: ProjectedConv1d(LightweightConv1d(6, 2, 3, boundary="renormalize"),
                                                             nn.Linear(C, 6), nn.Linear(6, C)), mask=True),
    "projected-dynamic": _seq_case(lambda: ProjectedConv1d(DynamicConv1d(C, 2, 3, value_dim=6), nn.Linear(C, 6),
                                                           nn.Linear(6, C))),
    # Theorem 1: a convolution as attention
    "conv-as-attention-hard": Case(_conv_as_attention(None), lambda: (torch.randn(B, 3, 5, 4),)),
    "conv-as-attention-soft": Case(_conv_as_attention(4.0), lambda: (torch.randn(B, 3, 5, 4),)),
    "patch-conv-as-attention": Case(lambda: conv_to_patch_mhsa(nn.Conv2d(3, 4, 3, padding=1), 2),
                                    lambda: (torch.randn(B, 3, 4, 6),)),
    # after the papers: rotary embeddings, a Toeplitz multiplier on attention probabilities
    "rotary": Case(lambda: RotaryEmbedding(4), lambda: (torch.randn(B, 2, N, 4),)),
    "toeplitz": Case(lambda: ToeplitzMultiplier(8, 2), lambda: (torch.softmax(torch.randn(B, 2, N, N), -1),)),
    # the models
    **{f"vision-{kind}": Case(_vision(kind), lambda: (torch.randn(B, 8, 8, 3),)) for kind in ATTENTION_KINDS},
    "resnet": Case(lambda: ResNet(ResNetConfig(width=4, blocks=(1, 1))), lambda: (torch.randn(B, 8, 8, 3),)),
    "small-cnn": Case(lambda: SmallCNN(width=4), lambda: (torch.randint(0, 256, (B, 8, 8, 3), dtype=torch.uint8),)),
    **{f"bert-{variant}": Case(_bert(variant), _ids) for variant in VARIANTS},
    "bert-classifier": Case(_bert("composite", classifier=True), _ids),
}


# The library's modules whose nn.Module classes are layers (not the course, the figures, the data or the
# explorables), and the classes among them that are no layer of their own.
LAYER_PACKAGES = ("attnconv", "attnconv.construct", "attnconv.models", "attnconv.positional", "attnconv.train")
NOT_LAYERS = {
    "attnconv.positional.base.PositionalLogits": "the base class of every positional encoding",
    "attnconv.positional.sequence.RelativeLogits1d": "the base class of the sequence encodings",
    "attnconv.positional.sequence.StaticRelativeLogits": "the base class of the content-free sequence encodings",
    "attnconv.lightconv._HeadKernelConv1d": "the private base of LightweightConv1d and DynamicConv1d",
    "attnconv.train.bow.BagOfWordsLinear": "chapter 07's bag-of-words baseline, fitted by L-BFGS on a flat bag",
}


def library_layers() -> set[type]:
    """Every ``nn.Module`` subclass that a module of :data:`LAYER_PACKAGES` defines (found by importing them)."""
    found = set()
    for package_name in LAYER_PACKAGES:
        package = importlib.import_module(package_name)
        names = [package_name] + [f"{package_name}.{info.name}" for info in pkgutil.iter_modules(package.__path__)
                                  if not info.ispkg and info.name != "__main__"]
        for module_name in names:
            module = importlib.import_module(module_name)
            found |= {obj for obj in vars(module).values() if isinstance(obj, type) and issubclass(obj, nn.Module)
                      and obj.__module__ == module_name}
    return found


def test_the_cases_cover_every_layer_the_library_defines():
    """Each ``nn.Module`` class the library defines (found, not listed) is built by some case, or is named in
    :data:`NOT_LAYERS` with the reason; a new layer without a case fails here."""
    found = library_layers()
    assert set(NOT_LAYERS) <= {f"{t.__module__}.{t.__qualname__}" for t in found}  # no stale exclusion
    layers = {t for t in found if f"{t.__module__}.{t.__qualname__}" not in NOT_LAYERS}
    assert {getattr(attnconv, name) for name in attnconv.__all__ if isinstance(getattr(attnconv, name), type)} <= layers
    assert len(layers) >= 30  # the search found the layers (33 when this was written)
    torch.manual_seed(0)
    built = set()
    for case in CASES.values():
        built |= {type(m) for m in case.build().modules()}
    assert layers <= built, sorted(t.__name__ for t in layers - built)


class Call(nn.Module):
    """The layer's first output (attention returns ``(out, probs)``), as one tensor: what vmap and trace see."""

    def __init__(self, layer: nn.Module, kwargs: dict) -> None:
        super().__init__()
        self.layer, self.kwargs = layer, kwargs

    def forward(self, *inputs: Tensor) -> Tensor:
        args = list(inputs)
        kwargs = dict(self.kwargs)
        if isinstance(self.layer, (MultiHeadSelfAttention, LightweightConv1d, DynamicConv1d, DepthwiseSeparableConv1d,
                                   GroupedConv1d, ProjectedConv1d)) and len(args) == 2:
            kwargs["key_padding_mask"] = args.pop()
        if isinstance(self.layer, MixedProjection) and len(args) == 2:
            kwargs["key_padding_mask"] = args.pop()
        if isinstance(self.layer, (BertForMaskedLM, BertClassifier)):
            kwargs["padding_mask"] = args.pop()
        out = self.layer(*args, **kwargs)
        return out[0] if isinstance(out, tuple) else out


def _built(name: str, seed: int = 0) -> tuple[Call, tuple[Tensor, ...]]:
    case = CASES[name]
    torch.manual_seed(seed)
    layer = case.build().eval()
    return Call(layer, case.kwargs), case.inputs()


@pytest.mark.parametrize("name", list(CASES))
def test_meta_device_gives_the_shape_of_the_real_output(name):
    """Built under ``with torch.device("meta")`` and fed meta inputs, a layer returns a meta tensor of the shape
    (and dtype) that the same layer returns on the CPU: no check reads a value that is not there."""
    call, inputs = _built(name)
    with torch.no_grad():
        real = call(*inputs)
    torch.manual_seed(0)
    with torch.device("meta"):
        meta_layer = CASES[name].build().eval()
    assert all(p.is_meta for p in meta_layer.parameters())
    meta = Call(meta_layer, CASES[name].kwargs)(*(t.to("meta") for t in inputs))
    assert meta.is_meta
    assert meta.shape == real.shape and meta.dtype == real.dtype


@pytest.mark.parametrize("name", list(CASES))
def test_vmap_over_the_batch_equals_the_batched_call(name):
    """``vmap`` of the layer over single examples equals the layer on the batch (the masks ride along)."""
    call, inputs = _built(name)
    with torch.no_grad():
        batched = call(*inputs)
        mapped = torch.func.vmap(lambda *one: call(*(t.unsqueeze(0) for t in one)).squeeze(0))(*inputs)
    torch.testing.assert_close(mapped, batched, rtol=1e-4, atol=1e-5)


def _fresh_inputs(name: str) -> tuple[Tensor, ...]:
    """New inputs of the case's shapes: other values, and another padding pattern (the second sequence padded at
    its last token, the first not at all), so that a value a trace recorded as a constant shows."""
    torch.manual_seed(1)
    fresh = []
    for t in CASES[name].inputs():
        if t.dtype == torch.bool:
            t = torch.zeros_like(t)
            t[1, -1] = True
        fresh.append(t)
    return tuple(fresh)


def _trace_replays(call: nn.Module, inputs: tuple[Tensor, ...], fresh: tuple[Tensor, ...]) -> None:
    """Trace ``call`` on ``inputs``; the traced module must give the eager result on ``fresh`` inputs."""
    with torch.no_grad():
        traced = torch.jit.trace(call, inputs, check_trace=False)
        torch.testing.assert_close(traced(*fresh), call(*fresh), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("name", list(CASES))
def test_jit_trace_replays_the_eager_result_on_a_new_input(name):
    """``torch.jit.trace`` runs the forward pass (sizes are tensors there, no value is read), and the traced module
    gives the eager result on a new input of the same shape, with another padding mask: no value of the example
    input was baked into the graph."""
    call, inputs = _built(name)
    _trace_replays(call, inputs, _fresh_inputs(name))


class _KeptKeysRead(nn.Module):
    """A wrong layer: it reads how many keys the padding keeps (``int``), which a trace records as a constant."""

    def forward(self, x: Tensor, key_padding_mask: Tensor) -> Tensor:
        kept = int((~key_padding_mask).sum())
        return x * kept


def test_the_trace_check_catches_a_value_baked_into_the_graph():
    """The check above is not a tautology: replaying the example input passes for the wrong layer, the new input
    with another mask does not."""
    x, mask = _seq(), _mask()
    _trace_replays(_KeptKeysRead(), (x, mask), (x, mask))
    with pytest.raises(AssertionError, match="Tensor-likes are not close"):
        _trace_replays(_KeptKeysRead(), (x, mask), (_seq(), _fresh_inputs("mhsa-padded")[1]))


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16, torch.float64], ids=str)
@pytest.mark.parametrize("name", list(CASES))
def test_a_layer_moved_to_a_dtype_returns_that_dtype(name, dtype):
    """``layer.to(dtype)`` with inputs of that dtype returns that dtype: float32 sums of a bfloat16 kernel are cast
    back, and a projection after a convolution gets what its weights are."""
    call, inputs = _built(name)
    call = call.to(dtype)
    inputs = tuple(t.to(dtype) if t.is_floating_point() else t for t in inputs)
    with torch.no_grad():
        out = call(*inputs)
    assert out.dtype == dtype


def test_values_readable_says_no_exactly_where_a_value_cannot_be_read():
    x = torch.ones(3)
    assert values_readable(x, None, 3)
    assert not values_readable(x.to("meta"))
    seen = []
    torch.func.vmap(lambda t: seen.append(values_readable(t)) or t)(torch.ones(2, 3))
    torch.jit.trace(lambda t: seen.append(values_readable(t)) or t * 2, (x,), check_trace=False)
    assert seen == [False, False]
    assert values_readable(x)  # after the transforms, readable again


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float64, torch.uint8], ids=str)
def test_resnet_names_the_dtype_it_expects(dtype):
    """Images of another dtype than the model's are refused with a ValueError (also a TypeError) that names both
    dtypes, not conv2d's "expected scalar type"; the model moved to that dtype takes them."""
    torch.manual_seed(0)
    model = ResNet(ResNetConfig(width=4, blocks=(1, 1))).eval()
    images = torch.randint(0, 256, (2, 8, 8, 3)).to(dtype)
    with pytest.raises(ValueError, match=r"images .*torch\.float32") as info:
        model(images)
    assert isinstance(info.value, TypeError) and str(dtype) in str(info.value)
    if dtype.is_floating_point:
        with torch.no_grad():
            assert model.to(dtype)(images).dtype == dtype


# torch.compile, in the tests, stops before code generation: TorchDynamo captures the graph (fullgraph=True: a value
# read by a check would break it, an error here) and the "eager" backend runs it; "aot_eager" also traces the
# backward pass. The default backend, inductor, then generates and compiles C++ (on a CPU), which takes minutes on
# a two-core machine, too long for every test run; attnconv's docstring gives the times measured.
@pytest.mark.parametrize("name", ["mhsa-padded", "quadratic", "lightconv-renormalize", "composite"])
def test_torch_compile_traces_the_checks_away(name):
    """Under ``torch.compile(fullgraph=True)`` no check reads a value (a read would be a graph break, an error here);
    the compiled layer gives the eager result."""
    call, inputs = _built(name)
    compiled = torch.compile(call, fullgraph=True, backend="eager")
    with torch.no_grad():
        torch.testing.assert_close(compiled(*inputs), call(*inputs))


def test_the_papers_model_compiles_for_training_in_one_graph():
    """What the ``gpu-10min`` run compiles: the quadratic-encoding ``SelfAttentionNet`` in training mode, its checks
    deferred to the loss (:func:`attnconv.finite.deferred_finite_checks`), as one forward graph and one backward
    graph; outputs and gradients equal the eager model's."""
    torch._dynamo.reset()
    call, (images,) = _built("vision-quadratic")
    call.train()
    compiled = torch.compile(call, fullgraph=True, backend="aot_eager")
    results = []
    for model in (call, compiled):
        call.zero_grad()
        with deferred_finite_checks():
            out = model(images)
            out.square().mean().backward()
        results.append((out.detach(), [p.grad.clone() for p in call.parameters()]))
    (eager, eager_grads), (got, got_grads) = results
    torch.testing.assert_close(got, eager)
    assert len(got_grads) == len(eager_grads) >= 10
    for g, e in zip(got_grads, eager_grads):
        torch.testing.assert_close(g, e)


def test_rotary_positions_given_as_a_tensor_work_under_the_tools():
    """Real-valued ``positions`` are checked for NaN; that check is skipped where the values cannot be read, and
    the rotation itself is computed under each tool."""
    torch.manual_seed(0)
    rotary = RotaryEmbedding(4)
    x, positions = torch.randn(B, 2, N, 4), torch.arange(N) * 0.5

    def rotate(x: Tensor, positions: Tensor) -> Tensor:
        return rotary(x, positions=positions)

    eager = rotate(x, positions)
    with torch.device("meta"):
        meta_rotary = RotaryEmbedding(4)
    meta = meta_rotary(x.to("meta"), positions=positions.to("meta"))
    assert meta.is_meta and meta.shape == eager.shape
    mapped = torch.func.vmap(rotate, in_dims=(0, None))(x, positions)
    torch.testing.assert_close(mapped, eager)
    traced = torch.jit.trace(rotate, (x, positions), check_trace=False)
    torch.testing.assert_close(traced(x, positions + 1.5), rotate(x, positions + 1.5))
    with pytest.raises(ValueError, match="positions must be finite"):
        rotary(x, positions=torch.tensor([0.0, float("nan"), 2.0, 3.0, 4.0]))


@pytest.mark.parametrize("predicted", [2, 0], ids=["two-masked", "none-masked"])
def test_mlm_loss_under_meta_and_compile_equals_the_eager_loss(predicted):
    """``BertForMaskedLM.loss`` picks the masked positions by value, a shape no tool can know: where the labels
    cannot be read it computes the same loss and count in a static shape. On the meta device it gives shapes; under
    ``torch.compile(fullgraph=True)`` the loss and the gradients equal the eager ones, also with nothing masked."""
    torch._dynamo.reset()
    torch.manual_seed(0)
    model = _bert("composite")()
    ids, types, padding = _ids()
    labels = torch.full_like(ids, -100)
    if predicted:
        labels[0, 2], labels[1, 1] = 5, 7
    results = []
    for call in (model.loss, torch.compile(model.loss, fullgraph=True, backend="aot_eager")):
        model.zero_grad()
        loss, correct = call(ids, types, padding, labels)
        loss.backward()
        results.append((loss.detach(), correct, [p.grad.clone() for p in model.parameters() if p.grad is not None]))
    (eager, eager_correct, eager_grads), (got, got_correct, got_grads) = results
    torch.testing.assert_close(got, eager)
    assert int(got_correct) == int(eager_correct)
    assert len(got_grads) == len(eager_grads) > 0
    for g, e in zip(got_grads, eager_grads):
        torch.testing.assert_close(g, e)
    if predicted == 0:
        assert float(got) == 0.0 and all(float(g.abs().max()) == 0.0 for g in got_grads)
    with torch.device("meta"):
        meta_model = _bert("composite")()
    meta_loss, meta_correct = meta_model.loss(ids.to("meta"), types.to("meta"), padding.to("meta"),
                                              labels.to("meta"))
    assert meta_loss.is_meta and meta_loss.shape == () and meta_correct.shape == ()
