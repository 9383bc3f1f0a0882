"""The claims ledger: every claim of Parts I-III with its three checks and its variants.

Each :class:`Claim` names the statement, the chapter's ``prf:`` label, the SymPy proof (a callable returning a
:class:`~attnconv.proofs.result.ProofResult`), named false variants that the proof must reject, named true variants
that it must still verify (so that it is neither too weak nor too strict), the chapter cell that checks it
numerically, and the pytest node ids that test it. The book page *Claims ledger* runs every entry while the book
builds and fails the build when a claim lacks a check, a proof does not verify, a false variant is not rejected or
a true variant is not verified.

- ``attnconv.claims.ledger``: :class:`Claim`, :class:`LedgerRow` and running the ledger;
- ``attnconv.claims.image``, ``attnconv.claims.sequence`` and ``attnconv.claims.after``: the claims of chapters
  01/03, 05 and 08;
- ``attnconv.claims.page``: the ledger as HTML, with the book's numbers of the boxes.
"""

from __future__ import annotations

from .after import AFTER_CLAIMS
from .image import IMAGE_CLAIMS
from .ledger import (CH01, CH03, CH05, CH08, Claim, LedgerRow, immediate_general_steps, missing_checks, run_ledger,
                     scope_counts)
from .page import book_numbers, ledger_html
from .sequence import SEQUENCE_CLAIMS

__all__ = ["Claim", "CLAIMS", "LedgerRow", "book_numbers", "ledger_html", "missing_checks", "run_ledger",
           "scope_counts", "immediate_general_steps"]

CLAIMS: tuple[Claim, ...] = IMAGE_CLAIMS + SEQUENCE_CLAIMS + AFTER_CLAIMS
