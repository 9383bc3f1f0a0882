"""Exercise checks recompute the answer from the student's objects: typed-in constants do not pass."""

from __future__ import annotations

from dataclasses import replace

import pytest
import torch

from attnconv.construct import conv_to_mhsa, convert_convolutions
from attnconv.course.exercises.core import _local
from attnconv.models.bert import BERT_SIZES, BertForMaskedLM
from attnconv.models.smallcnn import SmallCNN, predict_logits, synthetic_images


def _run(label, values):
    """Whether every part of the check passes, after the same round trip through data as in the grader."""
    return Verdict(all(r.passed for r in _local(label, values)))


class Verdict:
    def __init__(self, passed: bool):
        self.passed = passed


@pytest.fixture(scope="module")
def cnn_setup():
    torch.manual_seed(0)
    cnn = SmallCNN(width=24).eval()
    test_x, _ = synthetic_images(64, seed=1)
    return cnn, test_x, predict_logits(cnn, test_x)


def test_head_dim_check_needs_the_raised_error(cnn_setup):
    cnn, _, _ = cnn_setup
    try:
        conv_to_mhsa(cnn.conv1, head_dim=11)
        error = None
    except ValueError as err:
        error = err
    assert _run("ex-04-head-dim", dict(too_small=True, error=error, cnn=cnn)).passed
    assert not _run("ex-04-head-dim", dict(too_small=True, error=None, cnn=cnn)).passed  # typed-in True
    assert not _run("ex-04-head-dim", dict(too_small=False, error=error, cnn=cnn)).passed


def test_finite_alpha_check_counts_from_the_logits(cnn_setup):
    cnn, test_x, cnn_logits = cnn_setup
    some = torch.arange(64)
    soft = predict_logits(convert_convolutions(cnn, alpha=8.0), test_x[some])
    changed = int((soft.argmax(1) != cnn_logits[some].argmax(1)).sum())
    values = dict(soft_logits=soft, cnn=cnn, cnn_logits=cnn_logits, test_x=test_x, some=some)
    assert _run("ex-04-finite-alpha-net", dict(changed=changed, **values)).passed
    assert not _run("ex-04-finite-alpha-net", dict(changed=changed + 1, **values)).passed
    hard = dict(values, soft_logits=cnn_logits[some])  # α never applied: typed-in 0 with the hard logits
    assert not _run("ex-04-finite-alpha-net", dict(changed=0, **hard)).passed


def test_padding_check_recomputes_the_gap():
    torch.manual_seed(0)
    tiny = BertForMaskedLM(replace(BERT_SIZES["tiny"], variant="composite-noabs")).eval()
    ids = torch.randint(5, 200, (2, 12))
    pad = torch.zeros(2, 12, dtype=torch.bool)
    pad[1, 7:] = True
    with torch.no_grad():
        gap = (tiny(ids, padding_mask=pad)[1, :7] - tiny(ids[1:, :7])[0]).abs().max().item()
    assert gap < 1e-4  # agreement to rounding; whether the rounding is exactly 0 depends on the CPU's kernels
    assert _run("ex-07-padding", dict(gap=gap, tiny=tiny, ids=ids, pad=pad)).passed
    assert not _run("ex-07-padding", dict(gap=gap + 1e-5, tiny=tiny, ids=ids, pad=pad)).passed  # not the model's
    assert not _run("ex-07-padding", dict(gap=0.5, tiny=tiny, ids=ids, pad=pad)).passed  # a typed-in wrong gap
    assert not _run("ex-07-padding", dict(gap=gap, tiny=tiny, ids=ids, pad=torch.zeros_like(pad))).passed

    def leaky(input_ids, padding_mask=None):  # a model that ignores the mask: padding changes real tokens
        return tiny(input_ids)

    with torch.no_grad():
        leak = (leaky(ids, padding_mask=pad)[1, :7] - leaky(ids[1:, :7])[0]).abs().max().item()
    assert leak > 1e-3  # a real difference, far above rounding on any machine
    assert not _run("ex-07-padding", dict(gap=0.0, tiny=leaky, ids=ids, pad=pad)).passed  # typed-in 0 is caught
    assert not _run("ex-07-padding", dict(gap=leak, tiny=leaky, ids=ids, pad=pad)).passed  # and a leak fails
