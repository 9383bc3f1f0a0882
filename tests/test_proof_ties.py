"""The ledger's proofs are tied to the library: a mutant of the library's band, of its causal mask or of hard
attention is caught, by a ledger claim (band, buckets, causal mask) or by a check of hard mode at the last key.

Each mutant is a small edit of the library's own source (a flipped sign, a swapped frame, an off-by-one window, a
merged bucket, a mask one column off), compiled and put in place of the original everywhere the package refers to
it. The claims it must break are run on it; on the unedited library they hold.
"""

from __future__ import annotations

import inspect
import sys
import textwrap

import pytest
import torch

import attnconv.positional.band as band
import attnconv.positional.quadratic as quadratic
import attnconv.positional.sequence as sequence
from attnconv.claims import CLAIMS
from attnconv.positional import QuadraticEncoding
from attnconv.positional.sequence import KeyRelativeLogits, QueryRelativeLogits, RelativePositionBias

TIED = ("sequence-conventions", "t5-buckets")  # the ledger's claims that run the library's band


def _edit(source: str, edits: list[tuple[str, str]]) -> str:
    for old, new in edits:
        assert source.count(old) == 1, f"the mutant's text is not in the source once: {old!r}"
        source = source.replace(old, new)
    return source


def _mutate_module(monkeypatch, module, edits) -> None:
    """Compile ``module``'s source with ``edits`` and put each of its functions in place of the original, in every
    module of the package that holds it (``from .band import ...`` copies the name)."""
    namespace = {"__name__": module.__name__, "__package__": module.__package__, "__file__": module.__file__}
    exec(compile(_edit(inspect.getsource(module), edits), f"{module.__file__} (mutant)", "exec"), namespace)
    originals = {name: obj for name, obj in vars(module).items()
                 if inspect.isfunction(obj) and obj.__module__ == module.__name__}
    for name, mod in list(sys.modules.items()):
        if name.startswith("attnconv") and mod is not None:
            for attr, value in list(vars(mod).items()):
                for original_name, original in originals.items():
                    if value is original:
                        monkeypatch.setattr(mod, attr, namespace[original_name])


def _mutate_method(monkeypatch, cls, name, edits) -> None:
    function = cls.__dict__[name]
    namespace = dict(vars(sys.modules[function.__module__]))
    exec(compile(_edit(textwrap.dedent(inspect.getsource(function)), edits), "mutant", "exec"), namespace)
    monkeypatch.setattr(cls, name, namespace[name])


def _claims_that_hold(labels=TIED) -> dict[str, bool]:
    """Each claim's proof verifies and each of its true variants verifies (a crash counts as not holding)."""
    held = {}
    for claim in CLAIMS:
        if claim.label in labels:
            try:
                held[claim.label] = claim.proof().verified and all(f().verified for _, f in claim.true_variants)
            except Exception:  # noqa: BLE001 - a mutant may make a proof raise: the ledger records that as a failure
                held[claim.label] = False
    assert set(held) == set(labels)
    return held


def test_the_tied_claims_hold_on_the_library():
    assert _claims_that_hold() == {label: True for label in TIED}


