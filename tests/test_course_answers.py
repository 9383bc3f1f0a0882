"""Answers as data, and checks that accept what is mathematically right (no kernel is started here)."""

from __future__ import annotations

import json

import numpy as np
import pytest
import sympy as sp
import torch

from attnconv.conv import conv2d_as_shifts
from attnconv.course import wire
from attnconv.course.exercises import EXERCISES, run_check, score_results
from attnconv.course.exercises.core import _local


def roundtrip(value):
    return wire.loads(wire.dumps({"v": value}))["v"]


def test_wire_round_trips_data():
    t = torch.arange(6, dtype=torch.float32).reshape(2, 3)
    assert torch.equal(roundtrip(t), t) and roundtrip(t).dtype == torch.float32
    a = np.arange(4, dtype=np.int64)
    assert np.array_equal(roundtrip(a), a) and roundtrip(a).dtype == np.int64
    assert roundtrip(np.int64(94)) == 94 and roundtrip(torch.tensor(94)).shape == ()
    assert roundtrip({(1, 2), (3, 4)}) == {(1, 2), (3, 4)}
    assert roundtrip({"a": [1, (2.5, float("nan"))]})["a"][0] == 1
    D = sp.Symbol("D_h", positive=True)
    assert roundtrip(sp.sqrt(D) + sp.Rational(1, 3) * sp.exp(-D)) == sp.sqrt(D) + sp.Rational(1, 3) * sp.exp(-D)
    err = roundtrip(ValueError("rank 12 > head_dim=11"))
    assert (err.type, err.message) == ("ValueError", "rank 12 > head_dim=11")
    assert isinstance(roundtrip(torch.nn.Linear(2, 2)), wire.Opaque)


@pytest.mark.parametrize("srepr", [
    "__import__('os').system('echo pwned')",
    "Symbol('x').__class__",
    "Symbol('x')._sympy_()",
    "(lambda: 1)()",
    "eval('1')",
    "Add(Symbol('x'), [c for c in ()])",
])
def test_wire_refuses_sympy_text_that_is_not_a_sympy_expression(srepr):
    with pytest.raises((ValueError, SyntaxError)):
        wire.loads(json.dumps({"v": {"__sympy__": srepr}}))


def test_wire_refuses_unknown_tags_and_mismatched_arrays():
    with pytest.raises(ValueError):
        wire.loads(json.dumps({"v": {"__pickle__": "gASV"}}))
    with pytest.raises(ValueError):
        wire.loads(json.dumps({"v": {"__array__": "float64", "shape": [3], "data": [1.0]}}))


def check(label, **answers):
    exercise = EXERCISES[label]
    results = run_check(exercise, wire.loads(wire.dumps(answers)))
    return score_results(exercise, results)


ROW_MAJOR = [(2 * a - 2, 2 * b - 2) for a in range(3) for b in range(3)]


@pytest.mark.parametrize("dilated", [
    ROW_MAJOR,
    [(2 * a - 2, 2 * b - 2) for b in range(3) for a in range(3)],  # column-major: no order is asked
    set(ROW_MAJOR),
    np.array(ROW_MAJOR),
    torch.tensor(ROW_MAJOR),
])
def test_shifts_accept_any_order_and_container(dilated):
    assert check("ex-01-dilated-shifts", dilated=dilated)[1]


def test_shifts_reject_a_wrong_shift_and_say_what_was_received():
    undilated = [(a - 1, b - 1) for a in range(3) for b in range(3)]
    points, passed, message = check("ex-01-dilated-shifts", dilated=undilated)
    assert not passed and points == 0 and "received" in message and "expected" in message


@pytest.mark.parametrize("lost", [94, torch.tensor(94), np.int64(94), 94.0, np.array(94)])
def test_pixel_count_accepts_any_whole_number(lost):
    assert check("ex-01-shift-adjoint", lost=lost)[1]


@pytest.mark.parametrize("lost, phrase", [(93, "received 93"), (94.5, "whole number"), ("94", "whole number")])
def test_pixel_count_rejects_and_names_what_it_received(lost, phrase):
    points, passed, message = check("ex-01-shift-adjoint", lost=lost)
    assert not passed and phrase in message and "expected" in message
    if lost == 93:
        assert "94" not in message  # the message does not give the answer away


@pytest.fixture
def one_by_one():
    torch.manual_seed(3)
    x = torch.rand(1, 32, 32, 3, dtype=torch.float64)
    pointwise = torch.nn.Conv2d(3, 4, kernel_size=1, dtype=torch.float64)
    return x, pointwise, conv2d_as_shifts(x, pointwise.weight, pointwise.bias)


@pytest.mark.parametrize("convert", [
    lambda t: t,
    lambda t: t.float(),  # float32: error about 1e-7, right to float32 precision
    lambda t: t.numpy(),
    lambda t: t.float().numpy(),
])
def test_one_by_one_accepts_any_array_at_its_dtype_precision(one_by_one, convert):
    x, pointwise, truth = one_by_one
    with torch.no_grad():
        assert all(r.passed for r in _local("ex-01-one-by-one", dict(as_matmul=convert(truth.detach()), x=x,
                                                                     pointwise=pointwise)))


def test_one_by_one_names_a_missing_bias_and_a_real_error(one_by_one):
    x, pointwise, truth = one_by_one
    with torch.no_grad():
        [missing] = _local("ex-01-one-by-one", dict(as_matmul=truth - pointwise.bias, x=x, pointwise=pointwise))
        [off] = _local("ex-01-one-by-one", dict(as_matmul=(truth + 1e-3).float(), x=x, pointwise=pointwise))
    assert not missing.passed and "bias" in missing.message
    assert not off.passed and "bias" not in off.message and "float32" in off.message


def test_shaw_rank_accepts_numpy_float32_logits_and_a_0d_rank():
    from attnconv import CompositeAttention

    torch.manual_seed(0)
    shaw = CompositeAttention(16, 16, max_distance=3, content=False, fixed=False, query_dynamic=True,
                              bias=False).double()
    tokens = torch.randn(1, 9, 16, dtype=torch.float64)
    with torch.no_grad():
        q, _, _ = shaw.project(tokens)
        logits = shaw.query_term.band(9, q, None)[0, 0]
        results = _local("ex-05-shaw-rank", dict(shaw=shaw, tokens=tokens, kernel_logits=logits.float().numpy(),
                                                 rank=torch.linalg.matrix_rank(logits)))
        assert all(r.passed for r in results), results
        wrong = _local("ex-05-shaw-rank", dict(shaw=shaw, tokens=tokens, kernel_logits=logits.numpy(), rank=2))
    assert [r.passed for r in wrong] == [True, False]  # partial credit: the logits part still counts


def test_partial_credit_and_the_registry_caps_points():
    points, passed, message = check("ex-02-params", n_attention=16_640, n_conv=1)
    assert (points, passed) == (1, False) and "convolution: received 1 parameters" in message
    assert check("ex-02-params", n_attention=16_640.0, n_conv=np.int64(36_928))[:2] == (2, True)


def test_sympy_answers_must_be_expressions_never_strings():
    x, w = sp.symbols("x0:5"), sp.symbols("w0:3")
    assert check("ex-01-sympy-lemma", output_2=x[1] * w[0] + x[2] * w[1] + x[3] * w[2])[1]
    points, passed, message = check("ex-01-sympy-lemma", output_2="x1*w0 + x2*w1 + x3*w2")
    assert not passed and "expected a SymPy expression" in message and "str" in message
