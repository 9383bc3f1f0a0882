"""``benchmarks/make_test_cpu.py`` runs the Makefile's stages and sorts each test into the kind of check it is."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
from make_test_cpu import STAGES, group, nodata_chapters  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
CHAPTERS = sorted(p.stem for p in (ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))


def test_the_stages_are_the_makefiles():
    makefile = (ROOT / "Makefile").read_text()
    assert "tests --ignore=tests/book --ignore=tests/course -q" in makefile
    assert " ".join(STAGES["test-lib"]) == "tests --ignore=tests/book --ignore=tests/course -q"
    assert nodata_chapters() == ["notebooks/07_bert_convolutional_attention.ipynb",
                                 "notebooks/07a_appendix_language_runs.ipynb"]
    assert all((ROOT / path).is_file() for path in nodata_chapters())
    for stage in ("test-lib", "test-course", "test-book"):
        assert (ROOT / STAGES[stage][0]).is_dir() and f"\n{stage}:" in makefile


def test_each_run_of_a_whole_chapter_counts_as_one():
    for chapter in CHAPTERS:
        graded = group("test-course", f"tests/course/test_editions.py::test_worked_edition_gets_full_marks[{chapter}]")
        assert graded.startswith("chapter runs: the course"), graded
    assert group("test-lib", "tests/colab/test_run_all.py::test_run_all_in_colab[notebooks-05]").startswith(
        "chapter runs: Colab")
    assert group("test-notebooks", "notebooks/07_bert_convolutional_attention.ipynb::Cell 3").startswith(
        "chapter runs: nbval")


def test_the_other_checks_have_their_own_kinds():
    assert group("test-course", "tests/course/test_attacks.py::test_x").startswith("grader")
    assert group("test-course", "tests/course/test_editions.py::test_cheat_scores_no_more[registry]").startswith(
        "grader")
    assert group("test-book", "tests/book/test_site.py::test_x").startswith("browser: the built book")
    assert group("test-lib", "tests/explorables/test_vision_model.py::test_x").startswith("browser: the explorables")
    assert group("test-lib", "tests/test_claims.py::test_x") == "claims ledger"
    assert group("test-lib", "tests/test_conv.py::test_x") == "library: every other test"
