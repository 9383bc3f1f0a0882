"""The claims ledger: every claim of Parts I-III with its three checks.

Each :class:`Claim` names the statement, the chapter's ``prf:`` label, the SymPy proof (a callable returning a
:class:`~attnconv.proofs.result.ProofResult`), a false variant of it that the proof must reject, the chapter cell that
checks it numerically, and the pytest node ids that test it. The book page *Claims ledger* runs every proof while
the book builds and fails the build when a claim lacks a check or a proof does not verify.
"""

from __future__ import annotations

import html
import re
import time
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Callable

import sympy as sp

from .proofs import ProofResult
from .proofs import image as img
from .proofs import sequence as seq

__all__ = ["Claim", "CLAIMS", "LedgerRow", "ledger_html", "missing_checks", "run_ledger"]

CH01 = "notebooks/01_convolution_as_shifts.md"
CH03 = "notebooks/03_attention_can_express_convolution.md"
CH05 = "notebooks/05_relative_positions_are_convolutions.md"


@dataclass(frozen=True)
class Claim:
    """One claim of the book.

    Attributes:
        label: short identifier, e.g. ``"lemma-1"``.
        statement: the claim in words.
        prf_label: the chapter's ``prf:`` label, e.g. ``"lem-heads-shifts"``.
        proof: returns the SymPy :class:`~attnconv.proofs.result.ProofResult` of the claim.
        wrong: returns the proof of a false variant; it must not verify.
        numerical: where the chapter checks the claim numerically (``path#prf-label``).
        tests: pytest node ids (``tests/file.py::test_name``) that test the claim.
    """

    label: str
    statement: str
    prf_label: str
    proof: Callable[[], ProofResult]
    wrong: Callable[[], ProofResult]
    numerical: str
    tests: tuple[str, ...]


def _nonshift(q, k, center):
    """3 δ_{q, k+Δ} + 1: a matrix that is not a shift (used as the false variant of Lemma 1)."""
    return 3 * sp.KroneckerDelta(q, k + center) + 1