# (class, description, edits of positional/band.py, the claim that must fail)
BAND_MUTANTS = [
    ("key frame", "the key frame read from the query's row",
     [("out = band.transpose(-1, -2).gather(-2, index.expand(*lead, stop - start, n))",
       "out = band.gather(-1, index.expand(*lead, stop - start, n))")], "sequence-conventions"),
    ("key frame", "key_to_query_frame reads the key i - δ",
     [("read = torch.arange(n, device=band.device)[:, None] + torch.arange(-k, k + 1",
       "read = torch.arange(n, device=band.device)[:, None] - torch.arange(-k, k + 1")], "sequence-conventions"),
    ("key frame", "key_to_query_frame reads tap k - t of the key's row",
     [("flat = (read.clamp(0, n - 1) * width + torch.arange(width, device=band.device)).flatten()",
       "flat = (read.clamp(0, n - 1) * width + torch.arange(width, device=band.device).flip(0)).flatten()")],
     "sequence-conventions"),
    ("sign", "relative_index uses i - j",
     [("offsets = torch.arange(n, device=device)[None, :] - torch.arange(start, stop, device=device)[:, None]",
       "offsets = torch.arange(start, stop, device=device)[:, None] - torch.arange(n, device=device)[None, :]")],
     "sequence-conventions"),
    ("sign", "T5's positive half given to δ < 0", [("(offsets > 0).long() * half", "(offsets < 0).long() * half")],
     "t5-buckets"),
    ("sign", "logits_to_band reads the key i - δ",
     [("read = torch.arange(n, device=logits.device)[:, None] + torch.arange(-r, r + 1",
       "read = torch.arange(n, device=logits.device)[:, None] - torch.arange(-r, r + 1")], "sequence-conventions"),
    ("window", "the window one key too wide", [("out.masked_fill_(offsets.abs() > k,",
                                               "out.masked_fill_(offsets.abs() > k + 1,")], "sequence-conventions"),
    ("window", "the window one key too narrow", [("out.masked_fill_(offsets.abs() > k,",
                                                  "out.masked_fill_(offsets.abs() >= k,")], "sequence-conventions"),
    ("window", "the window skipped when k = N - 2", [("if window and k < n - 1:", "if window and k < n - 2:")],
     "sequence-conventions"),
    ("window", "the clip one tap short on the right",
     [("return offsets.clamp(-max_distance, max_distance) + max_distance",
       "return offsets.clamp(-max_distance, max(max_distance - 1, 0)) + max_distance")], "sequence-conventions"),
    ("window", "a chunk of rows read one row early",
     [("source = band[..., start:stop, :] if partial else band",
       "source = band[..., max(start - 1, 0):max(stop - 1, 1), :] if partial else band")], "sequence-conventions"),
    ("bucket", "the last two buckets merged", [("clamp(max=half - 1)", "clamp(max=half - 2)")], "t5-buckets"),
    ("bucket", "one logarithmic bucket fewer", [("(scaled * (half - exact)).floor()",
                                                 "(scaled * (half - exact - 1)).floor()")], "t5-buckets"),
    ("bucket", "the last exact bucket merged with the one before",
     [("torch.where(distance < exact, distance, far)",
       "torch.where(distance < exact, distance.clamp(max=exact - 2), far)")],
     "t5-buckets"),
    ("bucket", "a bucket split off for 60 < |δ| < 1000, between the offsets a short check would read",
     [("torch.where(distance < exact, distance, far)",
       "torch.where(distance < exact, distance, torch.where((distance > 60) & (distance < 1000), far - 1, far))")],
     "t5-buckets"),
    ("bucket", "δ = 0 in the positive half", [("(offsets > 0).long() * half", "(offsets >= 0).long() * half")],
     "t5-buckets"),
]


@pytest.mark.parametrize("kind, description, edits, claim", BAND_MUTANTS, ids=[m[1] for m in BAND_MUTANTS])
def test_a_mutant_of_the_band_fails_a_ledger_claim(monkeypatch, kind, description, edits, claim):
    _mutate_module(monkeypatch, band, edits)
    assert _claims_that_hold()[claim] is False, (kind, description)


CAUSAL_MUTANTS = [
    ("mask_future masks δ = 0 too", sequence.RelativeLogits1d, "mask_future",
     [("device=band.device) > k", "device=band.device) >= k")]),
    ("mask_future masks the past", sequence.RelativeLogits1d, "mask_future",
     [("device=band.device) > k", "device=band.device) < k")]),
    ("mask_future masks nothing", sequence.RelativeLogits1d, "mask_future", [("if not self.causal:", "if True:")]),
    ("the causal bias masks δ = 0 too", sequence.RelativePositionBias, "kernel_logits",
     [("logits.masked_fill(offsets > 0,", "logits.masked_fill(offsets >= 0,")]),
    ("k = 0 without a window reads the future", sequence.RelativeLogits1d, "expand",
     [("if self.causal and not self.window and band.shape[-1] == 1:", "if False:")]),
]


