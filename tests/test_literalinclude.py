"""The chapters show library code with ``literalinclude``: every path resolves, in the book and in the student
book's copy, and every ``:pyobject:`` names a function or method that exists in that file."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from attnconv.course.student import prepare_student_book

ROOT = Path(__file__).resolve().parents[1]
INCLUDE = re.compile(r"^```\{literalinclude\} (\S+)\n:pyobject: (\S+)\n", re.MULTILINE)
CHAPTERS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.md"))


def _includes(md: Path) -> list[tuple[str, str]]:
    return INCLUDE.findall(md.read_text())


def _has_object(source: Path, dotted: str) -> bool:
    body = ast.parse(source.read_text()).body
    for part in dotted.split("."):
        match = [n for n in body if isinstance(n, (ast.FunctionDef, ast.ClassDef)) and n.name == part]
        if not match:
            return False
        body = match[0].body
    return True


def test_the_central_constructions_are_shown():
    shown = {obj for md in CHAPTERS for _, obj in _includes(md)}
    assert {"conv_as_shifts", "conv_to_mhsa", "QuadraticEncoding.axis_logits", "lightconv_to_attention"} <= shown


@pytest.mark.parametrize("md", CHAPTERS, ids=lambda p: p.stem)
def test_every_include_resolves_to_an_existing_object(md):
    for path, obj in _includes(md):
        source = (md.parent / path).resolve()
        assert source.is_file(), f"{md.name}: {path} does not exist"
        assert _has_object(source, obj), f"{md.name}: {obj} is not defined in {path}"
    assert not _has_object(ROOT / "src/attnconv/conv.py", "conv_as_shift"), "a misspelt name is caught"


def test_the_student_book_carries_the_included_sources(tmp_path):
    student = tmp_path / "student"
    student.mkdir()
    out = prepare_student_book(ROOT, student, tmp_path / "book")
    for md in CHAPTERS:
        for path, obj in _includes(md):
            assert _has_object((out / "notebooks" / path).resolve(), obj)
    assert not list((out / "src").rglob("__pycache__"))
