"""The fuzz, continued: inputs of the wrong kind (Python lists, numpy arrays, integer dtypes, devices this machine
lacks, bands of the wrong rank), bad values that a config or a function used to accept, and data files with text in
the wrong encoding or a corrupt member.

Every case of ``CASES`` must raise a ``ValueError`` or ``TypeError`` naming the argument (``outcome(...) == "clear"``, the check of
:mod:`tests.test_fuzz`). Before these checks, each one either raised something obscure (``AttributeError``,
``IndexError``, ``RuntimeError``, ``NotImplementedError``), an error naming nothing, or returned a result.
"""

from __future__ import annotations

import importlib.util
import zipfile
from dataclasses import replace
from typing import Any, Callable

import numpy as np
import pytest
import torch
from torch import nn

from attnconv import bounds, tokens
from attnconv.analysis import head_shift, layer_shifts
from attnconv.attention import MultiHeadSelfAttention
from attnconv.construct.image import conv_to_mhsa
from attnconv.data import load_cifar10
from attnconv.data.corpus import read_documents
from attnconv.data.tasks import load_task
from attnconv.gpsa import GatedPositionalSelfAttention
from attnconv.lightconv import DynamicConv1d, LightweightConv1d
from attnconv.models.bert import BertConfig
from attnconv.models.smallcnn import SmallCNN
from attnconv.models.vision import SelfAttentionNet
from attnconv.positional import (
    AnisotropicGaussianEncoding,
    QuadraticEncoding,
    band_to_logits,
    grid_positions,
    logits_to_band,
    relative_index,
    relative_offsets,
    relative_position_bucket,
)
from attnconv.positional.band import key_to_query_frame
from attnconv.positional.quadratic import hard_logit_floor
from attnconv.taps import apply_band, check_padding_mask, tap_mask
from attnconv.train.bert_config import PRETRAIN_CONFIGS
from attnconv.train.vision_config import VISION_CONFIGS

from .cifar_fixtures import jpeg_bytes, tiny_arrays, write_class_zip
from .fuzz_cases import x
from .test_fuzz import outcome

CASES: list[tuple[str, str, Callable[[], Any]]] = []  # (id, argument that must be named, call)


def case(name: str, argument: str, call: Callable[[], Any]) -> None:
    CASES.append((name, argument, call))


MASK_LIST = [[False] * 5] * 2
IMAGES = torch.zeros(2, 32, 32, 3, dtype=torch.uint8)

# Python lists where a mask or offsets must be a tensor
case("lightweight-mask-list", "key_padding_mask", lambda: LightweightConv1d(8, 2, 3)(x(2, 5, 8), key_padding_mask=MASK_LIST))
case("dynamic-mask-list", "key_padding_mask", lambda: DynamicConv1d(8, 2, 3)(x(2, 5, 8), key_padding_mask=MASK_LIST))
case("check_padding_mask-list", "key_padding_mask", lambda: check_padding_mask(MASK_LIST, x(2, 5, 8)))
case("gpsa-mask-list", "key_padding_mask",
     lambda: GatedPositionalSelfAttention(8, 4)(x(2, 3, 3, 8), key_padding_mask=[[[False] * 3] * 3] * 2))
case("mhsa-mask-list", "key_padding_mask",
     lambda: MultiHeadSelfAttention(8, 2)(x(2, 5, 8), key_padding_mask=MASK_LIST))
case("bucket-offsets-list", "offsets", lambda: relative_position_bucket([0, 1, 2], 8, 16))
case("layer_shifts-probs-list", "probs", lambda: layer_shifts([[[1.0]]], (1,)))

# numpy arrays where a tensor is expected
case("bucket-offsets-numpy", "offsets", lambda: relative_position_bucket(np.arange(3), 8, 16))
case("apply_band-x-numpy", "x", lambda: apply_band(np.zeros((1, 5, 4)), torch.ones(1, 2, 5, 3)))
case("apply_band-band-numpy", "band", lambda: apply_band(x(1, 5, 4), np.ones((1, 2, 5, 3))))
case("band_to_logits-band-numpy", "band", lambda: band_to_logits(np.zeros((5, 3)), 5))
case("logits_to_band-logits-numpy", "logits", lambda: logits_to_band(np.ones((3, 3))))
case("key_to_query_frame-band-numpy", "band", lambda: key_to_query_frame(np.ones((3, 3))))
case("head_shift-probs-numpy", "probs", lambda: head_shift(np.ones((9, 9)) / 9, (3, 3)))
case("space_to_depth-x-numpy", "x", lambda: tokens.space_to_depth(np.zeros((1, 4, 4, 3)), 2))
case("conv_error_bound-x-numpy", "x",
     lambda: bounds.conv_error_bound(nn.Conv2d(2, 2, 3, padding=1), np.zeros((1, 2, 4, 4), np.float32), 1.0))
