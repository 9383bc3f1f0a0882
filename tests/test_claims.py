"""The claims ledger: every claim has its three checks, every proof verifies, rejects its false variants and keeps
its true variants."""

from __future__ import annotations

from pathlib import Path

import pytest
import sympy as sp

from attnconv.claims import (CLAIMS, book_numbers, immediate_general_steps, ledger_html, missing_checks, run_ledger,
                             scope_counts)
from attnconv.proofs import verify_equal

ROOT = Path(__file__).resolve().parents[1]

CORE = {"quadratic-identity", "shift-invariance", "hard-limit", "lemma-1", "rank-condition", "theorem-1-2d",
        "one-dimensional", "dilation-stride", "finite-alpha-bound", "fixed-bias", "shaw", "key-dependent",
        "composite", "boundary", "factorisation"}


def test_every_core_claim_is_in_the_ledger_once():
    labels = [c.label for c in CLAIMS]
    assert len(labels) == len(set(labels))
    assert CORE <= set(labels)


def test_every_claim_has_all_three_checks_and_its_tests_exist():
    for claim in CLAIMS:
        assert missing_checks(claim, ROOT) == [], claim.label


def test_missing_checks_notices_a_missing_test():
    claim = CLAIMS[0]
    broken = type(claim)(**{**claim.__dict__, "tests": ("tests/test_claims.py::test_no_such_test",)})
    assert missing_checks(broken, ROOT) == ["test tests/test_claims.py::test_no_such_test"]


@pytest.fixture(scope="module")
def rows():
    return run_ledger()


def test_every_proof_false_variant_and_true_variant_runs_as_the_ledger_says(rows):
    for row in rows:
        assert row.result.verified, row.claim.label
        assert row.false_rejected and all(rejected for _, rejected in row.false_rejected), row.claim.label
        assert all(verified for _, verified in row.true_verified), row.claim.label
        assert row.ok
    general = [r for r in rows if r.claim.label in CORE and r.result.scope in ("general", "induction")]
    assert len(general) >= 12


def test_no_general_label_on_a_proof_whose_sides_are_the_same_expression(rows):
    for row in rows:
        assert immediate_general_steps(row.result) == [], row.claim.label
    scopes = {row.claim.label: row.result.scope for row in rows}
    assert all(scopes[label] == "definition" for label in ("conv-shifts", "key-dependent", "composite"))
    assert scopes["shaw"] == scopes["alibi"] == "general"  # derived from the logits, with softmax and clipping
    # the check itself notices a general proof whose two sides are one expression
    x = sp.Symbol("x")
    assert immediate_general_steps(verify_equal("c", "s", x + 1, 1 + x, scope="general")) == ["c"]


def test_encoding_claims_list_the_opposite_sign():
    for label in ("hard-limit", "lemma-1", "theorem-1-2d", "one-dimensional", "dilation-stride"):
        claim = next(c for c in CLAIMS if c.label == label)
        assert any("sign" in description for description, _ in claim.false_variants), label


def test_ledger_page_counts_scopes_and_links_the_boxes(rows):
    rows = [r for r in rows if r.claim.label in ("lemma-1", "composite", "t5-buckets")]  # the whole ledger's rows
    counts = scope_counts(rows)
    assert counts == {"general": 0, "induction": 1, "instance": 1, "definition": 1}
    page = ledger_html(rows, book_numbers(ROOT))
    assert '<a href="../notebooks/03_attention_can_express_convolution.html#lem-heads-shifts">Lemma 3.1</a>' in page
    assert "Theorem 5.3" in page and "tests/test_composite.py::test_matches_the_formula" in page
    assert "the output blocks of heads 1 and 2 swapped" in page and "permuted bucket ids" in page
    assert "expanding definitions" in page


def test_book_numbers_follow_the_chapters():
    numbers = book_numbers(ROOT)
    assert numbers["lem-conv-shifts"] == "Lemma 1.1"
    assert numbers["thm-attention-conv"] == "Theorem 3.1" and numbers["thm-shaw"] == "Theorem 5.2"


