"""The claims ledger: every claim of Parts I-III with its three checks and its variants.

Each :class:`Claim` names the statement, the chapter's ``prf:`` label, the SymPy proof (a callable returning a
:class:`~attnconv.proofs.result.ProofResult`), named false variants that the proof must reject, named true variants
that it must still verify (so that it is neither too weak nor too strict), the chapter cell that checks it
numerically, and the pytest node ids that test it. The book page *Claims ledger* runs every entry while the book
builds and fails the build when a claim lacks a check, a proof does not verify, a false variant is not rejected or
a true variant is not verified.
"""

from __future__ import annotations

import html
import re
import time
from collections import Counter
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Callable

import sympy as sp
import torch

from .positional.sequence import relative_position_bucket
from .proofs import ProofResult
from .proofs import image as img
from .proofs import sequence as seq
from .proofs.result import SCOPES

__all__ = ["Claim", "CLAIMS", "LedgerRow", "book_numbers", "ledger_html", "missing_checks", "run_ledger",
           "scope_counts", "immediate_general_steps"]

CH01 = "notebooks/01_convolution_as_shifts.md"
CH03 = "notebooks/03_attention_can_express_convolution.md"
CH05 = "notebooks/05_relative_positions_are_convolutions.md"

Variant = tuple[str, Callable[[], ProofResult]]


@dataclass(frozen=True)
class Claim:
    """One claim of the book.

    Attributes:
        label: short identifier, e.g. ``"lemma-1"``.
        statement: the claim in words.
        prf_label: the chapter's ``prf:`` label, e.g. ``"lem-heads-shifts"``.
        proof: returns the SymPy :class:`~attnconv.proofs.result.ProofResult` of the claim.
        false_variants: ``(description, proof)`` pairs of false statements; each proof must not verify.
        numerical: where the chapter checks the claim numerically (``path#prf-label``).
        tests: pytest node ids (``tests/file.py::test_name``) that test the claim.
        true_variants: ``(description, proof)`` pairs of true statements the proof must still verify (an
            off-grid centre with a unique nearest key, a relabelled bucket function, ...).
    """

    label: str
    statement: str
    prf_label: str
    proof: Callable[[], ProofResult]
    false_variants: tuple[Variant, ...]
    numerical: str
    tests: tuple[str, ...]
    true_variants: tuple[Variant, ...] = ()


def _nonshift(q, k, center):
    """3 δ_{q, k+Δ} + 1: a matrix that is not a shift (used as a false variant of Lemma 1)."""
    return 3 * sp.KroneckerDelta(q, k + center) + 1


def _flipped_shift(q, k, center):
    """δ_{k, q-Δ}: the head reads q - Δ instead of q + Δ (a false variant of Lemma 1)."""
    return sp.KroneckerDelta(k, q - center)


def _modulo_buckets(offsets, num_buckets, max_distance):
    return [d % num_buckets for d in offsets]


def _unclipped_buckets(offsets, num_buckets, max_distance):
    return [d + 20 for d in offsets]  # every offset its own bucket: no clipping


def _relabelled_buckets(offsets, num_buckets, max_distance):
    """T5's buckets with the bucket ids permuted (a bijection): the kernel's shape is unchanged."""
    labels = relative_position_bucket(torch.tensor(offsets), num_buckets, max_distance).tolist()
    return [(3 * label + 1) % num_buckets for label in labels]


SIGN = "the encoding with the opposite sign, v = +α(1, -2Δ): no interior maximum"
THIRD = sp.Rational(1, 3)
HALF = sp.Rational(1, 2)