case("alpha_sweep-x-numpy", "x", lambda: bounds.alpha_sweep(nn.Conv2d(2, 2, 3, padding=1), np.zeros((1, 2, 4, 4)), [1.0]))
case("conv_error_bound-conv-linear", "conv", lambda: bounds.conv_error_bound(nn.Linear(2, 2), x(1, 2, 4, 4), 1.0))
case("grid_positions-grid-string", "grid", lambda: grid_positions("ab"))
case("relative_offsets-grid-float", "grid", lambda: relative_offsets([2.5]))
case("smallcnn-images-numpy", "images", lambda: SmallCNN()(IMAGES.numpy()))
case("sa-net-images-numpy", "images", lambda: SelfAttentionNet(VISION_CONFIGS["smoke"].sa)(IMAGES.float().numpy()))

# integer dtypes
case("hard_logit_floor-int64", "dtype", lambda: hard_logit_floor(torch.int64))
case("hard_logit_floor-string", "dtype", lambda: hard_logit_floor("float32"))
case("sa-net-images-uint8", "images", lambda: SelfAttentionNet(VISION_CONFIGS["smoke"].sa)(IMAGES))
case("apply_band-band-int", "band", lambda: apply_band(x(1, 5, 4), torch.ones(1, 2, 5, 3, dtype=torch.long)))
case("apply_band-x-int", "x", lambda: apply_band(torch.ones(1, 5, 4, dtype=torch.long), torch.ones(1, 2, 5, 3)))
case("smallcnn-images-bool", "images", lambda: SmallCNN()(IMAGES.bool()))
case("head_shift-probs-int", "probs", lambda: head_shift(torch.ones(9, 9, dtype=torch.long), (3, 3)))

# devices this machine does not have (where it has them, the call is legal and the case is not made)
ABSENT = [d for d, present in (("mps", torch.backends.mps.is_available()),
                               ("xla", importlib.util.find_spec("torch_xla") is not None)) if not present]
for device in ABSENT:
    case(f"grid_positions-{device}", "device", lambda device=device: grid_positions((3,), device=device))
    case(f"relative_offsets-{device}", "device", lambda device=device: relative_offsets((3, 3), device=device))
    case(f"relative_index-{device}", "device", lambda device=device: relative_index(5, 2, device=device))
    case(f"tap_mask-{device}", "device", lambda device=device: tap_mask(5, 3, device=device))

# bands of rank 0 and 1
case("logits_to_band-0d", "logits", lambda: logits_to_band(torch.tensor(1.0)))
case("logits_to_band-1d", "logits", lambda: logits_to_band(torch.ones(3)))
case("key_to_query_frame-0d", "band", lambda: key_to_query_frame(torch.tensor(1.0)))
case("key_to_query_frame-1d", "band", lambda: key_to_query_frame(torch.ones(3)))
case("key_to_query_frame-even", "band", lambda: key_to_query_frame(torch.ones(3, 4)))
case("band_to_logits-0d", "band", lambda: band_to_logits(torch.tensor(1.0), 5))
case("band_to_logits-1d", "band", lambda: band_to_logits(torch.ones(3), 5))
case("apply_band-0d", "band", lambda: apply_band(x(1, 5, 4), torch.tensor(1.0)))
case("apply_band-1d", "band", lambda: apply_band(x(1, 5, 4), torch.ones(3)))

# channels-first images into the CNN, and its sizes
case("smallcnn-channels-first", "images", lambda: SmallCNN()(torch.zeros(2, 3, 32, 32, dtype=torch.uint8)))
case("smallcnn-odd-size", "images", lambda: SmallCNN()(torch.zeros(2, 31, 31, 3, dtype=torch.uint8)))
case("smallcnn-width-zero", "width", lambda: SmallCNN(width=0))
case("smallcnn-width-float", "width", lambda: SmallCNN(width=2.5))
case("smallcnn-num_classes-zero", "num_classes", lambda: SmallCNN(num_classes=0))

# dims of the tail sum
case("gaussian_tail_sum-dims-1.5", "dims", lambda: bounds.gaussian_tail_sum(1.0, dims=1.5))
case("gaussian_tail_sum-dims-zero", "dims", lambda: bounds.gaussian_tail_sum(1.0, dims=0))
case("off_target_mass_bound-dims-string", "dims", lambda: bounds.off_target_mass_bound(1.0, dims="2"))

