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