CLAIMS: tuple[Claim, ...] = (
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
    Claim("hard-limit", "hard attention is the α→∞ limit of the quadratic encoding, derived from its logit: "
          "weight 1 on the unique nearest key", "lem-quadratic", img.hard_attention_limit,
          ((SIGN, partial(img.hard_attention_limit, sign=1)),
           ("a half-integer centre Δ + 1/2: a tie between two keys", partial(img.hard_attention_limit, offset=HALF))),
          f"{CH03}#thm-attention-conv",
          ("tests/test_positional_image.py::test_hard_mode_is_exactly_one_hot_where_the_target_exists",
           "tests/test_proofs_limit.py::test_off_grid_centre_limit_matches_the_library"),
          (("an off-grid centre Δ + 1/3 (unique nearest key Δ)", partial(img.hard_attention_limit, offset=THIRD)),
           ("an off-grid centre Δ + 2/3 (unique nearest key Δ + 1)",
            partial(img.hard_attention_limit, offset=sp.Rational(2, 3))))),
    Claim("lemma-1", "heads that each attend to one shift, concatenated and projected, form a convolution",
          "lem-heads-shifts", img.lemma1_block_identity,
          ((SIGN, partial(img.lemma1_block_identity, sign=1)),
           ("the output blocks of heads 1 and 2 swapped", partial(img.lemma1_block_identity, swap_blocks=True)),
           ("attention 3δ_{q,k+Δ} + 1, not a shift", partial(img.lemma1_block_identity, attention=_nonshift)),
           ("each head reads q - Δ instead of q + Δ", partial(img.lemma1_block_identity,
                                                               attention=_flipped_shift))),
          f"{CH03}#lem-heads-shifts",
          ("tests/test_construct_image.py::test_heads_are_one_hot_and_centres_are_the_kernel_grid",
           "tests/test_proofs_image.py::test_lemma1_rejects_a_non_shift")),
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
           ("attention over the unpadded image", partial(img.theorem1, padded=False))),
          f"{CH03}#thm-attention-conv",
          ("tests/test_construct_image.py::test_hard_mode_matches_conv2d",
           "tests/test_finite_alpha.py::test_finite_alpha_converges_to_the_convolution"),
          (("centres off the grid by 1/3 (unique nearest keys)", partial(img.theorem1, offset=THIRD)),)),
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
           ("a mass bound 10% smaller", partial(img.finite_alpha_bound, factor=sp.Rational(9, 10)))),
          f"{CH03}#prop-finite-alpha",
          ("tests/test_construct_image.py::test_finite_alpha_error_is_under_the_bound",
           "tests/test_finite_alpha.py::test_bound_is_nearly_attained")),
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
          ("tests/test_proofs_image.py::test_rank_counterexample_is_exact_numerically",)),
    Claim("fixed-bias", "attention with a fixed relative bias is a lightweight convolution with β = softmax(b)",
          "thm-fixed-bias", seq.fixed_bias_is_lightweight_conv,
          (("the bias indexed by i - j (a flipped kernel)", partial(seq.fixed_bias_is_lightweight_conv,
                                                                    offset="query-key")),
           ("one key too many (window i-k .. i+k+1)", partial(seq.fixed_bias_is_lightweight_conv, extra_key=True))),
          f"{CH05}#thm-fixed-bias",
          ("tests/test_construct_sequence.py::test_lightconv_to_attention_is_exact",
           "tests/test_construct_sequence.py::test_attention_to_lightconv_for_every_fixed_term")),
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
           ("a decay of e^(-2m) per step, causal", partial(seq.alibi_kernel_decay, causal=True, rate=2))),
          f"{CH05}#prop-buckets-alibi",
          ("tests/test_positional_sequence.py::test_alibi",),
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
)


@dataclass(frozen=True)
class LedgerRow:
    """One claim's checks, as run: the proof, each variant's outcome and the time taken.

    Attributes:
        claim: the claim.
        result: its proof.
        false_rejected: ``(description, rejected)`` per false variant.
        true_verified: ``(description, verified)`` per true variant.
        seconds: time of the proof alone.
        variant_seconds: time of all its variants together.
    """

    claim: Claim
    result: ProofResult
    false_rejected: tuple[tuple[str, bool], ...]
    true_verified: tuple[tuple[str, bool], ...]
    seconds: float
    variant_seconds: float

    @property
    def ok(self) -> bool:
        """The proof verifies, every false variant is rejected and every true variant verifies."""
        return (self.result.verified and all(r for _, r in self.false_rejected)
                and all(v for _, v in self.true_verified))


def missing_checks(claim: Claim, root: Path | str = ".") -> list[str]:
    """What the claim lacks: a proof, false variants, a numerical check that exists, tests that exist."""
    root = Path(root)
    missing = []
    if not callable(claim.proof):
        missing.append("proof")
    if not claim.false_variants or not all(isinstance(d, str) and d and callable(f) for d, f in claim.false_variants):
        missing.append("false variants")
    if not all(isinstance(d, str) and d and callable(f) for d, f in claim.true_variants):
        missing.append("true variants")
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
    """Run every claim's proof and all its variants, timing the proof and the variants."""
    rows = []
    for claim in claims:
        start = time.perf_counter()
        result = claim.proof()
        seconds = time.perf_counter() - start
        false = tuple((d, not f().verified) for d, f in claim.false_variants)
        true = tuple((d, f().verified) for d, f in claim.true_variants)
        rows.append(LedgerRow(claim, result, false, true, seconds, time.perf_counter() - start - seconds))
    return rows


def scope_counts(rows: list[LedgerRow]) -> dict[str, int]:
    """How many claims have each scope, in the order of ``SCOPES``."""
    counts = Counter(row.result.scope for row in rows)
    return {scope: counts.get(scope, 0) for scope in SCOPES}


def immediate_general_steps(result: ProofResult) -> list[str]:
    """The claims of ``result`` and its steps (recursively) labelled general or induction whose two sides were the
    same expression before simplification. Must be empty: such a proof is a definition."""
    found = [result.claim] if result.scope in ("general", "induction") and result.immediate else []
    for step in result.steps:
        found += immediate_general_steps(step)
    return found


_NUMBERED = ("definition", "lemma", "theorem", "proposition", "corollary", "remark", "example", "conjecture",
             "axiom", "criterion", "algorithm", "property", "observation", "assumption", "notation")


