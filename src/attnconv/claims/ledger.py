"""The ledger's records: a :class:`Claim` with its three checks and its variants, and running them."""

from __future__ import annotations

import fcntl
import hashlib
import os
import pickle
import re
import sys
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import sympy as sp

from ..proofs import ProofResult
from ..proofs.result import SCOPES

__all__ = ["CH01", "CH03", "CH05", "CH08", "LEDGER_CACHE", "Claim", "LedgerRow", "Variant", "immediate_general_steps",
           "missing_checks", "run_ledger", "scope_counts"]

# A folder where the whole ledger's run is kept and shared, keyed on the library's source (``make test`` sets it,
# so that the book's ledger page and tests/test_claims.py read one run instead of running every proof twice).
LEDGER_CACHE = "ATTNCONV_LEDGER_CACHE"

CH01 = "notebooks/01_convolution_as_shifts.md"
CH03 = "notebooks/03_attention_can_express_convolution.md"
CH05 = "notebooks/05_relative_positions_are_convolutions.md"
CH08 = "notebooks/08_after_the_papers.md"

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


def run_ledger(claims: tuple[Claim, ...] | None = None) -> list[LedgerRow]:
    """Run every claim's proof and all its variants (all of ``attnconv.claims.CLAIMS`` by default), timing the
    proof and the variants.

    When ``$ATTNCONV_LEDGER_CACHE`` names a folder, the whole ledger (``claims=None``) runs once per version of the
    library's source, SymPy and Python: the first process to ask runs it and keeps the outcome there, any other
    process waits for it and reads it (the rows then carry the first run's times)."""
    if claims is None:
        from . import CLAIMS
        folder = os.environ.get(LEDGER_CACHE)
        if folder:
            return _shared_run(Path(folder), CLAIMS)
        claims = CLAIMS
    return _run(claims)


def _attempt(proof: Callable[[], ProofResult]) -> tuple[ProofResult, bool]:
    """Run one proof: its result, and whether it raised instead (then a result that is not verified and says so).

    A proof must give a verdict, never a traceback; a crash is neither a verification nor a rejection."""
    try:
        return proof(), False
    except Exception as error:  # noqa: BLE001 - recorded as a crash, which fails the ledger
        return ProofResult(f"crashed: {type(error).__name__}", f"the proof raised {type(error).__name__}: {error}",
                           sp.Symbol("crashed"), scope="general", undecided=True), True


def _run(claims: tuple[Claim, ...]) -> list[LedgerRow]:
    rows = []
    for claim in claims:
        start = time.perf_counter()
        result, _ = _attempt(claim.proof)
        seconds = time.perf_counter() - start
        false = tuple((d, not crashed and not outcome.verified)
                      for d, (outcome, crashed) in ((d, _attempt(f)) for d, f in claim.false_variants))
        true = tuple((d, _attempt(f)[0].verified) for d, f in claim.true_variants)
        rows.append(LedgerRow(claim, result, false, true, seconds, time.perf_counter() - start - seconds))
    return rows


def _source_key() -> str:
    """A hash of every Python file of the library (the proofs and all they import from it), SymPy's version and
    Python's: what the ledger's outcome depends on."""
    import sympy

    package = Path(__file__).resolve().parents[1]
    digest = hashlib.sha256(f"{sys.version}\n{sympy.__version__}\n".encode())
    for path in sorted(package.rglob("*.py")):
        digest.update(path.relative_to(package).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:32]


def _shared_run(folder: Path, claims: tuple[Claim, ...]) -> list[LedgerRow]:
    """The whole ledger, run once into ``folder`` (under a lock, written atomically) and read back from there."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"ledger-{_source_key()}.pickle"
    with open(folder / "ledger.lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes, also when the run raises
        if not path.exists():
            rows = _run(claims)
            kept = [(r.claim.label, r.result, r.false_rejected, r.true_verified, r.seconds, r.variant_seconds)
                    for r in rows]
            partial = path.with_suffix(f".{os.getpid()}.tmp")
            partial.write_bytes(pickle.dumps(kept))
            os.replace(partial, path)
            return rows
        kept = pickle.loads(path.read_bytes())
    by_label = {claim.label: claim for claim in claims}
    if [label for label, *_ in kept] != list(by_label):
        raise RuntimeError(f"{path} holds a ledger of other claims than attnconv.claims.CLAIMS")
    return [LedgerRow(by_label[label], *outcome) for label, *outcome in kept]


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
