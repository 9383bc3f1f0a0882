"""Shared fixtures for the library tests."""

from __future__ import annotations

import os

import pytest
import torch

# Under pytest-xdist each worker is a process with its own torch thread pool: share the cores between them
# instead of running (workers x cores) threads on the cores there are.
_WORKERS = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
if _WORKERS > 1:
    torch.set_num_threads(max(1, (os.cpu_count() or 1) // _WORKERS))


@pytest.fixture
def float64_default():
    """Build modules in float64 from the start, so their parameters hold exactly the values given."""
    previous = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    yield
    torch.set_default_dtype(previous)


@pytest.fixture(autouse=True)
def _process_wide_torch_state():
    """Each test starts from torch's defaults, whatever the one before it changed: the command line's ``main``
    flushes subnormal floats to zero for the rest of the process, which would change every later test that
    computes a tiny probability (the tests run in any order, pytest-randomly included)."""
    yield
    torch.set_flush_denormal(False)
    if torch.get_default_dtype() != torch.float32:
        torch.set_default_dtype(torch.float32)
