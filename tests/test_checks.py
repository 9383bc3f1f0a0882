"""The shared argument checks: the boundary, bools, non-ints, and the message that names argument and rule."""

from __future__ import annotations

import pytest

from attnconv._checks import int_at_least, positive_int


@pytest.mark.parametrize("minimum", [-3, 0, 1, 2, 100])
def test_int_at_least_accepts_the_boundary_and_rejects_one_below(minimum):
    assert int_at_least("n", minimum, minimum) == minimum
    assert int_at_least("n", minimum + 7, minimum) == minimum + 7
    with pytest.raises(ValueError, match="^n must be "):
        int_at_least("n", minimum - 1, minimum)


@pytest.mark.parametrize("value", [True, False, 2.0, "3", None, [1]])
def test_int_at_least_rejects_bools_and_non_ints(value):
    with pytest.raises(ValueError, match="count must be"):
        int_at_least("count", value, 0)


@pytest.mark.parametrize("minimum, rule", [(0, "a non-negative integer"), (1, "a positive integer"),
                                           (5, "an integer of at least 5")])
def test_int_at_least_message_states_the_rule(minimum, rule):
    with pytest.raises(ValueError, match=f"^width must be {rule}, got -9$"):
        int_at_least("width", -9, minimum)


def test_positive_int_is_int_at_least_one():
    assert positive_int("k", 1) == 1
    for bad in (0, True, 1.5):
        with pytest.raises(ValueError, match="k must be a positive integer"):
            positive_int("k", bad)