def test_the_ledger_lists_every_class_of_variant():
    """Each class of wrong or right answer the proofs must tell apart is a listed variant of its claim."""
    false = {c.label: [d for d, _ in c.false_variants] for c in CLAIMS}
    true = {c.label: [d for d, _ in c.true_variants] for c in CLAIMS}
    expected_false = {
        "hard-limit": ["Δ/2", "unbounded", "half-integer", "opposite sign",
                       "float offset 0.5",  # a float read as its exact value
                       "Max factor",  # a Max in the centre: a verdict, not a PolynomialError
                       "Δ(Δ+1)/4"],  # sometimes a half-integer: refuted at a named value
        "lemma-1": ["swapped", "two heads on tap 1", "without wrap-around", "N_h - h"],
        "theorem-1-2d": ["unpadded image"],
        "finite-alpha-bound": ["half as large", "θ(2α)", "coefficient -1", "opposite sign",
                               "n ≥ 0 only", "|n| ≤ 5",  # tails positive by their range, not by a name
                               "factor 1"],  # the 2 of ‖Y_k - Y_t‖ ≤ 2 max ‖Y‖ is derived
        "alibi": ["future keys", "bidirectional normaliser"],
        "sequence-conventions": ["flipped clip", "i - j", "window one key too wide", "query's row", "next key",
                                 "own key"],  # the window, frame and causal mode the chapters use
        "t5-buckets": ["k + 4", "values only"],  # the tails at every offset, not a window of them
        "fixed-bias": ["column δ + k, read at i - j + k", "ε = -δ, with one key too many"],
        "boundary": ["max(-k, -i)"],
        "unpadded-border": ["padded construction"],
    }
    expected_true = {
        "hard-limit": ["every f in (-1/2, 1/2)", "0.49999999999999994", "Min factor", "clamped fraction",
                       "Δ(Δ+1)/2, always an integer", "Δ/2 + 1/4, never a half-integer"],
        "lemma-1": ["exchanged", "3-cycle", "N_h + 1 - h", "cyclically"],
        "theorem-1-2d": ["inside the image"],
        "finite-alpha-bound": ["twice as large", "θ(α/2)", "factor 3"],
        "t5-buckets": ["permuted bucket ids", "k = 12"],
        "fixed-bias": ["column δ + k", "ε = -δ"],
        "boundary": ["max(-k, -i)"],
    }
    for expected, listed in ((expected_false, false), (expected_true, true)):
        for label, fragments in expected.items():
            for fragment in fragments:
                assert any(fragment in d for d in listed[label]), (label, fragment)


def test_a_shared_ledger_runs_once_and_again_when_the_source_changes(tmp_path, monkeypatch):
    """``$ATTNCONV_LEDGER_CACHE``: the book page and these tests read one run (``make test``), not a stale one."""
    from dataclasses import replace

    import attnconv.claims.ledger as ledger

    runs = []
    claim = next(c for c in CLAIMS if c.label == "composite")

    def proof():
        runs.append(1)
        return claim.proof()

    counted = (replace(claim, proof=proof),)
    first = ledger._shared_run(tmp_path, counted)
    second = ledger._shared_run(tmp_path, counted)
    assert len(runs) == 1 and [r.ok for r in second] == [r.ok for r in first] == [True]
    assert second[0].claim is counted[0] and repr(second[0].result) == repr(first[0].result)
    assert second[0].seconds == first[0].seconds  # the first run's times, read back
    monkeypatch.setattr(ledger, "_source_key", lambda: "another-version-of-the-library")
    ledger._shared_run(tmp_path, counted)
    assert len(runs) == 2
    with pytest.raises(RuntimeError, match="other claims"):
        ledger._shared_run(tmp_path, CLAIMS[:2])
    monkeypatch.setenv(ledger.LEDGER_CACHE, str(tmp_path / "unused"))
    assert len(run_ledger(counted)) == 1 and not (tmp_path / "unused").exists()  # a chosen subset always runs


def test_a_proof_that_raises_fails_the_ledger_instead_of_stopping_it():
    """Every proof gives a verdict: one that raises is recorded as a crash, which is neither a verification nor a
    rejection, so the row is not ok and the ledger (and the book) says which proof crashed."""
    from dataclasses import replace

    def crash():
        raise ZeroDivisionError("boom")

    claim = next(c for c in CLAIMS if c.label == "composite")
    broken = replace(claim, false_variants=claim.false_variants + (("a variant that raises", crash),),
                     true_variants=(("a true variant that raises", crash),))
    row, = run_ledger((broken,))
    assert row.result.verified and not row.ok
    assert dict(row.false_rejected)["a variant that raises"] is False
    assert dict(row.true_verified)["a true variant that raises"] is False
    crashed, = run_ledger((replace(claim, proof=crash),))
    assert not crashed.result.verified and crashed.result.claim == "crashed: ZeroDivisionError"
    assert crashed.result.status == "not decided" and not crashed.ok
