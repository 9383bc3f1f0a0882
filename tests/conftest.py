"""Shared fixtures for the library tests."""

from __future__ import annotations

import pytest
import torch


@pytest.fixture
def float64_default():
    """Build modules in float64 from the start, so their parameters hold exactly the values given."""
    previous = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    yield
    torch.set_default_dtype(previous)
