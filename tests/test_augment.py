"""CropFlip: the batched crop + flip + normalise equals the per-image definition, and is seeded."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from attnconv.data import CIFAR10_MEAN, CIFAR10_STD, CropFlip, CropFlipParams, normalize


@pytest.fixture
def images():
    return torch.randint(0, 256, (16, 32, 32, 3), dtype=torch.uint8, generator=torch.Generator().manual_seed(0))


def _reference(images, params, padding):
    """The definition, one image at a time: zero-pad, cut the window, mirror, normalise."""
    out = []
    for img, top, left, flip in zip(images, params.top, params.left, params.flip):
        padded = F.pad(img.permute(2, 0, 1), (padding,) * 4).permute(1, 2, 0)  # (H + 2p, W + 2p, C)
        crop = padded[top:top + 32, left:left + 32]
        out.append(crop.flip(1) if flip else crop)
    return normalize(torch.stack(out))


def test_normalize_uses_the_paper_statistics(images):
    got = normalize(images)
    manual = (images.float() / 255 - torch.tensor([0.4914, 0.4822, 0.4465])) / torch.tensor([0.2023, 0.1994, 0.2010])
    torch.testing.assert_close(got, manual, rtol=0, atol=1e-6)
    assert got.dtype == torch.float32 and got.shape == images.shape
    assert (CIFAR10_MEAN, CIFAR10_STD) == ((0.4914, 0.4822, 0.4465), (0.2023, 0.1994, 0.2010))


def test_batched_equals_per_image_definition(images):
    augment = CropFlip(padding=4)
    params = augment.sample(len(images), torch.Generator().manual_seed(1))
    assert params.flip.any() and not params.flip.all(), "this seed exercises both branches"
    torch.testing.assert_close(augment.apply(images, params), _reference(images, params, 4), rtol=0, atol=0)


def test_padding_is_black_before_normalisation(images):
    augment = CropFlip(padding=4)
    corner = CropFlipParams(torch.zeros(16, dtype=torch.long), torch.zeros(16, dtype=torch.long),
                            torch.zeros(16, dtype=torch.bool))
    out = augment.apply(images, corner)
    black = normalize(torch.zeros(1, 1, 1, 3, dtype=torch.uint8))[0, 0, 0]
    assert torch.equal(out[:, :4, :4], black.expand(16, 4, 4, 3))
    torch.testing.assert_close(out[:, 4:, 4:], normalize(images)[:, :28, :28], rtol=0, atol=0)


def test_identity_and_pure_flip(images):
    centred = CropFlipParams(torch.full((16,), 4), torch.full((16,), 4), torch.zeros(16, dtype=torch.bool))
    assert torch.equal(CropFlip().apply(images, centred), normalize(images))
    flipped = CropFlipParams(centred.top, centred.left, torch.ones(16, dtype=torch.bool))
    assert torch.equal(CropFlip().apply(images, flipped), normalize(images.flip(2)))
    no_flip = CropFlip(flip=False).sample(1000, torch.Generator().manual_seed(0))
    assert not no_flip.flip.any()


def test_seeded_and_spread(images):
    augment = CropFlip()
    a = augment(images, torch.Generator().manual_seed(7))
    b = augment(images, torch.Generator().manual_seed(7))
    c = augment(images, torch.Generator().manual_seed(8))
    assert torch.equal(a, b) and not torch.equal(a, c)
    params = augment.sample(20_000, torch.Generator().manual_seed(0))
    assert set(params.top.tolist()) == set(range(9)) and set(params.left.tolist()) == set(range(9))
    assert abs(params.flip.float().mean().item() - 0.5) < 0.02


def test_slices_of_a_global_batch_match(images):
    """Each process of a data-parallel run applies its slice of one batch's parameters: same pixels."""
    augment = CropFlip()
    params = augment.sample(16, torch.Generator().manual_seed(3))
    whole = augment.apply(images, params)
    halves = torch.cat([augment.apply(images[:8], params[:8]), augment.apply(images[8:], params[8:])])
    assert torch.equal(whole, halves)


def test_bad_inputs():
    with pytest.raises(ValueError, match="padding must be a non-negative integer"):
        CropFlip(padding=-1)
    with pytest.raises(ValueError, match=r"images must be \(B, H, W, C\)"):
        normalize(torch.zeros(3, 32, 32, dtype=torch.uint8))
    with pytest.raises(ValueError, match="mean and std need 3 values"):
        normalize(torch.zeros(1, 2, 2, 3, dtype=torch.uint8), mean=(0.5,), std=(0.5,))
    augment = CropFlip()
    with pytest.raises(ValueError, match="params are for 4 images but the batch has 2"):
        augment.apply(torch.zeros(2, 32, 32, 3, dtype=torch.uint8), augment.sample(4, torch.Generator()))
    with pytest.raises(ValueError, match="batch_size must be a positive integer"):
        augment.sample(0, torch.Generator())