CLAIMS: tuple[Claim, ...] = (
    Claim("conv-shifts", "a convolution is a sum of shifted inputs, each times one tap's matrix", "lem-conv-shifts",
          img.conv_is_sum_of_shifts, partial(img.conv_is_sum_of_shifts, flipped=True), f"{CH01}#lem-conv-shifts",
          ("tests/test_conv.py::test_conv2d_as_shifts_matches_torch",
           "tests/test_conv.py::test_conv1d_as_shifts_matches_torch")),
    Claim("quadratic-identity", "v·r_δ = -α(‖δ-Δ‖² - ‖Δ‖²) for r_δ = (‖δ‖², δ), v = -α(1, -2Δ), in any dimension",
          "lem-quadratic", img.quadratic_identity, partial(img.quadratic_identity, center_coefficient=2),
          f"{CH03}#lem-quadratic",
          ("tests/test_positional_image.py::test_quadratic_logits_are_the_lemma2_formula",
           "tests/test_proofs_image.py::test_claim_verified_and_wrong_variant_rejected")),
    Claim("shift-invariance", "softmax(x + c·1) = softmax(x) for any length", "lem-quadratic",
          img.shift_invariance, partial(img.shift_invariance, per_entry=True), f"{CH03}#lem-quadratic",
          ("tests/test_proofs_image.py::test_claim_verified_and_wrong_variant_rejected",
           "tests/test_finite_alpha.py::test_shift_invariance_numerically")),
    Claim("hard-limit", "hard attention is the α→∞ limit of the quadratic encoding (integer centres)",
          "lem-quadratic", img.hard_attention_limit, partial(img.hard_attention_limit, integer_centers=False),
          f"{CH03}#thm-attention-conv",
          ("tests/test_positional_image.py::test_hard_mode_is_exactly_one_hot_where_the_target_exists",
           "tests/test_finite_alpha.py::test_finite_alpha_converges_to_the_convolution")),
    Claim("lemma-1", "heads that each attend to one shift, concatenated and projected, form a convolution",
          "lem-heads-shifts", img.lemma1_block_identity, partial(img.lemma1_block_identity, attention=_nonshift),
          f"{CH03}#lem-heads-shifts",
          ("tests/test_construct_image.py::test_heads_are_one_hot_and_centres_are_the_kernel_grid",
           "tests/test_proofs_image.py::test_lemma1_rejects_a_non_shift")),
    Claim("rank-condition", "rank W_Δ ≤ D_h suffices for one head per tap (not necessary: see the counterexample)",
          "lem-rank-bound", img.rank_condition, partial(img.rank_condition, short_by=1), f"{CH03}#lem-rank-bound",
          ("tests/test_construct_image.py::test_low_rank_taps_factorise_and_full_rank_raises",
           "tests/test_proofs_image.py::test_rank_counterexample_is_exact_numerically")),
    Claim("theorem-1-2d", "MHSA with K² quadratic heads, α→∞, integer centres, zero padding then crop, "
          "D_h ≥ rank W_Δ computes any K×K convolution", "thm-attention-conv", img.theorem1,
          partial(img.theorem1, integer_centers=False), f"{CH03}#thm-attention-conv",
          ("tests/test_construct_image.py::test_hard_mode_matches_conv2d",
           "tests/test_finite_alpha.py::test_finite_alpha_converges_to_the_convolution")),
    Claim("one-dimensional", "on sequences D_p = 2 suffices: K heads compute a 1-D convolution", "cor-1d",
          img.one_dimensional_case, partial(img.one_dimensional_case, center_coefficient=2), f"{CH03}#cor-1d",
          ("tests/test_construct_image.py::test_hard_mode_property_1d",)),
    Claim("dilation-stride", "heads centred on d⊙Δ and outputs read at s⊙p give the dilated, strided convolution",
          "cor-dilation-stride", img.dilation_and_stride, partial(img.dilation_and_stride, dilated_centers=False),
          f"{CH03}#cor-dilation-stride",
          ("tests/test_construct_image.py::test_hard_mode_property_2d",
           "tests/test_finite_alpha.py::test_finite_alpha_converges_to_the_convolution")),
    Claim("finite-alpha-bound", "off-target mass ≤ S/(1+S); error ≤ ε Σ_h max ‖(X_k - X_t) W^(h)‖",
          "prop-finite-alpha", img.finite_alpha_bound, partial(img.finite_alpha_bound, factor=sp.Rational(1, 2)),
          f"{CH03}#prop-finite-alpha",
          ("tests/test_construct_image.py::test_finite_alpha_error_is_under_the_bound",
           "tests/test_finite_alpha.py::test_bound_is_nearly_attained")),
    Claim("fixed-bias", "attention with a fixed relative bias is a lightweight convolution with β = softmax(b)",
          "thm-fixed-bias", seq.fixed_bias_is_lightweight_conv,
          partial(seq.fixed_bias_is_lightweight_conv, offset="query-key"), f"{CH05}#thm-fixed-bias",
          ("tests/test_construct_sequence.py::test_lightconv_to_attention_is_exact",
           "tests/test_construct_sequence.py::test_attention_to_lightconv_for_every_fixed_term")),
    Claim("shaw", "Shaw et al.'s query-dependent term is a dynamic convolution predicted from the query",
          "thm-shaw", seq.query_dependent_is_dynamic_conv,
          partial(seq.query_dependent_is_dynamic_conv, scaled=False), f"{CH05}#thm-shaw",
          ("tests/test_construct_sequence.py::test_shaw_attention_is_a_dynamic_conv",
           "tests/test_construct_sequence.py::test_every_dynamic_conv_is_shaw_attention")),
    Claim("key-dependent", "the key-dependent term is a dynamic convolution predicted from the key token",
          "prop-key-dependent", seq.key_dependent_is_dynamic_conv,
          partial(seq.key_dependent_is_dynamic_conv, predictor="query"), f"{CH05}#prop-key-dependent",
          ("tests/test_positional_sequence.py::test_key_term_kernel_comes_from_the_key_token",)),
    Claim("composite", "composite logits = content logits + three relative convolution kernels", "thm-composite",
          seq.composite_is_sum_of_kernels, partial(seq.composite_is_sum_of_kernels, key_predictor="query"),
          f"{CH05}#thm-composite",
          ("tests/test_composite.py::test_matches_the_formula", "tests/test_composite.py::test_relative_logit_sum")),
    Claim("boundary", "at the edges attention is the renormalised (not zero-padded) lightweight convolution",
          "thm-fixed-bias", seq.boundary_renormalisation, partial(seq.boundary_renormalisation, renormalize=False),
          f"{CH05}#thm-fixed-bias",
          ("tests/test_lightconv.py::test_boundaries_agree_in_the_interior_only",
           "tests/test_construct_sequence.py::test_zero_padded_lightconv_equals_attention_in_the_interior_only")),
    Claim("factorisation", "softmax of a row term plus a column term is the Kronecker product of two softmaxes",
          "prop-factorisation", img.softmax_factorization, partial(img.softmax_factorization, coupled=True),
          f"{CH03}#prop-factorisation",
          ("tests/test_positional_image.py::test_softmax_factorises_over_axes",
           "tests/test_positional_image.py::test_factorised_layer_equals_dense_layer")),
    Claim("causal-lightconv", "causal relative-bias attention is the causal lightweight convolution (i ≥ K-1)",
          "prop-causal-lightconv", seq.causal_bias_is_causal_lightconv,
          partial(seq.causal_bias_is_causal_lightconv, mask_future=False), f"{CH05}#prop-causal-lightconv",
          ("tests/test_reference_options.py::test_causal_lightweight_conv_is_causal_relative_bias_attention",
           "tests/test_reference_options.py::test_sympy_proof_of_the_causal_proposition")),
    Claim("rank-counterexample", "the rank condition is not necessary: two D_h = 1 heads with mixed attention "
          "reproduce a K = 2 conv with rank-2 taps", "rem-rank-counterexample", img.rank_counterexample,
          partial(img.rank_counterexample, mix=(sp.Rational(1, 2), sp.Rational(1, 2))),
          f"{CH03}#rem-rank-counterexample",
          ("tests/test_proofs_image.py::test_rank_counterexample_is_exact_numerically",)),
    Claim("clipped-tails", "a clipped bias is a renormalised convolution with 2N-1 taps and constant tails",
          "rem-clipping", seq.clipped_bias_tails, partial(seq.clipped_bias_tails, tails="zero"), f"{CH05}#rem-clipping",
          ("tests/test_construct_sequence.py::test_clipped_kernel_has_constant_tails",)),
    Claim("alibi", "ALiBi is a lightweight convolution whose kernel decays by e^(-m) per step", "prop-buckets-alibi",
          seq.alibi_kernel_decay, partial(seq.alibi_kernel_decay, rate=2), f"{CH05}#prop-buckets-alibi",
          ("tests/test_positional_sequence.py::test_alibi",)),
    Claim("t5-buckets", "T5 buckets give a kernel with clipped tails and free weights near the query",
          "prop-buckets-alibi", seq.bucketed_kernel_is_piecewise_constant,
          partial(seq.bucketed_kernel_is_piecewise_constant, bucket=lambda offsets, nb, k: [d % nb for d in offsets]),
          f"{CH05}#prop-buckets-alibi",
          ("tests/test_positional_sequence.py::test_bucketed_bias_is_piecewise_constant",)),
)