@pytest.mark.parametrize("description, cls, name, edits", CAUSAL_MUTANTS, ids=[m[0] for m in CAUSAL_MUTANTS])
def test_a_mutant_of_the_causal_mask_fails_the_conventions_claim(monkeypatch, description, cls, name, edits):
    _mutate_method(monkeypatch, cls, name, edits)
    assert _claims_that_hold(("sequence-conventions",)) == {"sequence-conventions": False}, description


@pytest.mark.parametrize("make", [lambda: RelativePositionBias(1, 0, causal=True),
                                  lambda: QueryRelativeLogits(1, 2, 0, causal=True),
                                  lambda: KeyRelativeLogits(1, 2, 0, causal=True)], ids=["bias", "query", "key"])
def test_a_causal_term_of_width_one_masks_the_future(make):
    """With k = 0 and no window the band has the one column δ = 0, and clipping gives every key that column: the
    causal mask must still hide the future keys, also for a chunk of rows."""
    torch.manual_seed(0)
    term = make().double()
    n = 5
    vectors = torch.randn(1, 1, n, 2, dtype=torch.float64)
    logits = term((n,), vectors, vectors).reshape(n, n)
    future = torch.ones(n, n, dtype=torch.bool).triu(1)
    assert torch.isinf(logits[future]).all() and torch.isfinite(logits[~future]).all()
    chunk = term.expand(term.band(n, vectors, vectors), n, rows=slice(1, 3)).reshape(2, n)
    assert torch.equal(chunk, logits[1:3])


def _hard_mode_reads_the_nearest_key() -> bool:
    """Hard mode puts all of a head's weight on clip(q + Δ, 0, L - 1), on every axis: for every length up to 6,
    every query and every centre that puts the target on the grid, one past an end or two, on both axes of a 2-D
    grid. The last key is a target like any other."""
    for length in range(1, 7):
        centers = torch.arange(-length - 2, length + 3, dtype=torch.float64)
        one_d = QuadraticEncoding(len(centers), centers=centers[:, None], alpha=None).double()
        probs = torch.softmax(one_d((length,)), -1)  # (N_h, L, L)
        for h, centre in enumerate(centers.long().tolist()):
            for q in range(length):
                nearest = min(max(q + centre, 0), length - 1)
                if probs[h, q, nearest] != 1.0:
                    return False
        pairs = torch.cartesian_prod(centers, centers)  # (N_h, 2)
        two_d = QuadraticEncoding(len(pairs), centers=pairs, alpha=None).double()
        grid = torch.softmax(two_d((length, length)), -1).reshape(len(pairs), length, length, length, length)
        for h, (c0, c1) in enumerate(pairs.long().tolist()):
            for q0 in range(length):
                for q1 in range(length):
                    t0, t1 = min(max(q0 + c0, 0), length - 1), min(max(q1 + c1, 0), length - 1)
                    if grid[h, q0, q1, t0, t1] != 1.0:
                        return False
    return True


HARD_MUTANTS = [
    ("the target clamped one short of the last key", [("(pos[:, None] + center).clamp(0, length - 1)",
                                                       "(pos[:, None] + center).clamp(0, max(length - 2, 0))")]),
    ("the target clamped one past the first key", [("(pos[:, None] + center).clamp(0, length - 1)",
                                                    "(pos[:, None] + center).clamp(min(1, length - 1), length - 1)")]),
    ("the target at q - Δ", [("(pos[:, None] + center).clamp(0, length - 1)",
                              "(pos[:, None] - center).clamp(0, length - 1)")]),
]


def test_hard_mode_reads_the_nearest_key_up_to_the_last():
    assert _hard_mode_reads_the_nearest_key()


@pytest.mark.parametrize("description, edits", HARD_MUTANTS, ids=[m[0] for m in HARD_MUTANTS])
def test_a_mutant_of_hard_mode_is_caught(monkeypatch, description, edits):
    _mutate_method(monkeypatch, quadratic.QuadraticEncoding, "axis_logits", edits)
    assert not _hard_mode_reads_the_nearest_key(), description
