"""The claims ledger: every claim has its three checks, every proof verifies and rejects its false variant."""

from __future__ import annotations

from pathlib import Path

from attnconv.claims import CLAIMS, missing_checks, run_ledger

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


def test_ledger_verifies_in_general_and_fast():
    rows = run_ledger()
    for row in rows:
        assert row.result.verified and row.wrong_rejected, row.claim.label
    general = [r for r in rows if r.claim.label in CORE and r.result.scope in ("general", "induction")]
    assert len(general) >= 13
    assert sum(r.seconds for r in rows) < 60