@dataclass(frozen=True)
class LedgerRow:
    """One claim's checks, as run: the proof, whether its false variant was rejected, and the time taken."""

    claim: Claim
    result: ProofResult
    wrong_rejected: bool
    seconds: float


def missing_checks(claim: Claim, root: Path | str = ".") -> list[str]:
    """What the claim lacks: a proof, a false variant, a numerical check that exists, tests that exist."""
    root = Path(root)
    missing = []
    if not callable(claim.proof) or not callable(claim.wrong):
        missing.append("proof or false variant")
    path, _, label = claim.numerical.partition("#")
    chapter = root / path
    if not chapter.exists() or f":label: {label}" not in chapter.read_text(encoding="utf-8"):
        missing.append(f"numerical check {claim.numerical}")
    if not claim.tests:
        missing.append("pytest tests")
    for node in claim.tests:
        file, _, name = node.partition("::")
        source = root / file
        if not source.exists() or not re.search(rf"^def {re.escape(name)}\(", source.read_text(encoding="utf-8"),
                                                re.M):
            missing.append(f"test {node}")
    return missing


def run_ledger(claims: tuple[Claim, ...] = CLAIMS) -> list[LedgerRow]:
    """Run every claim's proof and false variant, timing the proof."""
    rows = []
    for claim in claims:
        start = time.perf_counter()
        result = claim.proof()
        seconds = time.perf_counter() - start
        rows.append(LedgerRow(claim, result, not claim.wrong().verified, seconds))
    return rows


def ledger_html(rows: list[LedgerRow]) -> str:
    """The ledger as an HTML table: claim, statement, chapter label, scope, verified, false variant, time, tests."""
    head = ("<tr><th>claim</th><th>statement</th><th>chapter</th><th>SymPy scope</th><th>verified</th>"
            "<th>false variant rejected</th><th>proof time</th><th>numerical check</th><th>pytest</th></tr>")
    body = []
    for row in rows:
        c, r = row.claim, row.result
        scope = r.scope if r.scope != "instance" else f"instance ({r.instance})"
        where = f"{scope}<br><small>for all {html.escape(', '.join(r.variables))}</small>" if r.variables else scope
        tests = "<br>".join(f"<code>{html.escape(t.split('::')[-1])}</code>" for t in c.tests)
        chapter = c.numerical.split("#")[0].split("/")[-1].removesuffix(".md")
        body.append(
            f"<tr><td>{html.escape(c.label)}</td><td>{html.escape(c.statement)}</td>"
            f"<td><code>{html.escape(c.prf_label)}</code></td><td>{where}</td>"
            f"<td>{'✔' if r.verified else '✘ NOT verified'}</td><td>{'✔' if row.wrong_rejected else '✘'}</td>"
            f"<td>{row.seconds:.2f} s</td><td>{html.escape(chapter)}</td><td>{tests}</td></tr>")
    return f'<table class="claims-ledger">{head}{"".join(body)}</table>'
