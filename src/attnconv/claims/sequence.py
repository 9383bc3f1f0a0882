"""The ledger's claims about sequences (chapter 05; Chang et al. 2021), with their variants."""

from __future__ import annotations

from functools import partial

import sympy as sp

from ..proofs import rotary
from ..proofs import sequence as seq
from ..proofs.conventions import conventions_match_library
from ..proofs.kernels import t5_bucket
from .ledger import CH05, Claim

__all__ = ["SEQUENCE_CLAIMS"]


def _modulo_buckets(delta, num_buckets, max_distance):
    return sp.Mod(delta, num_buckets)


def _unclipped_buckets(delta, num_buckets, max_distance):
    return delta + 20  # every offset its own bucket: no clipping


def _late_new_bucket(delta, num_buckets, max_distance):
    """T5's buckets, except that |δ| ≥ k + 4 opens a new bucket: right up to k + 3, wrong beyond."""
    return sp.Piecewise((num_buckets, sp.Abs(delta) >= max_distance + 4), (t5_bucket(delta, num_buckets, max_distance),
                                                                           True))


def _far_new_bucket(delta, num_buckets, max_distance):
    """T5's buckets, except that |δ| ≥ 10⁶ opens a new bucket: right at every offset a sequence of the book has."""
    return sp.Piecewise((num_buckets, sp.Abs(delta) >= 10**6), (t5_bucket(delta, num_buckets, max_distance), True))


def _one_sided_new_bucket(delta, num_buckets, max_distance):
    """T5's buckets, except that δ ≤ -(2k + 1) opens a new bucket: the positive side alone is right."""
    return sp.Piecewise((num_buckets + 1, delta <= -2 * max_distance - 1),
                        (t5_bucket(delta, num_buckets, max_distance), True))


def _relabelled_buckets(delta, num_buckets, max_distance):
    """T5's buckets with the bucket ids permuted (a bijection): the kernel's shape is unchanged."""
    return sp.Mod(3 * t5_bucket(delta, num_buckets, max_distance) + 1, num_buckets)


def _values_of_late_new_bucket(offsets, num_buckets, max_distance):
    """The same labelling given only by its values on the offsets asked for."""
    return [int(_late_new_bucket(sp.Integer(d), num_buckets, max_distance)) for d in offsets]


def _wide_window(query, k, length):
    return sp.Max(0, query - k), sp.Min(length - 1, query + k + 1)


def _query_token(query, offset):
    return query


def _causal_with_next(query, k):
    return query - k, query + 1


def _causal_without_self(query, k):
    return query - k, query - 1


def _flipped_clip(delta, k):
    return sp.Max(-k, sp.Min(k, -delta))


def _wide_clip(delta, k):
    return sp.Max(-k - 1, sp.Min(k + 1, delta))


def _query_minus_key(query, key):
    return query - key


