"""The explorables' Python side, without a browser: their HTML is self-contained and offline, small, and bad
arguments are refused. Their numbers are checked in Chromium in tests/explorables."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest
import torch

from attnconv.explorables import Explorable, standalone_page
from attnconv.explorables.attention_map import attention_explorable
from attnconv.explorables.bias_kernel import bias_explorable, reference as bias_reference
from attnconv.explorables.construction import construction_explorable, reference as construction_reference
from attnconv.explorables.vision_model import vision_explorable
from attnconv.explorables.weights import export_weights, load_weights
from attnconv.models.vision import SelfAttentionNet, VisionConfig


def _tiny_weights():
    torch.manual_seed(0)
    return export_weights(SelfAttentionNet(VisionConfig(hidden_dim=8, depth=1, num_heads=4, head_dim=4, mlp_dim=8)))


@pytest.fixture(scope="module")
def pages():
    return {"ch03": construction_explorable(), "ch02": attention_explorable(), "ch05": bias_explorable(),
            "ch06": vision_explorable(_tiny_weights(), "a tiny untrained model")}


def test_every_explorable_is_self_contained_and_offline(pages):
    for name, e in pages.items():
        page = e._repr_html_()
        assert f'window.attnconvExplorables[root.dataset.explorable]' in page and "attnconvNumerics" in page
        assert not re.search(r"<script[^>]+src=|<link[^>]+href=|https?://", page), name  # nothing fetched
        spec = re.search(r'<script type="application/json" class="ax-spec">(.*?)</script>', page, re.S).group(1)
        json.loads(spec.replace("<\\/", "</"))
    assert standalone_page(*pages.values()).count('class="attnconv-explorable"') == 4


def test_pages_stay_small(pages):
    """Well under the 300 KB that an explorable may add to a page (chapter 06's real weights add ~150 KB)."""
    sizes = {name: len(e._repr_html_().encode()) for name, e in pages.items()}
    assert all(n < 120_000 for n in sizes.values()), sizes


def test_bad_arguments_are_refused():
    with pytest.raises(ValueError, match="start"):
        construction_explorable(start="emboss")
    with pytest.raises(ValueError, match="alpha"):
        construction_explorable(alpha=0)
    with pytest.raises(ValueError, match="bias"):
        bias_explorable(bias=(1.0, 2.0))
    with pytest.raises(ValueError, match="layer"):
        attention_explorable(layer=torch.nn.Linear(2, 2))
    with pytest.raises(ValueError, match="ident"):
        Explorable("a b", "numerics.js", {}, "t")
    with pytest.raises(ValueError, match="format"):
        load_weights({"format": "float16"})
    with pytest.raises(TypeError, match="SelfAttentionNet"):
        export_weights(torch.nn.Linear(2, 2))


def test_references_agree_with_the_theorem_and_with_the_boundary_rule():
    """The references the browser tests compare with: at large α the layer is the convolution (Theorem 1), and
    a moved head breaks it; attention is the renormalised convolution, equal to zero padding in the interior."""
    rng = np.random.default_rng(0)
    x = {"image": rng.uniform(0, 1, (8, 8)).tolist(), "kernel": rng.normal(0, 1, (3, 3)).tolist(), "alpha": 60.0,
         "centers": [[a - 1.0, b - 1.0] for a in range(3) for b in range(3)], "query": [0, 0]}
    out = construction_reference(x)
    assert out["max_difference"] < 1e-12 and np.allclose(out["attention"].sum(axis=(1, 2)), 1)
    x["centers"][4] = [0.0, 1.0]
    assert construction_reference(x)["max_difference"] > 1e-3
    b = bias_reference({"bias": [0.5, -1.0, 2.0, 0.0, 1.0], "features": np.ones((9, 1)).tolist()})
    assert np.allclose(b["renormalized"], 1) and np.allclose(b["attention"].sum(1), 1)
    assert np.allclose(b["zero_padded"][2:-2], 1) and b["zero_padded"][0, 0] < 1
    assert np.allclose(b["attention"] @ np.ones((9, 1)), b["renormalized"])