def book_numbers(root: Path | str = ".", chapters: tuple[str, ...] = (CH01, CH03, CH05)) -> dict[str, str]:
    """The book's number of every ``prf:`` box in ``chapters``: ``{"lem-heads-shifts": "Lemma 3.1", ...}``.

    The book numbers each kind of box per chapter (Lemma 3.1, Theorem 3.1), in order of appearance; the chapter
    number is the file's two-digit prefix.
    """
    numbers = {}
    for path in chapters:
        chapter = int(Path(path).name[:2])
        counts: Counter = Counter()
        text = (Path(root) / path).read_text(encoding="utf-8")
        for match in re.finditer(r"^:{3,}\{prf:(\w+)\}[^\n]*\n((?::\w+:[^\n]*\n)*)", text, re.M):
            kind, options = match.group(1), match.group(2)
            if kind not in _NUMBERED:
                continue
            counts[kind] += 1
            label = re.search(r":label:\s*(\S+)", options)
            if label:
                numbers[label.group(1)] = f"{kind.capitalize()} {chapter}.{counts[kind]}"
    return numbers


_WRAP = "overflow-wrap: anywhere"


def _variant_list(items: tuple[tuple[str, bool], ...], good: str, bad: str) -> str:
    return "<ul style=\"margin: 0.2em 0 0.4em 0\">" + "".join(
        f"<li>{'✔ ' + good if ok else '✘ ' + bad}: {html.escape(d)}</li>" for d, ok in items) + "</ul>"


def ledger_html(rows: list[LedgerRow], numbers: dict[str, str] | None = None, link_prefix: str = "../") -> str:
    """The ledger as HTML: a count of claims by scope, then one block per claim, readable without side-scrolling.

    Each block heads with the book's number of the claim's box (a link to it), the status, the scope and the time;
    then the statement, what SymPy keeps symbolic, the false variants (each rejected), the true variants (each
    verified), the chapter's numerical check (a link) and the pytest tests by name.
    """
    numbers = numbers or {}
    counts = scope_counts(rows)
    summary = "".join(f"<tr><td>{scope}</td><td style=\"text-align: right\">{count}</td></tr>"
                      for scope, count in counts.items())
    total = sum(r.seconds for r in rows)
    variants = sum(r.variant_seconds for r in rows)
    parts = [f'<table class="claims-scopes docutils"><thead><tr><th>scope</th><th>claims</th></tr></thead>'
             f"<tbody>{summary}<tr><td><strong>all</strong></td><td style=\"text-align: right\">{len(rows)}</td></tr>"
             f"</tbody></table>",
             f"<p>Proofs: {total:.1f} s in all; their {sum(len(r.false_rejected) for r in rows)} false and "
             f"{sum(len(r.true_verified) for r in rows)} true variants: {variants:.1f} s.</p>"]
    for row in rows:
        c, r = row.claim, row.result
        page = c.numerical.split("#")[0].removesuffix(".md") + ".html"
        name = numbers.get(c.prf_label, c.prf_label)
        box = f'<a href="{link_prefix}{page}#{html.escape(c.prf_label)}">{html.escape(name)}</a>'
        check = f'<a href="{link_prefix}{page}#{html.escape(c.numerical.split("#")[1])}">' \
                f'{html.escape(numbers.get(c.numerical.split("#")[1], c.numerical.split("#")[1]))}</a>'
        scope = r.scope if r.scope != "instance" else f"instance ({r.instance})"
        if r.scope == "definition":
            scope += " (holds by expanding definitions; SymPy checks the bookkeeping, it derives nothing)"
        status = "✔ verified" if r.verified else "✘ NOT verified"
        tests = "".join(f'<li><span style="{_WRAP}; font-family: monospace">{html.escape(t)}</span></li>'
                        for t in c.tests)
        lines = [
            f'<div class="claims-ledger-entry" id="claim-{html.escape(c.label)}" style="border-top: 1px solid '
            f'rgba(128,128,128,0.4); padding: 0.5em 0; {_WRAP}">',
            f"<p style=\"margin: 0\"><strong>{box}</strong> · <span style=\"font-family: monospace\">"
            f"{html.escape(c.label)}</span> · {status} · "
            f"{html.escape(scope)} · {row.seconds:.2f} s</p>",
            f"<p style=\"margin: 0.2em 0\">{html.escape(c.statement)}</p>",
        ]
        if r.variables:
            lines.append(f"<p style=\"margin: 0.2em 0\"><em>Symbolic in:</em> {html.escape(', '.join(r.variables))}</p>")
        lines.append("<p style=\"margin: 0.2em 0\"><em>False variants:</em></p>"
                     + _variant_list(row.false_rejected, "rejected", "NOT rejected"))
        if row.true_verified:
            lines.append("<p style=\"margin: 0.2em 0\"><em>True variants:</em></p>"
                         + _variant_list(row.true_verified, "verified", "NOT verified"))
        lines.append(f"<p style=\"margin: 0.2em 0\"><em>Numerical check:</em> the cells after {check}</p>")
        lines.append(f"<p style=\"margin: 0.2em 0\"><em>pytest:</em></p><ul style=\"margin: 0\">{tests}</ul></div>")
        parts.append("".join(lines))
    return f'<div class="claims-ledger">{"".join(parts)}</div>'
