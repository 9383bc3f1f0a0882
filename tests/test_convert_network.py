"""convert_convolutions turns every convolution of a network into attention without changing its outputs."""

from __future__ import annotations

import pytest
import torch

from attnconv.construct import ConvAsAttention, convert_convolutions
from attnconv.models.smallcnn import SmallCNN, fit, predict_logits, synthetic_images


def test_small_cnn_converted_gives_identical_predictions():
    torch.manual_seed(0)
    train_x, train_y = synthetic_images(600, seed=0)
    test_x, _ = synthetic_images(200, seed=1)
    cnn = SmallCNN(width=8)
    losses = fit(cnn, train_x, train_y, epochs=2, batch_size=64, seed=0)
    assert losses[1] < losses[0]  # it learns something
    converted = convert_convolutions(cnn)
    assert isinstance(converted.conv1, ConvAsAttention) and isinstance(converted.conv2, ConvAsAttention)
    assert isinstance(cnn.conv1, torch.nn.Conv2d), "the original must be left untouched"
    a, b = predict_logits(cnn, test_x), predict_logits(converted, test_x)
    assert torch.equal(a.argmax(1), b.argmax(1))
    torch.testing.assert_close(b, a, rtol=0, atol=1e-5)


def test_nested_and_1d_convolutions_are_converted():
    model = torch.nn.Sequential(torch.nn.Conv1d(3, 4, 3, padding=1), torch.nn.Sequential(torch.nn.ReLU(),
                                torch.nn.Conv1d(4, 2, 5, dilation=2, padding=4))).double()
    converted = convert_convolutions(model, head_dim=None)
    assert sum(isinstance(m, ConvAsAttention) for m in converted.modules()) == 2
    x = torch.randn(2, 3, 17, dtype=torch.float64)
    torch.testing.assert_close(converted(x), model(x), rtol=0, atol=1e-12)


def test_synthetic_images_are_deterministic_and_balanced_enough():
    x1, y1 = synthetic_images(500, seed=3)
    x2, y2 = synthetic_images(500, seed=3)
    assert torch.equal(x1, x2) and torch.equal(y1, y2)
    assert x1.shape == (500, 32, 32, 3) and x1.dtype == torch.uint8
    assert len(torch.unique(y1)) == 10


def test_bad_head_dim():
    with pytest.raises(ValueError, match="head_dim must be 'min', an int or None"):
        convert_convolutions(SmallCNN(), head_dim="max")
