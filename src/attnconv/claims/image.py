"""The ledger's claims about images (chapters 01 and 03; Cordonnier et al. 2020), with their variants."""

from __future__ import annotations

from functools import partial

import sympy as sp

from ..proofs import image as img
from .ledger import CH01, CH03, Claim

__all__ = ["IMAGE_CLAIMS"]


def _nonshift(q, k, center):
    """3 δ_{q, k+Δ} + 1: a matrix that is not a shift (used as a false variant of Lemma 1)."""
    return 3 * sp.KroneckerDelta(q, k + center) + 1


def _flipped_shift(q, k, center):
    """δ_{k, q-Δ}: the head reads q - Δ instead of q + Δ (a false variant of Lemma 1)."""
    return sp.KroneckerDelta(k, q - center)


def _reflection(h, heads):
    """h → N_h + 1 - h: a bijection of the heads 1..N_h."""
    return heads + 1 - h


def _reflection_one_short(h, heads):
    return heads - h


def _next_tap(h, heads):
    return h + 1


_SHIFT = sp.Symbol("c", integer=True, nonnegative=True)


def _cyclic_shift(h, heads):
    """h → ((h + c) mod N_h) + 1: a bijection of the heads 1..N_h for N_h ≥ c + 1."""
    return sp.Mod(h + _SHIFT, heads) + 1


def _reflected_shift(h, heads):
    """h → ((3 - h) mod N_h) + 1: the reflection followed by a cyclic shift, a bijection for N_h ≥ 4."""
    return sp.Mod(3 - h, heads) + 1


def _backward_shift(h, heads):
    """h → ((h - 2) mod N_h) + 1: a cyclic shift backwards, a bijection for N_h ≥ 3."""
    return sp.Mod(h - 2, heads) + 1


def _reflection_one_past(h, heads):
    return heads + 2 - h


SIGN = "the encoding with the opposite sign, v = +α(1, -2Δ): no interior maximum"
THIRD = sp.Rational(1, 3)
HALF = sp.Rational(1, 2)
_U, _V = sp.symbols("u v", nonnegative=True)
ANY_FRACTION = (_U - _V) / (2 * (1 + _U + _V))  # every f in (-1/2, 1/2), for u, v ≥ 0
UNBOUNDED = sp.Symbol("f", real=True)  # a real fractional part with no bound
DELTA = sp.Symbol("Delta", integer=True)
ODD = sp.Symbol("O", integer=True, odd=True)
TRIPLE = sum(sp.symbols("Delta1:4", integer=True))  # Δ_1 + Δ_2 + Δ_3

