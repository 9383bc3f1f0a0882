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


def test_chapter03_numbers_on_the_airplane():
    """Twin of chapter 03's check of the numbers its prose quotes for the explorable."""
    from attnconv.explorables.construction import PRESETS, grey_images

    plane, taps = grey_images()[0], [[a - 1.0, b - 1.0] for a in range(3) for b in range(3)]
    x = {"image": (plane["pixels"] / 255).tolist(), "centers": taps, "query": [16, 16]}
    gap = {a: construction_reference({**x, "kernel": PRESETS["edge"], "alpha": a})["max_difference"]
           for a in (1, 10, 20, 50)}
    shifted = [list(t) for t in taps]
    shifted[4] = [0.0, 1.0]
    broken = construction_reference({**x, "kernel": PRESETS["identity"], "alpha": 100.0, "centers": shifted})
    assert gap[1] > gap[10] > gap[20] > gap[50] == 0 and broken["max_difference"] > 0.05
    if plane["real"]:
        assert round(gap[1], 1) == 2.3 and 4e-4 < gap[10] < 6e-4 and 1e-8 < gap[20] < 3e-8
        assert round(broken["max_difference"], 2) == 0.76


def test_chapter02_untrained_layer_is_nearly_flat_at_temperature_60():
    """Twin of chapter 02's check: dividing the sharpened layer's logits by 60 gives back a nearly uniform map."""
    from attnconv.explorables.attention_map import chapter_layer, colour_images
    from attnconv.explorables.attention_map import reference as attention_reference

    layer = chapter_layer()
    x = {"image": (colour_images()[0]["pixels"] / 255).tolist(), "head": 0,
         **{f"{n}{p}": getattr(getattr(layer, f"{p}_proj"), part).tolist()
            for n, part in (("w", "weight"), ("b", "bias")) for p in ("q", "k")}}
    worst = {t: max(np.abs(attention_reference({**x, "temperature": t, "query": [r, c]})["heads"] * 256 - 1).max()
                    for r in range(0, 16, 3) for c in range(0, 16, 3)) for t in (1.0, 60.0)}
    assert worst[60.0] < 0.2 < 3 < worst[1.0]


def test_chapter05_numbers_of_the_bias_explorable():
    """Twin of chapter 05's check: the mass zero padding keeps at the first word, and the interior agreement."""
    from attnconv.explorables.bias_kernel import sentence_features

    _, features, _ = sentence_features()
    start = bias_reference({"bias": [-1.0, 1.0, 2.0, 1.0, -1.0], "features": features.tolist()})
    flat = bias_reference({"bias": [0.0] * 9, "features": features.tolist()})
    assert round(start["zero_padded"][0, 0], 2) == 0.77 and abs(flat["zero_padded"][0, 0] - 5 / 9) < 1e-12
    assert abs(start["renormalized"][:, 0] - 1).max() < 1e-12
    assert abs(flat["renormalized"][4:-4] - flat["zero_padded"][4:-4]).max() < 1e-12
    assert abs(flat["renormalized"][:4] - flat["zero_padded"][:4]).max() > 0.1


def test_chapter06_committed_page_weights():
    """Twin of chapter 06's check of the committed page weights: a finished epoch of the rerun, its record in the
    same folder, the recorded classes of the ten embedded images, the page's size limit."""
    import re
    from pathlib import Path

    run = Path(__file__).resolve().parents[1] / "results" / "cpu-long-sa-quadratic-rerun"
    path = run / "explorable-weights.json"
    weights = json.loads(path.read_text())
    epoch, epochs = (int(x) for x in re.fullmatch(r"cpu-long sa-quadratic, epoch (\d+) of (\d+)",
                                                  weights["source"]).groups())
    assert path.stat().st_size <= 300_000 and epochs == 12 and 1 <= epoch <= epochs
    records = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines() if line.strip()]
    assert records[epoch - 1]["epoch"] == epoch
    if epoch == epochs:  # the finished run: its final record is in the folder
        assert json.loads((run / "final.json").read_text())["epochs"] == epochs
    predicted = weights["checks"]["predicted"]
    assert len(predicted) == 10 and all(0 <= p < 10 for p in predicted)
    model = load_weights(weights)
    alphas = torch.cat([b.attn.positional.log_alpha.exp() for b in model.blocks])
    assert alphas.shape == (27,) and bool((alphas > 0).all())