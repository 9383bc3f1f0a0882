"""The ResNet baseline under the inputs a PyTorch user hands it: 8-bit pixels are refused with the scale the model
reads, and under autocast a float64 batch (which autocast does not cast) is refused naming the dtype, instead of
conv2d's "expected scalar type"."""

import pytest
import torch

from attnconv.data import normalize
from attnconv.models.resnet import ResNet, ResNetConfig


def _model() -> ResNet:
    torch.manual_seed(0)
    return ResNet(ResNetConfig(width=4, blocks=(1, 1))).eval()


def test_uint8_pixels_are_refused_with_the_scale_the_model_reads():
    model = _model()
    pixels = torch.randint(0, 256, (2, 8, 8, 3), dtype=torch.uint8)
    with pytest.raises(ValueError, match=r"images .*torch\.float32, got torch\.uint8 pixels.*x / 255 - mean\) / std"
                                         r".*attnconv\.data\.normalize") as info:
        model(pixels)
    assert isinstance(info.value, TypeError)
    with torch.no_grad():
        assert model(normalize(pixels)).shape == (2, 10)  # the conversion the message names is the one that works


def test_float64_images_under_autocast_name_the_dtype():
    model = _model()
    images = torch.randn(2, 8, 8, 3, dtype=torch.float64)
    with torch.no_grad(), torch.autocast("cpu", dtype=torch.bfloat16):
        with pytest.raises(ValueError, match=r"images has dtype torch\.float64, which autocast does not cast.*"
                                             r"images\.to\(torch\.float32\)"):
            model(images)
        for dtype in (torch.float16, torch.bfloat16, torch.float32):  # the dtypes autocast casts are taken
            assert model(images.to(dtype)).dtype == torch.bfloat16
        assert model(images.to(torch.float32)).dtype == torch.bfloat16
    with torch.no_grad():
        assert model.double()(images).dtype == torch.float64  # float64 parameters take float64 images
