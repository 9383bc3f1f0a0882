"""The ledger's claims of chapter 08 (after the papers: Dao & Gu 2024, Luo et al. 2022, Li et al. 2021)."""

from __future__ import annotations

from functools import partial

from ..proofs import after
from .ledger import CH08, Claim

__all__ = ["AFTER_CLAIMS"]

_TESTS = "tests/test_after_the_papers.py"

AFTER_CLAIMS: tuple[Claim, ...] = (
    Claim("ssd-duality", "a scalar-decay SSM h_t = a h_(t-1) + b x_t, y_t = c h_t is the causal convolution with kernel "
          "c a^k b and masked linear attention with the 1-semiseparable mask L_ts = a^(t-s) (t ≥ s)",
          "thm-ssd", after.ssm_is_conv_and_masked_attention,
          (("the mask a^(t-s+1) (one power too many)", partial(after.ssm_is_conv_and_masked_attention,
                                                               power_shift=1)),
           ("a non-causal mask a^|t-s| (the future leaks in)", partial(after.ssm_is_conv_and_masked_attention,
                                                                       causal=False))),
          f"{CH08}#thm-ssd",
          (f"{_TESTS}::test_ssm_recurrence_kernel_and_mask_agree",
           f"{_TESTS}::test_ssd_proof_rejects_its_wrong_variants_for_the_right_reason")),
    Claim("stochastic-rows", "with relative positions inside the softmax every row of attention sums to one, so a "
          "constant input comes out unchanged whatever the positions", "prop-stochastic-rows",
          after.relative_softmax_is_stochastic,
          (("the attention multiplied by a Toeplitz matrix c_(j-i) (Luo et al.'s fix)",
            partial(after.relative_softmax_is_stochastic, multiplier=True)),
           ("the output summed over the first N - 1 keys only", partial(after.relative_softmax_is_stochastic,
                                                                         keys="one short"))),
          f"{CH08}#prop-stochastic-rows",
          (f"{_TESTS}::test_constant_input_is_fixed_by_softmax_attention_and_moved_by_the_toeplitz_fix",
           f"{_TESTS}::test_stochastic_rows_proof_and_its_variants")),
    Claim("patch-conv", "a K x K convolution on pixels is a (2R+1) x (2R+1) convolution on P x P patch tokens, "
          "R = ceil(((K-1)/2)/P): attention with (2R+1)² heads, nine when K ≤ 2P + 1", "thm-patch-conv",
          after.patch_tokens_express_conv,
          (("R = floor(r/P) patch taps (too few heads)", partial(after.patch_tokens_express_conv, reach="floor")),
           ("the weight w_(dI P + u - s) (in-patch positions swapped)",
            partial(after.patch_tokens_express_conv, index="query-key"))),
          f"{CH08}#thm-patch-conv",
          (f"{_TESTS}::test_patch_attention_equals_conv2d",
           f"{_TESTS}::test_patch_proof_rejects_too_few_heads_and_swapped_positions")),
)
