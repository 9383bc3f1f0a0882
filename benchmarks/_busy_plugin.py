"""A pytest plugin for ``make_test_cpu.py``: each test's machine busy CPU seconds (every process, from /proc/stat)
and wall seconds, written as JSON to ``$MAKE_TEST_CPU_OUT`` when the session ends. Load it with
``-p _busy_plugin`` and this folder on ``PYTHONPATH``."""

from __future__ import annotations

import json
import os
import time

import pytest

SEEN: dict[str, list[float]] = {}


def busy() -> float:
    """Seconds the machine's CPUs have spent not idle since boot (all processes)."""
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:]]
    return (sum(v[:8]) - v[3] - v[4]) / os.sysconf("SC_CLK_TCK")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    cpu, wall = busy(), time.monotonic()
    yield
    SEEN[item.nodeid] = [busy() - cpu, time.monotonic() - wall]


def pytest_sessionfinish(session):
    out = os.environ.get("MAKE_TEST_CPU_OUT")
    if out:
        with open(out, "w") as f:
            json.dump(SEEN, f)