IMAGE_CLAIMS: tuple[Claim, ...] = (
    Claim("conv-shifts", "a convolution is a sum of shifted inputs, each times one tap's matrix", "lem-conv-shifts",
          img.conv_is_sum_of_shifts,
          (("the textbook convolution that flips the kernel (Δ_a = p - a⊙d)", partial(img.conv_is_sum_of_shifts,
                                                                                    flipped=True)),
           ("outputs read at q instead of s⊙q (stride ignored)", partial(img.conv_is_sum_of_shifts,
                                                                         stride_ignored=True))),
          f"{CH01}#lem-conv-shifts",
          ("tests/test_conv.py::test_conv2d_as_shifts_matches_torch",
           "tests/test_conv.py::test_conv1d_as_shifts_matches_torch")),
    Claim("quadratic-identity", "v·r_δ = -α(‖δ-Δ‖² - ‖Δ‖²) for r_δ = (‖δ‖², δ), v = -α(1, -2Δ), in any dimension",
          "lem-quadratic", img.quadratic_identity,
          (("centre coefficient +2 instead of -2", partial(img.quadratic_identity, center_coefficient=2)),
           ("centre coefficient -1 (half the cross term)", partial(img.quadratic_identity, center_coefficient=-1))),
          f"{CH03}#lem-quadratic",
          ("tests/test_positional_image.py::test_quadratic_logits_are_the_lemma2_formula",
           "tests/test_proofs_image.py::test_claim_verified_and_wrong_variant_rejected")),
    Claim("shift-invariance", "softmax(x + c·1) = softmax(x) for any length", "lem-quadratic",
          img.shift_invariance,
          (("a different shift c_k for each logit", partial(img.shift_invariance, per_entry=True)),
           ("scaling every logit by c instead of shifting", partial(img.shift_invariance, scaled=True))),
          f"{CH03}#lem-quadratic",
          ("tests/test_proofs_image.py::test_claim_verified_and_wrong_variant_rejected",
           "tests/test_finite_alpha.py::test_shift_invariance_numerically")),
    Claim("gaussian-kernel", "a quadratic head's attention over positions is Nadaraya-Watson kernel regression with "
          "a Gaussian kernel centred at Δ, bandwidth σ = 1/√(2α): the square expanded, -α‖Δ‖² cancels (any d, N)",
          "rem-kernel-regression", img.gaussian_kernel_regression,
          (("a sign error in the cross term, -2αΔ·δ (a kernel centred at -Δ)",
            partial(img.gaussian_kernel_regression, cross_coefficient=-2)),
           ("the bandwidth 1/√α: the factor 2 missing", partial(img.gaussian_kernel_regression, bandwidth_factor=1))),
          f"{CH03}#rem-kernel-regression",
          ("tests/test_kernel_regression.py::test_quadratic_head_is_gaussian_kernel_regression",
           "tests/test_kernel_regression.py::test_proof_verifies_and_rejects_each_slip")),
    Claim("hard-limit", "hard attention is the α→∞ limit of the quadratic encoding, derived from its logit: "
          "weight 1 on the unique nearest key", "lem-quadratic", img.hard_attention_limit,
          ((SIGN, partial(img.hard_attention_limit, sign=1)),
           ("a half-integer centre Δ + 1/2: a tie between two keys", partial(img.hard_attention_limit, offset=HALF)),
           ("the centre Δ/2: for odd Δ a half-integer, so no unique nearest key is established",
            partial(img.hard_attention_limit, center=DELTA / 2)),
           ("the centre Δ + f with a real f left unbounded (needs |f| < 1/2)",
            partial(img.hard_attention_limit, offset=UNBOUNDED)),
           ("the float offset 0.5, exactly 1/2: a tie", partial(img.hard_attention_limit, offset=0.5)),
           ("the centre Δ(Δ+1)/4: a half-integer at Δ = 1", partial(img.hard_attention_limit,
                                                                   center=DELTA * (DELTA + 1) / 4)),
           ("the centre Δ + max(1/3, u), u ≥ 0 unbounded (a Max factor)",
            partial(img.hard_attention_limit, offset=sp.Max(THIRD, _U))),
           ("the centre (Δ_1 + Δ_2 + Δ_3)/20: a half-integer where Δ_1 + Δ_2 + Δ_3 = 10 (a linear form)",
            partial(img.hard_attention_limit, center=TRIPLE / 20))),
          f"{CH03}#thm-attention-conv",
          ("tests/test_positional_image.py::test_hard_mode_is_exactly_one_hot_where_the_target_exists",
           "tests/test_positional_image.py::test_hard_mode_reads_every_key_up_to_the_last",
           "tests/test_proofs_limit.py::test_off_grid_centre_limit_matches_the_library",
           "tests/test_proofs_limit.py::test_floats_are_read_exactly",
           "tests/test_proofs_limit.py::test_max_and_min_give_a_verdict_never_a_traceback",
           "tests/test_proofs_limit.py::test_integrality_is_decided",
           "tests/test_proofs_limit.py::test_a_centre_that_is_sometimes_a_half_integer_is_refuted_with_a_witness",
           "tests/test_proof_forms.py::test_axis_limit_reads_floats_exactly",
           "tests/test_proof_forms.py::test_integrality_is_decided_for_parity_and_linear_forms",
           "tests/test_proof_forms.py::test_bounded_parts_give_a_verdict_and_never_a_traceback"),
          (("an off-grid centre Δ + 1/3 (unique nearest key Δ)", partial(img.hard_attention_limit, offset=THIRD)),
           ("an off-grid centre Δ + 2/3 (unique nearest key Δ + 1)",
            partial(img.hard_attention_limit, offset=sp.Rational(2, 3))),
           ("the centre Δ + f for every f in (-1/2, 1/2), f = (u - v)/(2(1 + u + v)), u, v ≥ 0",
            partial(img.hard_attention_limit, offset=ANY_FRACTION)),
           ("the float offset 0.49999999999999994, read as its exact binary value just below 1/2 (key Δ)",
            partial(img.hard_attention_limit, offset=0.49999999999999994)),
           ("the centre Δ(Δ+1)/2, always an integer", partial(img.hard_attention_limit,
                                                              center=DELTA * (DELTA + 1) / 2)),
           ("the centre Δ/2 + 1/4, never a half-integer (nearest key floor(Δ/2 + 3/4))",
            partial(img.hard_attention_limit, center=DELTA / 2 + sp.Rational(1, 4))),
           ("the centre Δ + min(1/3, u), u ≥ 0 (a Min factor)",
            partial(img.hard_attention_limit, offset=sp.Min(THIRD, _U))),
           ("the centre Δ + max(-1/4, min(1/3, f)), f real (a clamped fraction)",
            partial(img.hard_attention_limit, offset=sp.Max(-sp.Rational(1, 4), sp.Min(THIRD, UNBOUNDED)))),
           ("the centre O/2 + 1/2 for an odd O, always an integer (parity)",
            partial(img.hard_attention_limit, center=ODD / 2 + HALF)),
           ("the centre (Δ_1 + Δ_2 + Δ_3)/20 + 1/40, never a half-integer (a linear form, decided by Bézout)",
            partial(img.hard_attention_limit, center=TRIPLE / 20 + sp.Rational(1, 40))),
           ("the centre Δ + sin(f)/3, f real (a bounded part)",
            partial(img.hard_attention_limit, offset=sp.sin(UNBOUNDED) / 3)))),
    Claim("lemma-1", "heads that each attend to one shift, concatenated and projected, form a convolution",
          "lem-heads-shifts", img.lemma1_block_identity,
          ((SIGN, partial(img.lemma1_block_identity, sign=1)),
           ("the output blocks of heads 1 and 2 swapped", partial(img.lemma1_block_identity, swap_blocks=True)),
           ("attention 3δ_{q,k+Δ} + 1, not a shift", partial(img.lemma1_block_identity, attention=_nonshift)),
           ("each head reads q - Δ instead of q + Δ", partial(img.lemma1_block_identity,
                                                               attention=_flipped_shift)),
           ("two heads on tap 1 and none on tap 2", partial(img.lemma1_block_identity, relabel=(1, 1))),
           ("every head moved to the next tap, h → h + 1, without wrap-around (tap 1 has no head)",
            partial(img.lemma1_block_identity, relabel=_next_tap)),
           ("the heads relabelled h → N_h - h (a reflection one short: tap 0 does not exist)",
            partial(img.lemma1_block_identity, relabel=_reflection_one_short)),
           ("the heads relabelled h → N_h + 2 - h (a reflection one past: head 1 on tap N_h + 1)",
            partial(img.lemma1_block_identity, relabel=_reflection_one_past))),
          f"{CH03}#lem-heads-shifts",
          ("tests/test_construct_image.py::test_heads_are_one_hot_and_centres_are_the_kernel_grid",
           "tests/test_proofs_image.py::test_lemma1_rejects_a_non_shift",
           "tests/test_proofs_image.py::test_lemma1_compares_up_to_a_relabelling_of_heads",
           "tests/test_proofs_image.py::test_lemma1_recognises_a_symbolic_relabelling_of_all_heads",
           "tests/test_proof_forms.py::test_lemma1_compares_sums_over_heads_up_to_a_relabelling"),
          (("heads 1 and 2 exchanged, each with its tap, value and output block",
            partial(img.lemma1_block_identity, relabel=(2, 1))),
           ("heads 1, 2, 3 relabelled by a 3-cycle", partial(img.lemma1_block_identity, relabel=(2, 3, 1))),
           ("all N_h heads relabelled h → N_h + 1 - h (centre, value and block moved together)",
            partial(img.lemma1_block_identity, relabel=_reflection)),
           ("all N_h heads shifted cyclically by c ≥ 0, h → ((h + c) mod N_h) + 1",
            partial(img.lemma1_block_identity, relabel=_cyclic_shift)),
           ("all N_h heads reflected, then shifted, h → ((3 - h) mod N_h) + 1",
            partial(img.lemma1_block_identity, relabel=_reflected_shift)),
           ("all N_h heads shifted backwards, h → ((h - 2) mod N_h) + 1",
            partial(img.lemma1_block_identity, relabel=_backward_shift)))),
    Claim("rank-condition", "rank W_Δ ≤ D_h suffices for one head per tap (not necessary: see the counterexample)",
          "lem-rank-bound", img.rank_condition,
          (("heads one dimension too small", partial(img.rank_condition, short_by=1)),),
          f"{CH03}#lem-rank-bound",
          ("tests/test_construct_image.py::test_low_rank_taps_factorise_and_full_rank_raises",
           "tests/test_proofs_image.py::test_rank_counterexample_is_exact_numerically")),
    Claim("rank-bound", "one head per tap needs rank W_Δ ≤ D_h: every (D_h+1)-minor of W_val W_out vanishes",
          "lem-rank-bound", partial(img.rank_bound, d_in=3, d_h=2, d_out=3),
          (("rank ≤ 1 claimed for D_h = 2", partial(img.rank_bound, d_in=3, d_h=2, d_out=3, claimed_rank=1)),
           ("rank ≤ 1 claimed for D_h = 2, D_in = 4", partial(img.rank_bound, d_in=4, d_h=2, d_out=2,
                                                               claimed_rank=1))),
          f"{CH03}#lem-rank-bound",
          ("tests/test_proofs_image.py::test_rank_bound_for_several_shapes",),
          (("D_in = 4, D_h = 1, D_out = 2", partial(img.rank_bound, d_in=4, d_h=1, d_out=2)),)),
    Claim("theorem-1-2d", "MHSA with K² quadratic heads, α→∞, centres on the taps, zero padding then crop, "
          "D_h ≥ rank W_Δ computes any K×K convolution (any H, W, K, p)", "thm-attention-conv", img.theorem1,
          ((SIGN, partial(img.theorem1, sign=1)),
           ("half-integer centres: ties", partial(img.theorem1, offset=HALF)),
           ("attention over the unpadded image (at the border a head reads the nearest pixel)",
            partial(img.theorem1, padded=False))),
          f"{CH03}#thm-attention-conv",
          ("tests/test_construct_image.py::test_hard_mode_matches_conv2d",
           "tests/test_finite_alpha.py::test_finite_alpha_converges_to_the_convolution",
           "tests/test_proofs_image.py::test_unpadded_theorem_fails_at_the_border_only"),
          (("centres off the grid by 1/3 (unique nearest keys)", partial(img.theorem1, offset=THIRD)),
           ("without padding, at every output whose receptive field lies inside the image",
            partial(img.theorem1, padded=False, interior=True)))),
    Claim("unpadded-border", "without padding the construction fails at the border: a head there reads the nearest "
          "pixel, where the zero-padded convolution reads 0 (a refutation)", "thm-attention-conv",
          img.unpadded_boundary_refutation,
          (("the same refutation of the padded construction", partial(img.unpadded_boundary_refutation,
                                                                      padded=True)),),
          f"{CH03}#thm-attention-conv",
          ("tests/test_proofs_limit.py::test_unpadded_refutation_verifies_what_it_shows",
           "tests/test_proofs_image.py::test_unpadded_border_head_reads_the_nearest_pixel")),
    Claim("one-dimensional", "on sequences D_p = 2 suffices: K heads compute a 1-D convolution", "cor-1d",
          img.one_dimensional_case,
          ((SIGN, partial(img.one_dimensional_case, sign=1)),
           ("coefficient +2: heads on -Δ, a flipped kernel", partial(img.one_dimensional_case, center_coefficient=2))),
          f"{CH03}#cor-1d",
          ("tests/test_construct_image.py::test_hard_mode_property_1d",),
          (("centres off the grid by -1/4", partial(img.one_dimensional_case, offset=-sp.Rational(1, 4))),)),
    Claim("dilation-stride", "heads centred on d⊙a - p and outputs read at s⊙q give the dilated, strided convolution",
          "cor-dilation-stride", img.dilation_and_stride,
          ((SIGN, partial(img.dilation_and_stride, sign=1)),
           ("centres that ignore the dilation", partial(img.dilation_and_stride, dilated_centers=False))),
          f"{CH03}#cor-dilation-stride",
          ("tests/test_construct_image.py::test_hard_mode_property_2d",
           "tests/test_finite_alpha.py::test_finite_alpha_converges_to_the_convolution"),
          (("centres off the grid by 1/3", partial(img.dilation_and_stride, offset=THIRD)),)),
    Claim("finite-alpha-bound", "off-target mass ≤ S/(1+S), S = θ(α)² - 1; error ≤ Σ_h 2ε max_k ‖X_k W^(h)‖",
          "prop-finite-alpha", img.finite_alpha_bound,
          (("a mass bound half as large", partial(img.finite_alpha_bound, factor=sp.Rational(1, 2))),
           ("a mass bound 10% smaller", partial(img.finite_alpha_bound, factor=sp.Rational(9, 10))),
           ("the bound stated with θ(2α), tighter than the head's weights", partial(img.finite_alpha_bound,
                                                                                   claimed_alpha=2)),
           ("the bound applied to a head with centre coefficient -1 (peak at Δ/2)",
            partial(img.finite_alpha_bound, coefficient=-1)),
           (SIGN, partial(img.finite_alpha_bound, sign=1)),
           ("θ summed over n ≥ 0 only (one-sided): a tail runs over a reversed range",
            partial(img.finite_alpha_bound, theta_range=(0, sp.oo))),
           ("θ truncated to |n| ≤ 5", partial(img.finite_alpha_bound, theta_range=(-5, 5))),
           ("the error bound with ‖Y_k - Y_t‖ ≤ 1·max ‖Y‖, the factor 1 for 2 (a query token -1 among +1 meets 2ε)",
            partial(img.finite_alpha_bound, difference_factor=1)),
           ("the mass bound with the float factor 0.9999999999999999, just below 1",
            partial(img.finite_alpha_bound, factor=0.9999999999999999))),
          f"{CH03}#prop-finite-alpha",
          ("tests/test_construct_image.py::test_finite_alpha_error_is_under_the_bound",
           "tests/test_finite_alpha.py::test_bound_is_nearly_attained",
           "tests/test_finite_alpha.py::test_sympy_bound_fails_at_the_step_it_breaks",
           "tests/test_finite_alpha.py::test_tails_are_shown_nonnegative_from_their_summand_and_range",
           "tests/test_finite_alpha.py::test_one_sided_and_truncated_theta_are_broken_by_the_library_head",
           "tests/test_finite_alpha.py::test_the_factor_two_is_derived_and_met",
           "tests/test_finite_alpha.py::test_float_constants_are_read_exactly"),
          (("a looser bound, twice as large", partial(img.finite_alpha_bound, factor=2)),
           ("a looser bound stated with θ(α/2)", partial(img.finite_alpha_bound, claimed_alpha=sp.Rational(1, 2))),
           ("a looser error bound, with the factor 3 for 2", partial(img.finite_alpha_bound, difference_factor=3)))),
    Claim("factorisation", "softmax of a row term plus a column term is the Kronecker product of two softmaxes",
          "prop-factorisation", img.softmax_factorization,
          (("a term c·a_i·b_j that couples the axes", partial(img.softmax_factorization, coupled=True)),),
          f"{CH03}#prop-factorisation",
          ("tests/test_positional_image.py::test_softmax_factorises_over_axes",
           "tests/test_positional_image.py::test_factorised_layer_equals_dense_layer")),
    Claim("rank-counterexample", "the rank condition is not necessary: two D_h = 1 heads with mixed attention "
          "reproduce a K = 2 conv with rank-2 taps; the α→∞ limit of -α(δ-1/2)² + b_δ realises the heads",
          "rem-rank-counterexample", img.rank_counterexample,
          (("head 2 mixes (1/2, 1/2)", partial(img.rank_counterexample, mix=(HALF, HALF))),
           ("head 2 mixes (2/3, 1/3)", partial(img.rank_counterexample, mix=(2 * THIRD, THIRD)))),
          f"{CH03}#rem-rank-counterexample",
          ("tests/test_proofs_image.py::test_rank_counterexample_is_exact_numerically",)),)
