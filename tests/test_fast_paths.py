"""The training fast paths equal what they replace: factorised attention over the whole batch (forward and
backward), dropout's distribution, overflow checks deferred to the loss, half precision, and the thread count."""

from __future__ import annotations

import math

import pytest
import torch

import attnconv.attention as attention
from attnconv import MultiHeadSelfAttention
from attnconv._checks import NonFiniteResultError
from attnconv.attention import attend_factorized, attend_factorized_reference
from attnconv.dropout import Dropout, drop_probability, dropout, keep_mask
from attnconv.finite import deferred_finite_checks, finite_checks_on
from attnconv.models import SelfAttentionNet, VisionConfig
from attnconv.positional import LearnedRelativeEncoding2d, QuadraticEncoding
from attnconv.train.threads import available_cores, resolve_threads, set_threads


def _axes(heads, grid, dtype, seed=0):
    g = torch.Generator().manual_seed(seed)
    return [torch.randn(heads, n, n, generator=g, dtype=dtype).softmax(-1).requires_grad_() for n in grid]


def _both(axes, v, grid, grad):
    """Outputs and gradients (axes, values) of the fast and the reference path."""
    results = []
    for fn in (attend_factorized, attend_factorized_reference):
        for t in (*axes, v):
            t.grad = None
        out = fn(axes, v, grid)
        out.backward(grad)
        results.append((out.detach().clone(), [t.grad.clone() for t in (*axes, v)]))
    return results


@pytest.mark.parametrize("grid", [(5, 7), (16, 16), (11,), (3, 4, 5)])
@pytest.mark.parametrize("shared", [True, False])
def test_factorized_equals_reference_with_gradients(grid, shared):
    heads, batch, d = 3, 4, 6
    n = math.prod(grid)
    # Float32 rounding: the gradient of a probability sums batch x (other axes) x D_h products in another order.
    for dtype, tol in ((torch.float64, 1e-12), (torch.float32, 1e-5)):
        axes = _axes(heads, grid, dtype)
        v = torch.randn(batch, 1 if shared else heads, n, d, dtype=dtype, requires_grad=True)
        grad = torch.randn(batch, heads, n, d, dtype=dtype)
        (fast, fast_grads), (ref, ref_grads) = _both(axes, v, grid, grad)
        assert fast.shape == (batch, heads, n, d)
        for a, b in zip([fast, *fast_grads], [ref, *ref_grads]):
            torch.testing.assert_close(a, b, rtol=tol, atol=tol * float(b.abs().max()))
    # The comparison has teeth: the transpose of one axis' matrix (keys for queries) is caught.
    if len(grid) > 1:
        wrong = [axes[0], axes[1].transpose(-1, -2)] + axes[2:]
        assert not torch.allclose(attend_factorized(wrong, v, grid), attend_factorized_reference(axes, v, grid),
                                  atol=1e-3)


def _layer(positional, shared):
    return MultiHeadSelfAttention(12, positional.num_heads, head_dim=6, positional=positional, content=False,
                                  shared_values=shared)


@pytest.mark.parametrize("kind", ["quadratic", "learned"])
@pytest.mark.parametrize("shared", [True, False])
def test_layer_fast_path_equals_reference_in_slices(kind, shared, monkeypatch):
    torch.manual_seed(0)
    positional = QuadraticEncoding(4, alpha=0.7) if kind == "quadratic" else LearnedRelativeEncoding2d(4, 6, 12)
    layer = _layer(positional, shared)
    x = torch.randn(7, 5, 6, 12, requires_grad=True)
    grad = torch.randn(7, 5, 6, 12)
    monkeypatch.setattr(attention, "FACTORIZED_CHUNK", 2 * 4 * 30 * 6)  # two examples a slice: 4 slices
    runs = []
    for reference in (False, True):
        if reference:
            monkeypatch.setattr(MultiHeadSelfAttention, "attend_factorized_merged", lambda self, axes, v, grid:
                                self.merge_heads(attend_factorized_reference(axes, v, grid), grid))
        layer.zero_grad()
        x.grad = None
        out, _ = layer(x)
        out.backward(grad)
        runs.append([out.detach().clone(), x.grad.clone()] + [p.grad.clone() for p in layer.parameters()])
    for a, b in zip(*runs):
        torch.testing.assert_close(a, b, rtol=2e-5, atol=2e-6)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_half_precision_factorized_modules_run_in_their_dtype(dtype):
    torch.manual_seed(0)
    for positional in (QuadraticEncoding(4, alpha=0.7), LearnedRelativeEncoding2d(4, 6, 12)):
        layer = _layer(positional, True)
        x = torch.randn(3, 5, 6, 12)
        want, _ = layer(x)
        half = layer.to(dtype)
        got, _ = half(x.to(dtype))  # float32 probabilities times half-precision values used to raise here
        assert got.dtype == dtype
        torch.testing.assert_close(got.float(), want, rtol=0.05, atol=0.05)
    net = SelfAttentionNet(VisionConfig(hidden_dim=16, depth=1, num_heads=4, head_dim=8, mlp_dim=32)).eval()
    logits = net.to(dtype)(torch.randn(2, 32, 32, 3, dtype=dtype))
    assert logits.dtype == dtype and bool(torch.isfinite(logits).all())


