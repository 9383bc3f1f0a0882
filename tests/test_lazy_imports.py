"""``import attnconv`` and the course's registry import PyTorch and a chapter's checks only when they are used.

The grader starts several processes per submission (its own, the kernel, the checker, the sandbox, and a kernel and
a checker to check that the sandbox works); a course chapter whose exercises need no tensor must not pay for
PyTorch in each of them."""

from __future__ import annotations

import subprocess
import sys

import pytest

from attnconv.course.exercises import core


def _imported(code: str) -> set[str]:
    out = subprocess.run([sys.executable, "-c", code + "\nimport sys\nprint(' '.join(sorted(sys.modules)))"],
                         capture_output=True, text=True, check=True, timeout=300).stdout
    return set(out.split())


def test_the_package_and_a_plain_exercise_import_no_pytorch():
    seen = _imported("import attnconv\nfrom attnconv.course import verify, EXERCISES, exercises_for\n"
                     "from attnconv.course.exercises import register, CheckResult\n"
                     "register('ex-lazy-x', '99_lazy', 'code', 1, ('x',))(lambda x: CheckResult(x == 1, 'ok'))\n"
                     "verify('ex-lazy-x', x=1)\nassert [e.label for e in exercises_for('99_lazy')] == ['ex-lazy-x']")
    assert "torch" not in seen and "sympy" not in seen, "a plain exercise pulled in PyTorch or SymPy"
    assert not any(m.startswith("attnconv.course.exercises.part") for m in seen)


def test_names_of_the_root_come_from_their_modules():
    seen = _imported("import attnconv\nfrom attnconv import MultiHeadSelfAttention, shift\n"
                     "assert MultiHeadSelfAttention.__module__ == 'attnconv.attention'\n"
                     "assert attnconv.conv.shift is shift and attnconv.space_to_depth.__module__ == 'attnconv.tokens'")
    assert "torch" in seen
    import attnconv

    assert all(hasattr(attnconv, name) for name in attnconv.__all__)
    with pytest.raises(AttributeError, match="no attribute 'nonexistent'"):
        attnconv.nonexistent  # noqa: B018


def test_a_label_imports_the_module_of_its_chapter_only():
    seen = _imported("from attnconv.course.exercises import EXERCISES\nassert 'ex-05-shaw-rank' in EXERCISES\n"
                     "assert EXERCISES['ex-05-clipped-width'].chapter.startswith('05_')\n"
                     "assert EXERCISES.get('ex-99-nothing') is None and 'no-such-label' not in EXERCISES")
    parts = {m for m in seen if m.startswith("attnconv.course.exercises.part")}
    assert parts == {"attnconv.course.exercises.part3"}, parts


def test_each_module_registers_the_chapters_parts_names():
    registry = core.EXERCISES
    registry.load_all()
    for module, labels in registry._loaded.items():
        assert labels, f"{module} registered nothing"
        for label in labels:
            number = registry[label].chapter[:2]
            assert label.startswith(f"ex-{number}-") and core.PARTS[number] == module, (module, label)
    assert set(core.PARTS.values()) == set(registry._loaded)


def test_the_whole_registry_comes_in_the_chapters_order_whichever_module_came_first():
    """Chapter 05's module imported first, a course's own exercise next, then everything: 01 ... 08, then the course's.
    Without the reordering in ``load_all`` the table of exercises would start at chapter 05."""
    original, registry = core.EXERCISES, core.Registry()
    names = [f"attnconv.course.exercises.{m}" for m in dict.fromkeys(core.PARTS.values())]
    modules = {n: sys.modules.pop(n, None) for n in names}  # imported again below, registering into `registry`
    try:
        core.EXERCISES = registry  # where register() writes while the modules are imported again
        registry.load_chapter("05")
        dict.__setitem__(registry, "ex-toy-late", original["ex-01-dilated-shifts"])  # a course's own exercise
        order = [label[3:5] if label != "ex-toy-late" else "zz" for label in registry]
    finally:
        core.EXERCISES = original
        sys.modules.update({n: m for n, m in modules.items() if m is not None})
    assert order == sorted(order) and order[-1] == "zz" and order[0] == "01", order
