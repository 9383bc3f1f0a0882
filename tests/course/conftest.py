"""The toy chapter's checks, importable by this process and by every process the grader starts."""

from __future__ import annotations

import os
import sys

import pytest

from attnconv.course.exercises import EXERCISES
from toy_course import LABELS, TOY_CHECKS


@pytest.fixture
def toy(tmp_path, monkeypatch):
    checks = tmp_path / "checks"
    checks.mkdir()
    (checks / "toy_checks.py").write_text(TOY_CHECKS)
    monkeypatch.syspath_prepend(str(checks))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(checks), os.environ.get("PYTHONPATH", "")]))
    import toy_checks  # noqa: F401  (registers the toy exercises in this process)

    yield tmp_path
    sys.modules.pop("toy_checks", None)
    for label in LABELS:
        EXERCISES.pop(label, None)
    try:
        from attnconv.course.checker import Library
    except ImportError:  # a grader without a pristine library (the attack table's baseline)
        return
    Library._cache.pop(("toy_checks",), None)