SEQUENCE_CLAIMS: tuple[Claim, ...] = (
    Claim("fixed-bias", "attention with a fixed relative bias is a lightweight convolution with β = softmax(b)",
          "thm-fixed-bias", seq.fixed_bias_is_lightweight_conv,
          (("the bias indexed by i - j (a flipped kernel)", partial(seq.fixed_bias_is_lightweight_conv,
                                                                    offset="query-key")),
           ("one key too many (window i-k .. i+k+1)", partial(seq.fixed_bias_is_lightweight_conv, extra_key=True)),
           ("the bias stored by column δ + k, read at i - j + k (flipped)",
            partial(seq.fixed_bias_is_lightweight_conv, table="column", offset="query-key")),
           ("the kernel written over ε = -δ, with one key too many",
            partial(seq.fixed_bias_is_lightweight_conv, kernel_index="reflected", extra_key=True))),
          f"{CH05}#thm-fixed-bias",
          ("tests/test_construct_sequence.py::test_lightconv_to_attention_is_exact",
           "tests/test_construct_sequence.py::test_attention_to_lightconv_for_every_fixed_term",
           "tests/test_proofs_sequence.py::test_sums_are_compared_in_one_written_form"),
          (("the bias stored by its band column δ + k, as the library does (a shifted index)",
            partial(seq.fixed_bias_is_lightweight_conv, table="column")),
           ("the kernel written over ε = -δ (a reflected index)",
            partial(seq.fixed_bias_is_lightweight_conv, kernel_index="reflected")),
           ("both: the column table and the reflected index", partial(seq.fixed_bias_is_lightweight_conv,
                                                                     table="column", kernel_index="reflected")))),
    Claim("sequence-conventions", "the proofs read the offset δ = j - i, the tap clip(δ), the window, the key "
          "frame, chunks of rows and the causal mask of every relative term as the library does, and its band read "
          "back from the logits (checked for N ≤ 6, k ≤ 3)", "thm-fixed-bias", conventions_match_library,
          (("a flipped clip, clip(-δ)", partial(conventions_match_library, clip=_flipped_clip)),
           ("the offset i - j (query minus key)", partial(conventions_match_library, offset=_query_minus_key)),
           ("a clip one tap too wide", partial(conventions_match_library, clip=_wide_clip)),
           ("a window one key too wide on the right", partial(conventions_match_library, window=_wide_window)),
           ("the key-frame kernel read from the query's row", partial(conventions_match_library, token=_query_token)),
           ("a causal head that also reads the next key", partial(conventions_match_library,
                                                                   causal=_causal_with_next)),
           ("a causal head that does not read its own key", partial(conventions_match_library,
                                                                     causal=_causal_without_self))),
          f"{CH05}#thm-fixed-bias",
          ("tests/test_proofs_sequence.py::test_sequence_conventions_are_the_library_band",
           "tests/test_proof_ties.py::test_a_mutant_of_the_band_fails_a_ledger_claim",
           "tests/test_proof_ties.py::test_a_mutant_of_the_causal_mask_fails_the_conventions_claim")),
    Claim("boundary", "at the edges attention is the renormalised (not zero-padded) lightweight convolution",
          "thm-fixed-bias", seq.boundary_renormalisation,
          (("the zero-padded convolution", partial(seq.boundary_renormalisation, renormalize=False)),
           ("the zero-padded convolution, T_i written as max(-k, -i) .. min(k, N-1-i)",
            partial(seq.boundary_renormalisation, renormalize=False, range_form="offsets"))),
          f"{CH05}#thm-fixed-bias",
          ("tests/test_lightconv.py::test_boundaries_agree_in_the_interior_only",
           "tests/test_construct_sequence.py::test_zero_padded_lightconv_equals_attention_in_the_interior_only",
           "tests/test_proofs_sequence.py::test_sums_are_compared_in_one_written_form"),
          (("T_i written as max(-k, -i) .. min(k, N-1-i), an equivalent Max/Min form of the range",
            partial(seq.boundary_renormalisation, range_form="offsets")),)),
    Claim("causal-lightconv", "causal relative-bias attention is the causal lightweight convolution (i ≥ K-1)",
          "prop-causal-lightconv", seq.causal_bias_is_causal_lightconv,
          (("the K - 1 future keys left open", partial(seq.causal_bias_is_causal_lightconv, mask_future=False)),),
          f"{CH05}#prop-causal-lightconv",
          ("tests/test_reference_options.py::test_causal_lightweight_conv_is_causal_relative_bias_attention",
           "tests/test_reference_options.py::test_sympy_proof_of_the_causal_proposition")),
    Claim("clipped-tails", "a clipped bias is a renormalised convolution with 2N-1 taps and constant tails",
          "rem-clipping", seq.clipped_bias_tails,
          (("a 2k+1-tap kernel with zero tails", partial(seq.clipped_bias_tails, tails="zero")),),
          f"{CH05}#rem-clipping",
          ("tests/test_construct_sequence.py::test_clipped_kernel_has_constant_tails",)),
    Claim("alibi", "ALiBi's logits -m|j-i| give a lightweight convolution whose kernel decays by e^(-m) per step",
          "prop-buckets-alibi", seq.alibi_kernel_decay,
          (("a decay of e^(-2m) per step", partial(seq.alibi_kernel_decay, rate=2)),
           ("a decay of e^(-2m) per step, causal", partial(seq.alibi_kernel_decay, causal=True, rate=2)),
           ("the causal head still weighting the future keys (mask ignored)",
            partial(seq.alibi_kernel_decay, causal=True, future_weight=True)),
           ("the causal head with the bidirectional normaliser (mask ignored in Z)",
            partial(seq.alibi_kernel_decay, causal=True, causal_normaliser=False))),
          f"{CH05}#prop-buckets-alibi",
          ("tests/test_positional_sequence.py::test_alibi",
           "tests/test_proofs_sequence.py::test_alibi_proof_matches_the_library_head"),
          (("the causal ALiBi head", partial(seq.alibi_kernel_decay, causal=True)),)),
    Claim("t5-buckets", "T5 buckets give a kernel with clipped tails at every offset |δ| ≥ k and free weights near "
          "the query; the library's buckets are T5's formula (checked at every |δ| ≤ 2^20 and at |δ| = 2^e, e ≤ 62)",
          "prop-buckets-alibi", seq.bucketed_kernel_is_piecewise_constant,
          (("buckets by offset modulo the bucket count", partial(seq.bucketed_kernel_is_piecewise_constant,
                                                                  formula=_modulo_buckets)),
           ("one bucket per offset (no clipping)", partial(seq.bucketed_kernel_is_piecewise_constant,
                                                            formula=_unclipped_buckets)),
           ("T5's buckets up to |δ| = k + 3, a new bucket from |δ| = k + 4 on",
            partial(seq.bucketed_kernel_is_piecewise_constant, formula=_late_new_bucket)),
           ("the same labelling given by its values only (not decided beyond k + 3, so not verified)",
            partial(seq.bucketed_kernel_is_piecewise_constant, bucket=_values_of_late_new_bucket)),
           ("T5's buckets up to |δ| < 10⁶, a new bucket from 10⁶ on",
            partial(seq.bucketed_kernel_is_piecewise_constant, formula=_far_new_bucket)),
           ("T5's buckets, with a new bucket for δ ≤ -(2k + 1) only",
            partial(seq.bucketed_kernel_is_piecewise_constant, formula=_one_sided_new_bucket))),
          f"{CH05}#prop-buckets-alibi",
          ("tests/test_positional_sequence.py::test_bucketed_bias_is_piecewise_constant",
           "tests/test_proofs_sequence.py::test_bucket_tails_are_proved_for_every_offset",
           "tests/test_proofs_window.py::test_a_bucket_opened_at_any_distance_is_refuted_with_its_offset"),
          (("T5's buckets with permuted bucket ids", partial(seq.bucketed_kernel_is_piecewise_constant,
                                                             formula=_relabelled_buckets)),
           ("16 buckets, k = 10", partial(seq.bucketed_kernel_is_piecewise_constant, num_buckets=16,
                                          max_distance=10)),
           ("8 buckets, k = 12 (chapter 05's layer)", partial(seq.bucketed_kernel_is_piecewise_constant,
                                                             num_buckets=8, max_distance=12)))),
    Claim("shaw", "a head with Shaw et al.'s clipped query-dependent logits is a renormalised dynamic convolution "
          "predicted from the query", "thm-shaw", seq.query_dependent_is_dynamic_conv,
          (("W^D without the 1/√D_h", partial(seq.query_dependent_is_dynamic_conv, scaled=False)),
           ("a 2k+1-tap kernel with zero tails (clipping ignored)", partial(seq.query_dependent_is_dynamic_conv,
                                                                           tails="zero"))),
          f"{CH05}#thm-shaw",
          ("tests/test_construct_sequence.py::test_shaw_attention_is_a_dynamic_conv",
           "tests/test_construct_sequence.py::test_every_dynamic_conv_is_shaw_attention")),
    Claim("shaw-rank", "the Shaw kernel predictor W^D = W_qry (R^a)^T/√D_h has rank ≤ D_h", "thm-shaw",
          partial(seq.dynamic_kernel_rank, embed_dim=3, head_dim=2, max_distance=1),
          (("rank ≤ 1 claimed for D_h = 2", partial(seq.dynamic_kernel_rank, embed_dim=3, head_dim=2, max_distance=1,
                                                    claimed_rank=1)),
           ("rank ≤ 1 claimed for C = 4, D_h = 2", partial(seq.dynamic_kernel_rank, embed_dim=4, head_dim=2,
                                                           claimed_rank=1))),
          f"{CH05}#thm-shaw",
          ("tests/test_proofs_sequence.py::test_claim_verifies_and_false_variant_does_not",),
          (("C = 3, D_h = 1, k = 1", partial(seq.dynamic_kernel_rank, embed_dim=3, head_dim=1)),)),
    Claim("key-dependent", "the key-dependent term is a dynamic convolution predicted from the key token",
          "prop-key-dependent", seq.key_dependent_is_dynamic_conv,
          (("the kernel predicted from the query token", partial(seq.key_dependent_is_dynamic_conv,
                                                                 predictor="query")),
           ("the embedding read at δ, not clip(δ)", partial(seq.key_dependent_is_dynamic_conv, clipped=False))),
          f"{CH05}#prop-key-dependent",
          ("tests/test_positional_sequence.py::test_key_term_kernel_comes_from_the_key_token",)),
    Claim("composite", "composite logits = content logits + three relative convolution kernels", "thm-composite",
          seq.composite_is_sum_of_kernels,
          (("the key kernel predicted from the query", partial(seq.composite_is_sum_of_kernels,
                                                               key_predictor="query")),
           ("the fixed kernel read at δ, not clip(δ)", partial(seq.composite_is_sum_of_kernels, fixed_clipped=False))),
          f"{CH05}#thm-composite",
          ("tests/test_composite.py::test_matches_the_formula", "tests/test_composite.py::test_relative_logit_sum")),
    Claim("sinusoid-relative", "a sinusoidal position term p_i^T W p_j depends on j - i alone iff W is a scaled "
          "rotation [[a, b], [-b, a]] on each frequency's block", "prop-sinusoid-relative",
          rotary.sinusoidal_bilinear_is_relative,
          (("a symmetric block [[a, b], [b, a]] (w21 = +w12)", partial(rotary.sinusoidal_bilinear_is_relative,
                                                                       condition="symmetric")),),
          f"{CH05}#prop-sinusoid-relative",
          ("tests/test_rotary.py::test_sinusoidal_term_is_relative_only_for_scaled_rotations",)),
    Claim("rope-relative", "rotary embeddings give the logit (R_i q)·(R_j k) = q^T R_(j-i) k: positions enter only "
          "through the offset", "prop-rope-relative", rotary.rotary_logit_is_relative,
          (("the rotation R_(i+j) (the angles added)", partial(rotary.rotary_logit_is_relative, offset="i+j")),
           ("the rotation R_(i-j) (the offset flipped)", partial(rotary.rotary_logit_is_relative, offset="i-j"))),
          f"{CH05}#prop-rope-relative",
          ("tests/test_rotary.py::test_from_scratch_rotation_is_the_library_and_logits_are_relative",
           "tests/test_rotary.py::test_rotation_matrices_compose_by_the_offset")),
    Claim("rope-kernel", "RoPE with constant content is a lightweight convolution whose kernel logits are "
          "Σ_m r_m cos((j-i)θ_m + φ_m); every such sum of cosines is reached", "thm-rope-kernel",
          rotary.rotary_constant_content_kernel,
          (("the kernel read at i - j (flipped)", partial(rotary.rotary_constant_content_kernel, kernel="flipped")),
           ("no phases: Σ_m r_m cos((j-i)θ_m), an even kernel", partial(rotary.rotary_constant_content_kernel,
                                                                       phases=False)),
           ("the zero-padded convolution at the ends", partial(rotary.rotary_constant_content_kernel,
                                                               renormalize=False))),
          f"{CH05}#thm-rope-kernel",
          ("tests/test_rotary.py::test_constant_content_rope_attention_is_a_lightweight_conv",
           "tests/test_rotary.py::test_kernel_logits_are_a_sum_of_cosines_and_reach_every_coefficient",
           "tests/test_rotary.py::test_rope_kernels_span_at_most_head_dim_and_come_back")),
    Claim("rope-content", "with constant keys RoPE is Shaw's query-dependent term with a_δ = R_δ k; with constant "
          "queries the key-dependent term with c_δ = R_(-δ) q", "prop-rope-content", rotary.rotary_content_kernel,
          (("a_δ = R_(-δ) k", partial(rotary.rotary_content_kernel, query_sign=-1)),
           ("c_δ = R_δ q", partial(rotary.rotary_content_kernel, key_sign=1))),
          f"{CH05}#prop-rope-content",
          ("tests/test_rotary.py::test_constant_keys_give_shaws_term_and_content_is_not_a_convolution",)),
)