def test_half_precision_convolution_converts_and_matches():
    from attnconv.construct.image import conv_to_mhsa

    torch.manual_seed(0)
    conv = torch.nn.Conv2d(3, 4, 3, padding=1)
    x = torch.randn(2, 3, 6, 6)
    want = conv(x)
    layer = conv_to_mhsa(conv.to(torch.bfloat16))
    out = layer(x.to(torch.bfloat16))
    out = out[0] if isinstance(out, tuple) else out
    assert out.dtype == torch.bfloat16
    torch.testing.assert_close(out.float(), want, rtol=0.05, atol=0.05)


def test_dropout_keeps_one_minus_p_and_scales_the_rest():
    n = 2_000_000
    x = torch.full((n,), 3.0, requires_grad=True)
    for p in (0.1, 0.5):
        torch.manual_seed(1)
        out = dropout(x, p)
        kept = out != 0
        rate, sigma = float(kept.double().mean()), math.sqrt(p * (1 - p) / n)
        # 6 sigma is 0.0013 at p = 0.1: a drop rate off by 0.01 (p = 0.11, or p = 0.09) fails by 30 sigma.
        assert abs(rate - (1 - drop_probability(p))) < 6 * sigma, (p, rate)
        assert abs(drop_probability(p) - p) <= 2**-17
        like_torch = torch.nn.functional.dropout(x.detach(), p).max()  # nn.Dropout's kept value, to the bit
        assert torch.equal(out[kept], like_torch.expand(int(kept.sum()))) and float(out[~kept].detach().abs().max()) == 0
        # The 16-bit lanes are independent: neighbours (within a 64-bit word and across words) co-drop at p².
        dropped = (~kept).double()
        for lag in (1, 4):
            both = float((dropped[:-lag] * dropped[lag:]).mean())
            assert abs(both - p * p) < 6 * math.sqrt(p * p * (1 - p * p) / n), (p, lag, both)
        x.grad = None
        out.sum().backward()
        torch.testing.assert_close(x.grad, kept.float() / (1 - p), rtol=0, atol=0)
    with pytest.raises(AssertionError):  # the test's tolerance rejects a wrong rate
        torch.manual_seed(1)
        assert abs(float((dropout(x, 0.11) != 0).double().mean()) - 0.9) < 6 * math.sqrt(0.09 / n)


def test_dropout_is_seeded_identity_in_eval_and_a_drop_in_module():
    torch.manual_seed(3)
    a = keep_mask((1000,), 0.3)
    torch.manual_seed(3)
    assert torch.equal(a, keep_mask((1000,), 0.3)) and a.dtype == torch.bool
    x = torch.randn(4, 5, dtype=torch.bfloat16)
    assert dropout(x, 0.5, training=False) is x and dropout(x, 0.0) is x
    assert dropout(x, 0.5).dtype == torch.bfloat16
    module = Dropout(0.25).eval()
    assert module(x) is x and "p=0.25" in repr(module)
    with pytest.raises(ValueError, match=r"p must be in \[0, 1\)"):
        Dropout(1.0)


def test_layer_checks_can_be_deferred_to_the_loss():
    layer = MultiHeadSelfAttention(4, 2, positional=QuadraticEncoding(2, alpha=1.0), content=False)
    with torch.no_grad():
        layer.out_proj.weight.fill_(3e38)
    x = torch.ones(1, 3, 3, 4)
    with pytest.raises(NonFiniteResultError, match="overflow"):
        layer(x)
    assert finite_checks_on()
    with pytest.raises(RuntimeError, match="inside"):
        with deferred_finite_checks():
            assert not finite_checks_on()
            out, _ = layer(x)  # no check here: the caller checks the loss
            assert not bool(torch.isfinite(out).all())
            with deferred_finite_checks():  # nested blocks
                assert not finite_checks_on()
            assert not finite_checks_on()
            raise RuntimeError("inside")
    assert finite_checks_on()  # restored after an exception


