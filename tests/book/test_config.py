"""The strict build's list of references Sphinx may leave unresolved (``_config.yml``'s ``nitpick_ignore_regex``)
covers the names a standard-library class has on every Python the book supports: on 3.13, ``pathlib.Path`` is
documented as ``pathlib._local.Path``, and a list that knew only ``pathlib\\.Path`` failed the strict build with 46
warnings. Sphinx matches each pattern against the whole target (``re.fullmatch``), as here."""

from __future__ import annotations

import re

import pytest
import yaml

from .conftest import ROOT


def ignored(target: str, patterns: list[list[str]], kind: str = "py:class") -> bool:
    return any(re.fullmatch(k, kind) and re.fullmatch(p, target) for k, p in patterns)


def _patterns() -> list[list[str]]:
    config = yaml.safe_load((ROOT / "_config.yml").read_text())
    return config["sphinx"]["config"]["nitpick_ignore_regex"]


@pytest.mark.parametrize("target", ["pathlib.Path", "pathlib._local.Path", "pathlib._local.PurePosixPath",
                                    "pathlib.PurePath", "Path"])
def test_pathlib_names_of_every_python_are_ignored(target):
    assert ignored(target, _patterns()), f"{target} would fail the strict build (nitpick_ignore_regex)"


def test_the_check_fails_for_a_list_that_knows_only_pathlib_path():
    old = [["py:class", "(pathlib\\.Path|Path|matplotlib\\..*)"]]
    assert ignored("pathlib.Path", old) and not ignored("pathlib._local.Path", old)
    assert not ignored("attnconv.models.VisionConfig", _patterns()), "the book's own classes must resolve"
