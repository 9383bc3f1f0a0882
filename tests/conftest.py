"""Shared fixtures of every test folder: torch's process-wide state, and the browsers of the built-book and
explorable checks (one of each per session)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

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


@pytest.fixture(scope="session")
def playwright_session():
    """Playwright, started once per session for both browsers (a thread holds one sync Playwright at a time)."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        yield p


@pytest.fixture(scope="session")
def browser(playwright_session):
    """The browser of the built-book and explorable checks: the headless shell where there is one
    (``tests/book/browser.py``). One per session, whichever of those folders the run collects."""
    from tests.book.conftest import CHROMIUM_FLAGS, chromium_path

    b = playwright_session.chromium.launch(executable_path=chromium_path(), args=CHROMIUM_FLAGS, headless=True)
    yield b
    b.close()


@pytest.fixture(scope="session")
def full_browser(playwright_session):
    """A full Chromium, for the checks of what only a reader's whole browser does: it asks for ``/favicon.ico``."""
    from tests.book.browser import is_headless_shell
    from tests.book.conftest import CHROMIUM_FLAGS, chromium_path

    path = chromium_path(shell=False)
    if is_headless_shell(path):
        pytest.fail(f"CHROMIUM={path} is a headless shell, which never asks for /favicon.ico: this check needs a "
                    "full browser (unset CHROMIUM, or name chromium)")
    b = playwright_session.chromium.launch(executable_path=path, args=CHROMIUM_FLAGS, headless=True)
    yield b
    b.close()


@pytest.fixture(autouse=True)
def _process_wide_torch_state():
    """Each test starts from torch's defaults, whatever the one before it changed: the command line's ``main``
    flushes subnormal floats to zero for the rest of the process, which would change every later test that
    computes a tiny probability (the tests run in any order, pytest-randomly included). Figures left open are
    closed."""
    yield
    torch.set_flush_denormal(False)
    if torch.get_default_dtype() != torch.float32:
        torch.set_default_dtype(torch.float32)
    pyplot = sys.modules.get("matplotlib.pyplot")
    if pyplot is not None:  # figures a test drew and kept open would pile up in its worker for the later tests
        pyplot.close("all")


# Under pytest-xdist the order in which tests are handed to the workers sets a stage's time when a few tests are
# long: the course's longest tests (tests/course, where each grading runs a kernel) start first, in their order in
# --durations on two cores, so that the workers finish together instead of one grading a chapter alone at the end.
# Everything else keeps its place (a stable sort). The course's one module-scoped fixture, the cheats' baseline, is
# not split: the cheats stay together, after these. The library tests keep their file order: run after other
# files' tests in the same worker, test_cli_robustness.py's Ctrl-C check failed once, so moving them waits until
# that order dependence is found.
LONGEST_FILES_FIRST: tuple[str, ...] = ()  # files (relative to tests/) to move whole, keeping module fixtures whole
LONGEST_TESTS_FIRST = (
    "test_a_folder_with_attackers_grades_everyone_as_if_they_were_not_there",
    "test_worked_edition_gets_full_marks[04_",
    "test_worked_edition_gets_full_marks[06_",
    "test_total_time_holds_while_a_cell_ignores_interrupts",
    "test_worked_edition_gets_full_marks[03_",
    "test_worked_edition_gets_full_marks[07_",
    "test_worked_edition_gets_full_marks[05_",
    "test_a_folder_grades_into_a_gradebook",
    "test_untouched_student_edition_gets_zero",
    "test_a_cell_that_raises_or_loops",
    "test_gradescope_autograder_runs",
    "test_memory_is_limited",
)
_TESTS = Path(__file__).resolve().parent


def _rank(item: pytest.Item) -> int:
    for i, name in enumerate(LONGEST_TESTS_FIRST):
        if item.name.startswith(name):
            return i
    where = item.path.resolve().relative_to(_TESTS).as_posix() if _TESTS in item.path.resolve().parents else ""
    for i, file in enumerate(LONGEST_FILES_FIRST):
        if where == file:
            return len(LONGEST_TESTS_FIRST) + i
    return len(LONGEST_TESTS_FIRST) + len(LONGEST_FILES_FIRST)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    items.sort(key=_rank)


_LEDGER = "ATTNCONV_LEDGER_CACHE"  # attnconv.claims.ledger.LEDGER_CACHE


def pytest_configure(config: pytest.Config) -> None:
    """One run of the claims ledger for the whole test run: ``make test`` shares it with the book's ledger page
    through this variable, and without it each xdist worker that reads the ledger ran it again (25 s each).
    Workers inherit the variable from the process that starts them."""
    if not os.environ.get(_LEDGER):
        import tempfile

        os.environ[_LEDGER] = config._attnconv_ledger = tempfile.mkdtemp(prefix="attnconv-ledger-")


def pytest_unconfigure(config: pytest.Config) -> None:
    folder = getattr(config, "_attnconv_ledger", None)
    if folder:
        import shutil

        shutil.rmtree(folder, ignore_errors=True)
        os.environ.pop(_LEDGER, None)
