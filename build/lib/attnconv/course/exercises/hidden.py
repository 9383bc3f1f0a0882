"""Helpers for hidden inputs: seeded generators that leave the global random state alone, and SymPy symbols
compared by name."""

from __future__ import annotations

import contextlib

import sympy as sp
import torch

__all__ = ["generator", "plain", "seeded"]


def generator(seed: int) -> torch.Generator:
    """A CPU generator seeded with ``seed``."""
    return torch.Generator().manual_seed(int(seed) % (2**63))


@contextlib.contextmanager
def seeded(seed: int):
    """Run a block (a layer's initialisation) with torch's global generator seeded, then restore it."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(int(seed) % (2**63))
        yield


def plain(expr: sp.Basic) -> sp.Basic:
    """The same expression with assumption-free symbols, so that names alone decide equality."""
    return expr.subs({s: sp.Symbol(s.name) for s in expr.free_symbols if isinstance(s, sp.Symbol)})
