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


@pytest.fixture(autouse=True)
def _process_wide_torch_state():
    """Each test starts from torch's defaults, whatever the one before it changed: the command line's ``main``
    flushes subnormal floats to zero for the rest of the process, which would change every later test that
    computes a tiny probability (the tests run in any order, pytest-randomly included)."""
    yield
    torch.set_flush_denormal(False)
    if torch.get_default_dtype() != torch.float32:
        torch.set_default_dtype(torch.float32)


# Under pytest-xdist the order in which tests are handed to the workers sets a stage's time when a few tests are
# long: the longest start first (their order in --durations on two cores), so that the workers finish together
# instead of one running a long test alone at the end. Every other test keeps its place (a stable sort).
LONGEST_FIRST = (
    # the library tests
    "test_gpu_10min_runs_on_the_cpu_at_tiny_size",
    "test_dry_run_writes_the_campaign_layout",
    "test_imitation_error_drops_at_tiny_size[quadratic_content]",
    "test_every_proof_false_variant_and_true_variant_runs_as_the_ledger_says",
    "test_two_processes_equal_one_with_the_same_global_batch",
    "test_chapter_06_in_colab_downloads_trains_resumes_and_draws_the_run",
    "test_imitation_error_drops_at_tiny_size[quadratic]",
    "test_interrupt_and_resume_equals_an_uninterrupted_run",
    "test_chapter_07_in_colab_downloads_the_corpora_and_pretrains",
    # the course's tests (tests/course): each grading runs a kernel
    "test_worked_edition_gets_full_marks[04_",
    "test_a_folder_with_attackers_grades_everyone_as_if_they_were_not_there",
    "test_worked_edition_gets_full_marks[06_",
    "test_total_time_holds_while_a_cell_ignores_interrupts",
    "test_worked_edition_gets_full_marks[03_",
    "test_worked_edition_gets_full_marks[05_",
    "test_untouched_student_edition_gets_zero",
    "test_worked_edition_gets_full_marks[07_",
    "test_a_folder_grades_into_a_gradebook",
    "test_a_cell_that_raises_or_loops",
    "test_memory_is_limited",
)


def _rank(item: pytest.Item) -> int:
    return next((i for i, name in enumerate(LONGEST_FIRST) if item.name.startswith(name)), len(LONGEST_FIRST))


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    items.sort(key=_rank)