# alpha = 1e300: beyond float32
case("quadratic-alpha-1e300", "alpha", lambda: QuadraticEncoding(4, alpha=1e300))
case("quadratic-alpha-1e300-tensor", "alpha", lambda: QuadraticEncoding(2, alpha=torch.tensor([1.0, 1e300], dtype=torch.float64)))
case("local_init-1e300", "locality_strength", lambda: QuadraticEncoding.local_init(4, 1e300))
case("anisotropic-alpha-1e300", "alpha", lambda: AnisotropicGaussianEncoding(2, alpha=1e300))
case("conv_to_mhsa-alpha-1e300", "alpha", lambda: conv_to_mhsa(nn.Conv2d(2, 2, 3, padding=1), alpha=1e300))

# bad values that were accepted
case("bert-conv_kernel_size-even", "conv_kernel_size", lambda: BertConfig(conv_kernel_size=4))
case("bert-conv_kernel_size-zero", "conv_kernel_size", lambda: BertConfig(conv_kernel_size=0))
PRETRAIN = PRETRAIN_CONFIGS["smoke"]
for value in (2.0, 0.0, 1.0, -0.1, float("nan"), "0.15"):
    case(f"pretrain-mask_prob-{value}", "mask_prob", lambda value=value: replace(PRETRAIN, mask_prob=value))
for value in (-1, 1.0, float("nan"), "0.1"):
    case(f"pretrain-validation_fraction-{value}", "validation_fraction",
         lambda value=value: replace(PRETRAIN, validation_fraction=value))
case("train-config-sa-int", "sa", lambda: replace(VISION_CONFIGS["smoke"], sa=3))
case("train-config-resnet-dict", "resnet", lambda: replace(VISION_CONFIGS["smoke"], resnet={"width": 8}))
case("bucket-offsets-float", "offsets", lambda: relative_position_bucket(torch.tensor([0.5, 1.0]), 8, 16))
case("bucket-offsets-bool", "offsets", lambda: relative_position_bucket(torch.tensor([True]), 8, 16))
case("bucket-max_distance-float", "max_distance", lambda: relative_position_bucket(torch.arange(3), 8, 16.5))
case("bucket-max_distance-string", "max_distance", lambda: relative_position_bucket(torch.arange(3), 8, "16"))
case("apply_band-float64-band-on-float32", "band",
     lambda: apply_band(x(1, 5, 4), torch.ones(1, 2, 5, 3, dtype=torch.float64)))
case("apply_band-float32-band-on-float64", "band",
     lambda: apply_band(x(1, 5, 4, dtype=torch.float64), torch.ones(1, 2, 5, 3)))


@pytest.mark.parametrize("name, argument, call", CASES, ids=[c for c, _, _ in CASES])
def test_input_of_the_wrong_kind_is_a_clear_error(name, argument, call):
    result = outcome(argument, call)
    assert result == "clear", f"{name}: wanted a ValueError/TypeError naming {argument!r}, got {result}"


def test_case_ids_are_unique():
    assert len({c for c, _, _ in CASES}) == len(CASES)


def test_what_stays_legal():
    """The refusals are not too wide: a float32 band on half-precision x (kernels normalised in float32), an integer
    tensor of offsets, float pixel values and an available device still work."""
    half = apply_band(x(1, 5, 4, dtype=torch.bfloat16), torch.ones(1, 2, 5, 3))
    assert half.shape == (1, 5, 4)
    assert relative_position_bucket(torch.tensor([-3, 0, 2], dtype=torch.int32), 8, 16).tolist() == [2, 0, 6]
    torch.manual_seed(0)
    assert SmallCNN()(IMAGES.float()).shape == (2, 10)
    assert grid_positions((2,), device="cpu").shape == (2, 1)
    assert BertConfig(conv_kernel_size=5).conv_kernel_size == 5
    assert replace(PRETRAIN, mask_prob=0.5, validation_fraction=0.5).mask_prob == 0.5


# ---------------------------------------------------------------- data files: text in the wrong encoding, corrupt members

def _zip(path, members, deflate=()):
    """A zip of ``{name: bytes}``; members named in ``deflate`` are compressed."""
    with zipfile.ZipFile(path, "w") as zf:
        for name, raw in members.items():
            zf.writestr(name, raw, compress_type=zipfile.ZIP_DEFLATED if name in deflate else zipfile.ZIP_STORED)
    return path


def _corrupt(path, name):
    """Overwrite the compressed bytes of member ``name`` with an invalid deflate stream (its CRC stays)."""
    with zipfile.ZipFile(path) as zf:
        info = zf.getinfo(name)
    data = bytearray(path.read_bytes())
    local = info.header_offset
    start = local + 30 + int.from_bytes(data[local + 26:local + 28], "little") + \
        int.from_bytes(data[local + 28:local + 30], "little")
    data[start:start + info.compress_size] = b"\xff" * info.compress_size  # block type 3: reserved, invalid
    path.write_bytes(bytes(data))