def test_threads_resolve_and_are_set(monkeypatch):
    cores = available_cores()
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    assert cores >= 1 and resolve_threads(None) == cores and resolve_threads(3) == 3
    for limit, expected in (("1", 1), (str(cores + 5), cores), ("0", cores), ("", cores), ("two", cores)):
        monkeypatch.setenv("OMP_NUM_THREADS", limit)  # the environment's limit, where it is a positive number
        assert resolve_threads(None) == expected and resolve_threads(3) == 3, limit
    monkeypatch.delenv("OMP_NUM_THREADS")
    assert resolve_threads(None, processes_per_machine=cores * 4) == 1
    for bad in (0, -1, 1.5, True, "2"):
        with pytest.raises(ValueError, match="threads must be a positive int or None"):
            resolve_threads(bad)
    before = torch.get_num_threads()
    try:
        record = set_threads(1)
        assert record == {"requested": 1, "used": 1, "available_cores": cores} and torch.get_num_threads() == 1
    finally:
        torch.set_num_threads(before)


def test_training_roofline_record_derives_its_shares_from_its_timings():
    import json
    from pathlib import Path

    record = json.loads((Path(__file__).resolve().parents[1] / "results" / "benchmarks" /
                         "training_roofline.json").read_text())
    meta, rows = record["meta"], {r["case"]: r for r in record["rows"]}
    assert meta["cpu"]["model"] and meta["commit"] and len(meta["load_average_before"]) == 3
    assert meta["dirty"] is False, "measured from committed code (the commit is read before the first round)"
    for precision in ("fp32", "bf16"):
        gemm = rows[f"gemm/{precision}/1"]
        roof = gemm["flops"] / gemm["cpu_s"] / 1e9
        share = {}
        for model in ("resnet18", "sa-quadratic"):
            r = rows[f"{model}/{precision}/1"]
            assert r["flops"] == 3 * r["cost"]["flops"] * record["meta"]["batch"]  # training = 3 x forward
            share[model] = r["flops"] / r["cpu_s"] / 1e9 / roof
            assert math.isclose(r["roofline_share"], share[model], rel_tol=1e-9)
        summary = record["summary"][f"{precision}/1"]
        assert math.isclose(summary["share_ratio"], share["sa-quadratic"] / share["resnet18"], rel_tol=1e-9)
        ref = rows[f"sa-quadratic/{precision}/1/reference"]
        assert ref["cost"] == rows[f"sa-quadratic/{precision}/1"]["cost"]  # the same model, the same FLOPs
        assert math.isclose(summary["speedup_over_reference"],
                            ref["cpu_s"] / rows[f"sa-quadratic/{precision}/1"]["cpu_s"], rel_tol=1e-9)
        weights = rows[f"sa-quadratic/{precision}/1/weight-layers"]  # the weight layers alone bound the step
        bound = weights["flops"] / weights["cpu_s"] / 1e9 / roof
        assert weights["flops"] == rows[f"sa-quadratic/{precision}/1"]["flops"] > weights["weight_flops"]
        assert math.isclose(weights["share_bound"], bound, rel_tol=1e-9) and bound > share["sa-quadratic"]
        assert math.isclose(summary["share_ratio_bound"], bound / share["resnet18"], rel_tol=1e-9)


def test_training_roofline_record_times_the_official_model_on_the_same_weights():
    """The official model's dense attention, at cpu-quick width (batch 100) and paper width (batch 8), beside
    attnconv's step on the same model: the same FLOPs, and the summary's speed-ups are the rows' time ratios."""
    import json
    from pathlib import Path

    record = json.loads((Path(__file__).resolve().parents[1] / "results" / "benchmarks" /
                         "training_roofline.json").read_text())
    rows, official = {r["case"]: r for r in record["rows"]}, record["summary"]["official"]
    for precision in ("fp32", "bf16"):
        for width, fast_case, batch in (("cpu-quick", f"sa-quadratic/{precision}/1", 100),
                                        ("paper", f"sa-quadratic/{precision}/1/paper", 8)):
            fast, theirs = rows[fast_case], rows[fast_case + "/official"]
            assert theirs["path"] == "official" and fast["path"] == "fast"
            assert theirs["cost"] == fast["cost"] and theirs["batch"] == batch  # the same model and batch
            entry = official[f"{precision}/{width}"]
            assert math.isclose(entry["speedup_over_official"], theirs["cpu_s"] / fast["cpu_s"], rel_tol=1e-9)
            assert math.isclose(entry["official_img_per_s"], batch / theirs["cpu_s"], rel_tol=1e-9)
    paper = rows["sa-quadratic/fp32/1/paper"]["cost"]
    assert paper["params"] > 10 * rows["sa-quadratic/fp32/1"]["cost"]["params"], "the paper's width, not cpu-quick's"
