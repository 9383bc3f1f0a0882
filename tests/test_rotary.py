"""Sinusoidal and rotary positions (attnconv.positional.rotary, attnconv.proofs.rotary): the library, the SymPy
proofs with their false variants, and the twin of every check of chapter 05's section on them."""

from __future__ import annotations

import math

import matplotlib

matplotlib.use("Agg")
import pytest  # noqa: E402
import sympy as sp  # noqa: E402
import torch  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

from attnconv import LightweightConv1d  # noqa: E402
from attnconv.course.exercises import EXERCISES, score_results  # noqa: E402
from attnconv.course.exercises.core import _local  # noqa: E402
from attnconv.figures.rotary import plot_rotary_kernels  # noqa: E402
from attnconv.positional import (QueryRelativeLogits, RotaryEmbedding, rotary_frequencies,  # noqa: E402
                                 sinusoidal_encoding)
from attnconv.proofs import ProofResult  # noqa: E402
from attnconv.proofs import rotary as proofs  # noqa: E402

f64 = dict(dtype=torch.float64)


def _gen(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def rotate(x: torch.Tensor, base: float = 10000.0) -> torch.Tensor:
    """The chapter's from-scratch rotation: pair (2m, 2m+1) of token t turned by t θ_m."""
    length, dim = x.shape
    theta = base ** (-torch.arange(0, dim, 2, dtype=x.dtype) / dim)
    angle = torch.arange(length, dtype=x.dtype)[:, None] * theta
    even, odd = x[:, 0::2], x[:, 1::2]
    turned = (even * angle.cos() - odd * angle.sin(), even * angle.sin() + odd * angle.cos())
    return torch.stack(turned, dim=-1).flatten(1)


# ---- the library ------------------------------------------------------------------------------------------------

def test_frequencies_and_sinusoidal_encoding_follow_the_papers():
    theta = rotary_frequencies(8, dtype=torch.float64)
    torch.testing.assert_close(theta, torch.tensor([1.0, 0.1, 0.01, 0.001], **f64), rtol=1e-15, atol=0)
    p = sinusoidal_encoding(50, 8, dtype=torch.float64)
    assert p.shape == (50, 8) and p.dtype == torch.float64
    for t in (0, 1, 17, 49):
        for i in range(4):  # Vaswani et al.: PE(t, 2i) = sin(t / 10000^(2i/d)), PE(t, 2i+1) = cos(...)
            assert p[t, 2 * i].item() == pytest.approx(math.sin(t / 10000 ** (2 * i / 8)), abs=1e-15)
            assert p[t, 2 * i + 1].item() == pytest.approx(math.cos(t / 10000 ** (2 * i / 8)), abs=1e-15)
    assert sinusoidal_encoding(3, 4).dtype == torch.get_default_dtype()
    torch.testing.assert_close(sinusoidal_encoding(5, 6, base=100.0, dtype=torch.float64)[:, 2],
                               torch.sin(torch.arange(5, **f64) * 100.0 ** (-2 / 6)))


def test_sinusoidal_pair_is_a_turned_vector():
    """p_t = R(-t θ_m) (0, 1) on every pair, and p_(t+δ) is p_t turned by -δ θ_m: a linear map of p_t."""
    rope, p = RotaryEmbedding(8), sinusoidal_encoding(30, 8, dtype=torch.float64)
    start = torch.tensor([0.0, 1.0] * 4, **f64)
    for t in range(30):
        torch.testing.assert_close(p[t], rope.rotation(-t) @ start, rtol=0, atol=1e-12)
    torch.testing.assert_close(p[7:], p[:-7] @ rope.rotation(-7).T, rtol=0, atol=1e-12)


@pytest.mark.parametrize("shape", [(2, 3, 6, 8), (2, 6, 8)])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_forward_rotates_each_pair_by_position_times_frequency(shape, dtype):
    rope = RotaryEmbedding(8, base=50.0)
    x = torch.randn(*shape, generator=_gen(0), dtype=dtype)
    y = rope(x)
    assert y.shape == x.shape and y.dtype == dtype
    theta = 50.0 ** (-torch.arange(0, 8, 2, **f64) / 8)
    for t in range(shape[-2]):
        for m in range(4):
            c, s = math.cos(t * theta[m]), math.sin(t * theta[m])
            a, b = x[..., t, 2 * m].double(), x[..., t, 2 * m + 1].double()
            tol = 1e-12 if dtype == torch.float64 else 1e-5
            torch.testing.assert_close(y[..., t, 2 * m].double(), a * c - b * s, rtol=0, atol=tol)
            torch.testing.assert_close(y[..., t, 2 * m + 1].double(), a * s + b * c, rtol=0, atol=tol)
    torch.testing.assert_close(y.norm(dim=-1), x.norm(dim=-1))  # rotations keep lengths


def test_offset_and_positions_place_the_tokens():
    rope = RotaryEmbedding(6)
    x = torch.randn(1, 5, 6, generator=_gen(1), **f64)
    longer = torch.cat([torch.randn(1, 3, 6, generator=_gen(2), **f64), x], dim=1)
    torch.testing.assert_close(rope(x, offset=3), rope(longer)[:, 3:], rtol=0, atol=1e-12)  # a decoder's cache
    torch.testing.assert_close(rope(x, positions=torch.arange(3, 8)), rope(x, offset=3), rtol=0, atol=0)
    half = rope(x, positions=torch.arange(5, dtype=torch.float64) / 2)  # real positions are allowed
    torch.testing.assert_close(half[0, 1], x[0, 1] @ _turn(rope, 0.5).T, rtol=0, atol=1e-12)


def _turn(rope: RotaryEmbedding, position: float) -> torch.Tensor:
    theta = rope.frequencies
    blocks = [torch.tensor([[math.cos(position * t), -math.sin(position * t)],
                            [math.sin(position * t), math.cos(position * t)]], **f64) for t in theta.tolist()]
    return torch.block_diag(*blocks)


def test_rotation_matrices_compose_by_the_offset():
    rope = RotaryEmbedding(8)
    for i in range(-4, 5):
        assert torch.allclose(rope.rotation(i), _turn(rope, i), rtol=0, atol=1e-14)
        for j in range(-4, 5):
            torch.testing.assert_close(rope.rotation(i).T @ rope.rotation(j), rope.rotation(j - i),
                                       rtol=0, atol=1e-12)
    x = torch.randn(1, 4, 8, generator=_gen(3), **f64)
    for t in range(4):
        torch.testing.assert_close(rope(x)[0, t], x[0, t] @ rope.rotation(t).T, rtol=0, atol=1e-12)


def test_the_proofs_rotation_is_the_library_rotation():
    """attnconv.proofs.rotary.rotation(t θ_0) with θ_0 = 1 is RotaryEmbedding(2).rotation(t): the same direction."""
    rope = RotaryEmbedding(2)
    for t in (-3, 1, 2, 5):
        symbolic = torch.tensor(proofs.rotation(sp.Integer(t)).evalf().tolist(), **f64)
        torch.testing.assert_close(symbolic, rope.rotation(t), rtol=0, atol=1e-14)


def test_kernel_logits_broadcast_and_read_offsets_left_to_right():
    rope = RotaryEmbedding(4)
    q, k = torch.randn(3, 4, generator=_gen(4), **f64), torch.randn(4, generator=_gen(5), **f64)
    e = rope.kernel_logits(q, k, 2)
    assert e.shape == (3, 5)
    for delta in range(-2, 3):
        torch.testing.assert_close(e[:, delta + 2], q @ rope.rotation(delta) @ k, rtol=0, atol=1e-12)
    assert rope.kernel_logits(q.float(), k.float(), 0).dtype == torch.float32


@pytest.mark.parametrize(
    "call, error, message",
    [
        (lambda: RotaryEmbedding(7), ValueError, "head_dim must be even"),
        (lambda: RotaryEmbedding(0), ValueError, "head_dim must be a positive integer"),
        (lambda: RotaryEmbedding(4.0), ValueError, "head_dim must be a positive integer"),
        (lambda: RotaryEmbedding(4, base=1.0), ValueError, "base must be > 1"),
        (lambda: RotaryEmbedding(4, base="big"), TypeError, "base must be a real number"),
        (lambda: RotaryEmbedding(4, base=float("inf")), ValueError, "base must be finite"),
        (lambda: RotaryEmbedding(4)(torch.zeros(2, 5, 6)), ValueError, r"x must be .* head_dim = 4, got shape"),
        (lambda: RotaryEmbedding(4)(torch.zeros(5, 4)), ValueError, r"x must be \(B, N_h, N, D_h\) or \(B, N, D_h\)"),
        (lambda: RotaryEmbedding(4)(torch.zeros(1, 5, 4, dtype=torch.long)), TypeError, "x must be a floating"),
        (lambda: RotaryEmbedding(4)([[0.0] * 4]), TypeError, "x must be a torch.Tensor"),
        (lambda: RotaryEmbedding(4)(torch.zeros(1, 5, 4), offset=1.5), ValueError, "offset must be an int"),
        (lambda: RotaryEmbedding(4)(torch.zeros(1, 5, 4), positions=torch.arange(4)), ValueError,
         r"positions must be a real \(N,\) tensor with N = 5"),
        (lambda: RotaryEmbedding(4)(torch.zeros(1, 2, 4), positions=torch.tensor([0.0, float("nan")])),
         ValueError, "positions must be finite"),
        (lambda: RotaryEmbedding(4)(torch.zeros(1, 2, 4), offset=1, positions=torch.arange(2)), ValueError,
         "either offset or positions"),
        (lambda: RotaryEmbedding(4).rotation(0.5), ValueError, "offset must be an int"),
        (lambda: RotaryEmbedding(4).kernel_logits(torch.zeros(4), torch.zeros(4), -1), ValueError,
         "radius must be a non-negative integer"),
        (lambda: RotaryEmbedding(4).kernel_logits(torch.zeros(4), torch.zeros(6), 1), ValueError,
         r"key must be \(\.\.\., D_h\)"),
        (lambda: RotaryEmbedding(4).kernel_logits(torch.zeros(2, 4), torch.zeros(3, 4), 1), ValueError,
         "do not broadcast"),
        (lambda: sinusoidal_encoding(0, 4), ValueError, "num_positions must be a positive integer"),
        (lambda: sinusoidal_encoding(3, 5), ValueError, "dim must be even"),
        (lambda: rotary_frequencies(4, base=0.5), ValueError, "base must be > 1"),
    ],
)
def test_bad_arguments_name_the_argument(call, error, message):
    with pytest.raises(error, match=message):
        call()


def test_rotary_embedding_has_no_parameters_and_moves_with_the_module():
    rope = RotaryEmbedding(8)
    assert list(rope.parameters()) == [] and rope.state_dict() == {}
    assert "head_dim=8, base=10000" in repr(rope)


def test_plot_rotary_kernels_draws_and_refuses_bad_input():
    near = {"a": torch.randn(9, generator=_gen(6))}
    for ncols in (1, 2):
        fig = plot_rotary_kernels(near, torch.randn(30, generator=_gen(7)), "far", returns=12, ncols=ncols)
        assert isinstance(fig, Figure)
        matplotlib.pyplot.close(fig)
    with pytest.raises(ValueError, match="ncols must be 1 or 2"):
        plot_rotary_kernels(near, torch.randn(30), ncols=3)
    with pytest.raises(ValueError, match="near must map labels"):
        plot_rotary_kernels({"even": torch.randn(4)}, torch.randn(30))
    with pytest.raises(ValueError, match="returns must be an offset"):
        plot_rotary_kernels(near, torch.randn(30), returns=30)


# ---- the SymPy proofs and their false variants --------------------------------------------------------------------

TRUE_AND_FALSE = [
    (proofs.rotary_logit_is_relative, {}, dict(offset="i+j")),
    (proofs.rotary_logit_is_relative, {}, dict(offset="i-j")),
    (proofs.sinusoidal_bilinear_is_relative, {}, dict(condition="symmetric")),
    (proofs.rotary_constant_content_kernel, {}, dict(kernel="flipped")),
    (proofs.rotary_constant_content_kernel, {}, dict(phases=False)),
    (proofs.rotary_constant_content_kernel, {}, dict(renormalize=False)),
    (proofs.rotary_content_kernel, {}, dict(query_sign=-1)),
    (proofs.rotary_content_kernel, {}, dict(key_sign=1)),
]


@pytest.mark.parametrize("proof, true_kwargs, false_kwargs", TRUE_AND_FALSE,
                         ids=lambda v: getattr(v, "__name__", None) or str(v))
def test_sympy_proof_verifies_and_its_false_variant_does_not(proof, true_kwargs, false_kwargs):
    result = proof(**true_kwargs)
    assert isinstance(result, ProofResult) and result.verified and result.scope == "general", result
    wrong = proof(**false_kwargs)
    assert not wrong.verified, f"a false statement was reported verified: {wrong}"
    assert "NOT verified" in repr(wrong)


def test_each_proof_checks_a_block_and_the_sum_over_blocks():
    """The rotary proofs hold on one 2 × 2 block with every entry symbolic, and over M blocks with M symbolic."""
    for result in (proofs.rotary_logit_is_relative(), proofs.rotary_content_kernel().steps[0]):
        claims = [step.claim for step in result.steps]
        assert any("one 2 × 2 block" in c for c in claims) and any("sum over M blocks" in c for c in claims)
        assert "M" in result.variables
    sinusoid = proofs.sinusoidal_bilinear_is_relative()
    assert [s.verified for s in sinusoid.steps] == [True] * 5
    only_if = sinusoid.steps[-1]
    assert "only if" in only_if.claim and only_if.scope == "general"


def test_sinusoidal_split_names_the_coefficients_of_the_i_plus_j_part():
    """The i + j part of p_i^T W p_j has the coefficients (w22 - w11)/2 and (w12 + w21)/2, as the proof says."""
    i, j, w = sp.symbols("i j omega", real=True)
    w11, w12, w21, w22 = sp.symbols("w_11 w_12 w_21 w_22", real=True)
    p = lambda t: sp.Matrix([sp.sin(t * w), sp.cos(t * w)])  # noqa: E731
    form = (p(i).T * sp.Matrix([[w11, w12], [w21, w22]]) * p(j))[0]
    s = i + j
    i_plus_j = sp.Rational(1, 2) * ((w22 - w11) * sp.cos(s * w) + (w12 + w21) * sp.sin(s * w))
    rest = sp.expand(sp.expand_trig(sp.expand(form - i_plus_j)))
    shifted = sp.expand(sp.expand_trig(sp.expand(rest.subs({i: i + 1, j: j + 1}) - rest)))
    assert sp.simplify(shifted) == 0  # what is left depends on j - i only


def test_bad_proof_arguments():
    with pytest.raises(ValueError, match="offset must be one of"):
        proofs.rotary_logit_is_relative(offset="j+i")
    with pytest.raises(ValueError, match="condition must be"):
        proofs.sinusoidal_bilinear_is_relative(condition="diagonal")
    with pytest.raises(ValueError, match="kernel must be"):
        proofs.rotary_constant_content_kernel(kernel="even")
    with pytest.raises(ValueError, match="query_sign must be 1 or -1"):
        proofs.rotary_content_kernel(query_sign=0)


# ---- the twins of chapter 05's checks -----------------------------------------------------------------------------

N = 11  # a sentence's length; the chapter's checks do not depend on it


def test_from_scratch_rotation_is_the_library_and_logits_are_relative():
    rope = RotaryEmbedding(16)
    rope_q, rope_k = torch.randn(2, N, 16, generator=_gen(10), **f64)
    torch.testing.assert_close(rotate(rope_q), rope(rope_q[None])[0], rtol=0, atol=1e-12)
    logits = rotate(rope_q) @ rotate(rope_k).T
    moved = rope(rope_q[None], offset=7)[0] @ rope(rope_k[None], offset=7)[0].T
    torch.testing.assert_close(moved, logits, rtol=0, atol=1e-12)
    through_offset = torch.stack([torch.stack([rope_q[i] @ rope.rotation(j - i) @ rope_k[j] for j in range(N)])
                                  for i in range(N)])
    torch.testing.assert_close(through_offset, logits, rtol=0, atol=1e-12)
    # the false variant: the positions' angles added, R_(i+j)
    added = torch.stack([torch.stack([rope_q[i] @ rope.rotation(i + j) @ rope_k[j] for j in range(N)])
                         for i in range(N)])
    assert (added - logits).abs().max() > 1e-3


def test_sinusoidal_term_is_relative_only_for_scaled_rotations():
    encoding = sinusoidal_encoding(N, 16, dtype=torch.float64)
    scale, turn = torch.randn(2, 8, generator=_gen(11), **f64)
    quarter_turn, swap = torch.tensor([[0.0, 1.0], [-1.0, 0.0]], **f64), torch.tensor([[0.0, 1.0], [1.0, 0.0]], **f64)
    for block, relative in ((quarter_turn, True), (swap, False)):
        w_pos = torch.block_diag(*(a * torch.eye(2, **f64) + b * block for a, b in zip(scale, turn)))
        term = encoding @ w_pos @ encoding.T
        drift = (term[1:, 1:] - term[:-1, :-1]).abs().max()
        assert drift < 1e-12 if relative else drift > 1e-3
    # a block between two frequencies breaks it too (the chapter's argued remark)
    cross = torch.zeros(16, 16, **f64)
    cross[0:2, 2:4] = torch.eye(2, **f64)
    term = encoding @ cross @ encoding.T
    assert (term[1:, 1:] - term[:-1, :-1]).abs().max() > 1e-3
    assert proofs.sinusoidal_bilinear_is_relative().verified


def test_the_figures_head_comes_back_at_1885():
    rope4 = RotaryEmbedding(4)
    aligned = torch.tensor([1.0, 0.0, 1.0, 0.0], **f64)
    far = rope4.kernel_logits(aligned, aligned, 2000)[2000:]
    comes_back = 10 + int(far[10:].argmax())
    assert comes_back == 1885 and far[0] - far[comes_back] < 2e-3
    ahead = RotaryEmbedding(16).kernel_logits(torch.tensor([1.0, 0.0] * 8, **f64), torch.tensor([0.0, 1.0] * 8, **f64),
                                              40)
    torch.testing.assert_close(ahead, -ahead.flip(0), rtol=0, atol=1e-12)  # a quarter turn: an odd kernel


@pytest.mark.parametrize("n", [1, 2, 9, 23])
def test_constant_content_rope_attention_is_a_lightweight_conv(n):
    rope = RotaryEmbedding(16)
    tokens = torch.randn(1, n, 16, generator=_gen(12), **f64)
    head_q, head_k = torch.randn(2, 4, 16, generator=_gen(13), **f64)
    rotated_q, rotated_k = rope(head_q[:, None].expand(4, n, 16)), rope(head_k[:, None].expand(4, n, 16))
    weights = torch.softmax(rotated_q @ rotated_k.transpose(1, 2) / 4.0, dim=-1)
    attended = torch.cat([weights[h] @ tokens[0, :, 4 * h: 4 * h + 4] for h in range(4)], dim=-1)
    conv = LightweightConv1d(16, 4, kernel_size=2 * n - 1, boundary="renormalize").double()
    with torch.no_grad():
        conv.weight.copy_(rope.kernel_logits(head_q, head_k, n - 1) / 4.0)
    torch.testing.assert_close(conv(tokens)[0], attended, rtol=0, atol=1e-12)
    if n > 2:  # zero padding is the false variant: it differs at the ends
        zeros = LightweightConv1d(16, 4, kernel_size=2 * n - 1).double()
        zeros.load_state_dict(conv.state_dict())
        assert (zeros(tokens)[0] - attended).abs().max() > 1e-6


def test_kernel_logits_are_a_sum_of_cosines_and_reach_every_coefficient():
    rope, n = RotaryEmbedding(16), N
    head_q, head_k = torch.randn(2, 16, generator=_gen(14), **f64)
    offsets = torch.arange(-(n - 1), n, **f64)
    angles = offsets[:, None] * rope.frequencies
    pair_q, pair_k = head_q.view(8, 2), head_k.view(8, 2)
    amplitude = pair_q.norm(dim=-1) * pair_k.norm(dim=-1)
    phase = torch.atan2(pair_q[:, 0] * pair_k[:, 1] - pair_q[:, 1] * pair_k[:, 0], (pair_q * pair_k).sum(-1))
    e = rope.kernel_logits(head_q, head_k, n - 1)
    torch.testing.assert_close(e, (amplitude * torch.cos(angles + phase)).sum(-1), rtol=0, atol=1e-12)
    assert (e - (amplitude * torch.cos(angles - phase)).sum(-1)).abs().max() > 1e-3  # the phase's sign matters
    assert (e - (amplitude * torch.cos(angles)).sum(-1)).abs().max() > 1e-3  # and the phases do
    coeff_a, coeff_b = torch.randn(2, 8, generator=_gen(15), **f64)
    aligned = torch.tensor([1.0, 0.0] * 8, **f64)
    reached = rope.kernel_logits(aligned, torch.stack([coeff_a, -coeff_b], dim=-1).flatten(), n - 1)
    torch.testing.assert_close(reached, (coeff_a * angles.cos() + coeff_b * angles.sin()).sum(-1), rtol=0,
                               atol=1e-12)


@pytest.mark.parametrize("n", [12, 23, 30])
def test_rope_kernels_span_at_most_head_dim_and_come_back(n):
    offsets = torch.arange(-(n - 1), n, **f64)
    angles8 = offsets[:, None] * RotaryEmbedding(8).frequencies
    basis = torch.cat([torch.ones(2 * n - 1, 1, **f64), angles8.cos(), angles8.sin()], dim=1)
    assert torch.linalg.matrix_rank(basis) <= 9 < 2 * n - 1
    alibi_logits = -0.5 * offsets.abs()
    closest = basis @ torch.linalg.lstsq(basis, alibi_logits[:, None]).solution[:, 0]
    assert (closest - alibi_logits).abs().max() > 0.1
    # every kernel of the head lies in that span (plus the constant): random q, k fit exactly
    q8, k8 = torch.randn(2, 8, generator=_gen(n), **f64)
    e8 = RotaryEmbedding(8).kernel_logits(q8, k8, n - 1)
    fit = basis @ torch.linalg.lstsq(basis, e8[:, None]).solution[:, 0]
    torch.testing.assert_close(fit, e8, rtol=0, atol=1e-8)
    rope4 = RotaryEmbedding(4)
    eta = (torch.remainder(1885 * rope4.frequencies + math.pi, 2 * math.pi) - math.pi).abs().max()
    assert eta < 0.05
    for q4, k4 in torch.randn(10, 2, 4, generator=_gen(16), **f64):
        e4 = rope4.kernel_logits(q4, k4, 1885)
        bound = eta * (q4.view(2, 2).norm(dim=-1) * k4.view(2, 2).norm(dim=-1)).sum()
        assert (e4[-1] - e4[1885]).abs() <= bound + 1e-12


def test_a_falling_kernel_does_not_fall_for_ever():
    """ALiBi's kernel falls with |δ|; the chapter's D_h = 4 head with aligned pairs falls at first, then comes back
    above its value at δ = 1."""
    rope4 = RotaryEmbedding(4)
    aligned = torch.tensor([1.0, 0.0, 1.0, 0.0], **f64)
    e = rope4.kernel_logits(aligned, aligned, 2000)[2000:]
    assert e[1] < e[0] and (e[2:] > e[1]).any()


def test_constant_keys_give_shaws_term_and_content_is_not_a_convolution():
    rope, n = RotaryEmbedding(16), N
    rope_q, rope_k = torch.randn(2, n, 16, generator=_gen(17), **f64)
    one_key = rope_k[0].expand(n, 16)
    shaw = QueryRelativeLogits(1, 16, max_distance=n - 1).double()
    with torch.no_grad():
        shaw.embedding.copy_(torch.stack([rope.rotation(d) @ rope_k[0] for d in range(1 - n, n)]))
    rope_logits = rope(rope_q[None])[0] @ rope(one_key[None])[0].T / 4.0
    torch.testing.assert_close(shaw((n,), rope_q[None, None], None)[0, 0], rope_logits, rtol=0, atol=1e-12)
    with torch.no_grad():  # the false variant a_δ = R_(-δ) k
        shaw.embedding.copy_(torch.stack([rope.rotation(-d) @ rope_k[0] for d in range(1 - n, n)]))
    assert (shaw((n,), rope_q[None, None], None)[0, 0] - rope_logits).abs().max() > 1e-3
    # constant queries: the key-dependent term c_δ · k_j with c_δ = R_(-δ) q
    one_query = rope_q[0]
    logits = rope(one_query.expand(n, 16)[None])[0] @ rope(rope_k[None])[0].T
    keyed = torch.stack([torch.stack([(rope.rotation(-(j - i)) @ one_query) @ rope_k[j] for j in range(n)])
                         for i in range(n)])
    torch.testing.assert_close(keyed, logits, rtol=0, atol=1e-12)
    # with content, query 3's logit at δ = 1 follows the token it reads
    tokens = torch.randn(n, 16, generator=_gen(18), **f64)
    w_qry, w_key = torch.randn(2, 16, 16, generator=_gen(19), **f64)
    neighbour = tokens.clone()
    neighbour[4] += 1.0
    rows = [(rope((x @ w_qry)[None])[0] @ rope((x @ w_key)[None])[0].T)[3] for x in (tokens, neighbour)]
    assert torch.equal(rows[0][:4], rows[1][:4]) and (rows[0][4] - rows[1][4]).abs() > 1e-6


# ---- the exercise ---------------------------------------------------------------------------------------------------

def _grade(**answers):
    exercise = EXERCISES["ex-05-rope-reach"]
    return score_results(exercise, _local("ex-05-rope-reach", answers))


def test_rope_exercise_accepts_every_right_answer_and_rejects_wrong_ones():
    assert EXERCISES["ex-05-rope-reach"].written == 1
    points, passed, _ = _grade(rope_query=torch.tensor([1.0, 0, 1, 0], **f64),
                               rope_key=torch.tensor([2.0, 0, 0, 1], **f64))
    assert passed and points == 1
    # another right answer: both pairs turned together by any angle, lengths traded between query and key
    turn = RotaryEmbedding(2).rotation(3).float()
    q = torch.cat([turn @ torch.tensor([2.0, 0.0]), turn @ torch.tensor([0.5, 0.0])])
    k = torch.cat([turn @ torch.tensor([1.0, 0.0]), turn @ torch.tensor([0.0, 2.0])])
    assert _grade(rope_query=q, rope_key=k)[1]  # float32, right to float32 precision
    assert _grade(rope_query=[1, 0, 1, 0], rope_key=[2, 0, 0, 1])[1]  # plain lists of ints
    for q, k in (([1, 0, 1, 0], [2, 0, 0, -1]),  # sin with the wrong sign
                 ([1, 0, 1, 0], [0, 0, 2, 1]),  # the pairs swapped
                 ([1, 0, 1, 0], [2, 0, 1]),  # three numbers
                 ("(1, 0, 1, 0)", [2, 0, 0, 1])):  # not numbers
        points, passed, message = _grade(rope_query=q, rope_key=k)
        assert not passed and points == 0, (q, k)
        assert message
