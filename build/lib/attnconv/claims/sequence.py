"""The ledger's claims about sequences (chapter 05; Chang et al. 2021), with their variants."""

from __future__ import annotations

from functools import partial

import sympy as sp
import torch

from ..positional.sequence import relative_position_bucket
from ..proofs import sequence as seq
from ..proofs.conventions import conventions_match_library
from .ledger import CH05, Claim

__all__ = ["SEQUENCE_CLAIMS"]


def _modulo_buckets(offsets, num_buckets, max_distance):
    return [d % num_buckets for d in offsets]


def _unclipped_buckets(offsets, num_buckets, max_distance):
    return [d + 20 for d in offsets]  # every offset its own bucket: no clipping


def _relabelled_buckets(offsets, num_buckets, max_distance):
    """T5's buckets with the bucket ids permuted (a bijection): the kernel's shape is unchanged."""
    labels = relative_position_bucket(torch.tensor(offsets), num_buckets, max_distance).tolist()
    return [(3 * label + 1) % num_buckets for label in labels]


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
           ("one key too many (window i-k .. i+k+1)", partial(seq.fixed_bias_is_lightweight_conv, extra_key=True))),
          f"{CH05}#thm-fixed-bias",
          ("tests/test_construct_sequence.py::test_lightconv_to_attention_is_exact",
           "tests/test_construct_sequence.py::test_attention_to_lightconv_for_every_fixed_term")),
    Claim("sequence-conventions", "the proofs read the offset δ = j - i and the tap clip(δ) as the library's band "
          "does", "thm-fixed-bias", conventions_match_library,
          (("a flipped clip, clip(-δ)", partial(conventions_match_library, clip=_flipped_clip)),
           ("the offset i - j (query minus key)", partial(conventions_match_library, offset=_query_minus_key)),
           ("a clip one tap too wide", partial(conventions_match_library, clip=_wide_clip))),
          f"{CH05}#thm-fixed-bias",
          ("tests/test_proofs_sequence.py::test_sequence_conventions_are_the_library_band",)),
    Claim("boundary", "at the edges attention is the renormalised (not zero-padded) lightweight convolution",
          "thm-fixed-bias", seq.boundary_renormalisation,
          (("the zero-padded convolution", partial(seq.boundary_renormalisation, renormalize=False)),),
          f"{CH05}#thm-fixed-bias",
          ("tests/test_lightconv.py::test_boundaries_agree_in_the_interior_only",
           "tests/test_construct_sequence.py::test_zero_padded_lightconv_equals_attention_in_the_interior_only")),
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
    Claim("t5-buckets", "T5 buckets give a kernel with clipped tails and free weights near the query",
          "prop-buckets-alibi", seq.bucketed_kernel_is_piecewise_constant,
          (("buckets by offset modulo the bucket count", partial(seq.bucketed_kernel_is_piecewise_constant,
                                                                  bucket=_modulo_buckets)),
           ("one bucket per offset (no clipping)", partial(seq.bucketed_kernel_is_piecewise_constant,
                                                            bucket=_unclipped_buckets))),
          f"{CH05}#prop-buckets-alibi",
          ("tests/test_positional_sequence.py::test_bucketed_bias_is_piecewise_constant",),
          (("T5's buckets with permuted bucket ids", partial(seq.bucketed_kernel_is_piecewise_constant,
                                                             bucket=_relabelled_buckets)),
           ("16 buckets, k = 10", partial(seq.bucketed_kernel_is_piecewise_constant, num_buckets=16,
                                          max_distance=10)))),
    Claim("shaw", "a head with Shaw et al.'s clipped query-dependent logits is a renormalised dynamic convolution "
          "predicted from the query", "thm-shaw", seq.query_dependent_is_dynamic_conv,
          (("W^D without the 1/√D_h", partial(seq.query_dependent_is_dynamic_conv, scaled=False)),
           ("a 2k+1-tap kernel with zero tails (clipping ignored)", partial(seq.query_dependent_is_dynamic_conv,
                                                                           tails="zero"))),
          f"{CH05}#thm-shaw",
          ("tests/test_construct_sequence.py::test_shaw_attention_is_a_dynamic_conv",
           "tests/test_construct_sequence.py::test_every_dynamic_conv_is_shaw_attention")),
    Claim("shaw-rank", "the Shaw kernel predictor W^D = W^Q A^T/√D_h has rank ≤ D_h", "thm-shaw",
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
)
