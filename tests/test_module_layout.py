"""Every module of the package imports, and the old re-export paths are gone (each has one home now)."""

from __future__ import annotations

import importlib
import pkgutil

import pytest

import attnconv

REMOVED = ["attnconv.plotting", "attnconv.plotting_sequence", "attnconv.viz", "attnconv.viz_text",
           "attnconv.smallcnn", "attnconv.exercises", "attnconv.grade", "attnconv.student", "attnconv.train.config",
           "attnconv.train.bert"]


def test_every_module_imports():
    names = [m.name for m in pkgutil.walk_packages(attnconv.__path__, "attnconv.") if not m.name.endswith("__main__")]
    assert "attnconv.course.student" in names and "attnconv.models.smallcnn" in names
    for name in names:
        importlib.import_module(name)


@pytest.mark.parametrize("name", REMOVED)
def test_old_paths_are_gone(name):
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module(name)