BROWN = {f"brown/ca0{i}": b"The/at jury/nn said/vbd ./.\nIt/pps was/bedz fine/jj ./.\n" * 20 for i in range(1, 4)}


def test_invalid_utf8_in_an_ascii_corpus_names_the_member(tmp_path):
    """brown is ASCII (NLTK's declaration): a Latin-1 byte there is damage, not text. Before: decoded as Latin-1."""
    _zip(tmp_path / "brown.zip", {**BROWN, "brown/ca02": b"The/at caf\xe9/nn ./.\n"})
    with pytest.raises(RuntimeError, match=r"'brown/ca02' is not valid utf-8 \(byte 0xe9 at position 10\)"):
        read_documents("brown", tmp_path)


@pytest.mark.parametrize("corpus", ["inaugural", "brown"])
def test_utf16_text_names_the_member(corpus, tmp_path):
    """UTF-16 decodes as Latin-1 without an error, into text full of NULs. Before: read that way, even in the
    8-bit corpora."""
    name = f"{corpus}/1789-Washington.txt" if corpus == "inaugural" else "brown/ca01"
    members = {**BROWN, name: "Fellow-Citizens of the Senate.\n".encode("utf-16")} if corpus == "brown" else \
        {name: "Fellow-Citizens of the Senate.\n".encode("utf-16")}
    _zip(tmp_path / f"{corpus}.zip", members)
    with pytest.raises(RuntimeError, match=rf"'{name}' is not 8-bit text"):
        read_documents(corpus, tmp_path)


def test_the_8_bit_corpora_still_read_latin_1(tmp_path):
    _zip(tmp_path / "state_union.zip", {"state_union/1945-Truman.txt": b"Mr. President, caf\xe9 society. We go on.\n"})
    assert read_documents("state_union", tmp_path)[0].sentences == ("Mr. President, café society.", "We go on.")


def test_a_corrupt_compressed_member_is_named(tmp_path):
    """Before: a raw zlib.error that named neither the archive nor the member."""
    path = _zip(tmp_path / "brown.zip", BROWN, deflate=("brown/ca03",))
    _corrupt(path, "brown/ca03")
    with pytest.raises(RuntimeError, match=r"brown.zip: the member 'brown/ca03' is corrupt"):
        read_documents("brown", tmp_path)


def test_a_task_member_in_utf16_or_corrupt_is_named(tmp_path):
    lines = b"a fine film .\n" * 5
    _zip(tmp_path / "sentence_polarity.zip", {"sentence_polarity/rt-polarity.neg": lines,
                                              "sentence_polarity/rt-polarity.pos": "good .\n".encode("utf-16")})
    with pytest.raises(RuntimeError, match=r"'rt-polarity.pos' is not 8-bit text"):
        load_task("mr", tmp_path)
    path = _zip(tmp_path / "sentence_polarity.zip", {"sentence_polarity/rt-polarity.neg": lines,
                                                     "sentence_polarity/rt-polarity.pos": lines},
                deflate=("sentence_polarity/rt-polarity.neg",))
    _corrupt(path, "sentence_polarity/rt-polarity.neg")
    with pytest.raises(RuntimeError, match=r"'sentence_polarity/rt-polarity.neg' is corrupt"):
        load_task("mr", tmp_path)


def test_a_cifar_zip_member_that_is_no_image_or_corrupt_is_named(tmp_path):
    """Before: PIL's "cannot identify image file <_io.BytesIO ...>" and a raw zlib.error, naming no file."""
    arrays = tiny_arrays(10, 10)
    path = write_class_zip(tmp_path / "cifar.zip", arrays)
    with zipfile.ZipFile(path, "a") as zf:
        zf.writestr("train/cat/9999.jpg", b"this is a text file, not a JPEG\n")
    with pytest.raises(RuntimeError, match=r"'train/cat/9999.jpg' is not a readable image"):
        load_cifar10(path, expected_sizes=None, cache_dir=tmp_path / "cache")
    path = write_class_zip(tmp_path / "cifar2.zip", arrays)
    with zipfile.ZipFile(path, "a") as zf:
        zf.writestr("train/dog/9999.png", jpeg_bytes(arrays["train_images"][0]) * 4, compress_type=zipfile.ZIP_DEFLATED)
    _corrupt(path, "train/dog/9999.png")
    with pytest.raises(RuntimeError, match=r"the member 'train/dog/9999.png' is corrupt"):
        load_cifar10(path, expected_sizes=None, cache_dir=tmp_path / "cache")
