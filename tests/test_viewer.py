"""The objects chapters display: HTML tables, typeset SymPy, and the kernel-free viewers with the numbers they show."""

from __future__ import annotations

import base64
import json
import re
import zlib
from pathlib import Path

import numpy as np
import pytest
import sympy as sp
import torch

from attnconv.display import Math, Table
from attnconv.figures.interactive import (bias_viewer, quadratic_query_maps, quadratic_run_viewer, theorem1_kernel,
                                          theorem1_viewer)
from attnconv.positional.sequence import RelativePositionBias
from attnconv.viewer import FrameViewer, HeatmapViewer

ROOT = Path(__file__).resolve().parents[1]
SOBEL = torch.tensor([[1.0, 0.0, -1.0], [2.0, 0.0, -2.0], [1.0, 0.0, -1.0]], dtype=torch.float64)


def _maps(spec: dict) -> np.ndarray:
    """A heatmap viewer's bytes as the page's script gets them: base64, then inflated."""
    assert spec["encoding"] == "deflate"
    return np.frombuffer(zlib.decompress(base64.b64decode(spec["data"])), dtype=np.uint8)


def _spec(viewer) -> dict:
    html = viewer._repr_html_()
    return json.loads(re.search(r'<script type="application/json" class="av-spec">(.*?)</script>', html, re.S)
                      .group(1).replace("<\\/", "</"))


# ---- tables and math -------------------------------------------------------------------------------------------

def test_table_from_markdown_keeps_every_cell_and_renders_html():
    md = "| variant | loss |\n|---|---:|\n| `fixed` | 5.3 |\n| absolute | 6.2 |"
    table = Table.from_markdown(md)
    assert table.headers == ["variant", "loss"] and table.rows == [["`fixed`", "5.3"], ["absolute", "6.2"]]
    html = table._repr_html_()
    assert "<table" in html and "|---|" not in html and "<code>fixed</code>" in html
    assert html.count("<tr>") == 3 and 'text-align: right; white-space: nowrap">5.3' in html


def test_table_rejects_ragged_rows_and_non_tables():
    with pytest.raises(ValueError, match="rows\\[1\\]"):
        Table(["a", "b"], [[1, 2], [3]])
    with pytest.raises(ValueError, match="pipe table"):
        Table.from_markdown("just a paragraph | with a bar")
    with pytest.raises(ValueError, match="align"):
        Table(["a"], [[1]], align=["middle"])


def test_table_escapes_html():
    assert "<script>" not in Table(["x"], [["<script>alert(1)</script>"]])._repr_html_()


def test_math_gives_display_latex_of_a_matrix():
    latex = Math(sp.Matrix([[0, 0], [0, 0]]), "residual")._repr_latex_()
    assert latex.startswith("$$") and latex.endswith("$$") and "\\\\" in latex and "\\begin{matrix}" in latex
    with pytest.raises(TypeError, match="label"):
        Math(sp.Integer(0), label=3)


def test_proof_result_html_keeps_matrix_row_breaks_in_a_display_block():
    """A matrix residual is typeset as display maths in HTML, where its row breaks survive; markdown holds no $$.

    Markdown renderers read ``$$`` literally or escape the ``\\\\`` between matrix rows, so the result shows its
    maths only in ``_repr_html_`` (``\\[ ... \\]`` blocks for MathJax) and keeps ``_repr_markdown_`` plain text.
    """
    import html as html_module

    from attnconv.proofs.result import verify_equal

    result = verify_equal("demo", "zero", sp.Matrix([[1, 0], [0, 1]]), sp.Matrix([[1, 0], [0, 1]]), instance="2 x 2")
    page = result._repr_html_()
    blocks = [html_module.unescape(b) for b in re.findall(r'<div class="math[^"]*">\\\[(.*?)\\\]</div>', page, re.S)]
    residual = [b for b in blocks if b.startswith("\\text{residual}")]
    assert len(residual) == 1 and "\\\\" in residual[0] and "matrix" in residual[0], page
    assert "$$" not in result._repr_markdown_() and "verified" in result._repr_markdown_()
    wrong = verify_equal("demo", "zero", sp.Matrix([[1, 0], [0, 1]]), sp.Matrix([[1, 1], [0, 1]]), instance="2 x 2")
    assert "NOT verified" in wrong._repr_html_() and "\\\\" in wrong._repr_html_()


# ---- viewers ---------------------------------------------------------------------------------------------------

def test_frame_viewer_has_one_frame_per_setting_in_row_major_order():
    import matplotlib.pyplot as plt

    seen = []

    def draw(a, b):
        seen.append((a, b))
        fig, ax = plt.subplots(figsize=(1, 1))
        ax.set_title(f"{a}{b}")
        return fig

    viewer = FrameViewer(draw, {"a": [1, 2], "b": ["x", "y", "z"]}, dpi=20)
    assert seen == [(1, "x"), (1, "y"), (1, "z"), (2, "x"), (2, "y"), (2, "z")]
    spec = _spec(viewer)
    assert len(spec["frames"]) == 6 and len(set(spec["frames"])) == 6
    assert base64.b64decode(spec["frames"][0])[:4] == b"\x89PNG"
    html = viewer._repr_html_()
    assert 'type="range"' in html and "<select" in html and "<option" in html


def test_viewer_rejects_bad_arguments():
    with pytest.raises(ValueError, match="controls"):
        FrameViewer(lambda: None, {})
    with pytest.raises(TypeError, match="draw"):
        FrameViewer(None, {"a": [1]})
    with pytest.raises(ValueError, match="defaults"):
        HeatmapViewer(np.zeros((2, 1, 3, 3)), {"a": [0, 1]}, ["p"], defaults={"a": 5})
    with pytest.raises(ValueError, match="shape"):
        HeatmapViewer(np.zeros((3, 1, 3, 3)), {"a": [0, 1]}, ["p"])
    with pytest.raises(ValueError, match="non-negative"):
        HeatmapViewer(-np.ones((2, 1, 3, 3)), {"a": [0, 1]}, ["p"])
    with pytest.raises(ValueError, match="mark"):
        HeatmapViewer(np.zeros((2, 1, 3, 3)), {"a": [0, 1]}, ["p"], mark=["a", "b"])


def test_heatmap_viewer_stores_each_setting_scaled_to_its_maximum():
    rng = np.random.default_rng(0)
    maps = rng.random((2, 3, 2, 4, 5))  # controls (2, 3), two panels of 4 x 5
    viewer = HeatmapViewer(maps, {"r": [0, 1], "c": [0, 1, 2]}, ["p0", "p1"])
    spec = _spec(viewer)
    data = _maps(spec).reshape(6, 2, 4, 5)
    flat = maps.reshape(6, 2, 4, 5)
    top = flat.reshape(6, -1).max(1)
    np.testing.assert_allclose(data / 255 * top[:, None, None, None], flat, atol=top.max() / 255)
    assert [float(v) for v in spec["vmax"]] == pytest.approx(top, rel=1e-2)
    assert spec["shapes"] == [[4, 5], [4, 5]]
    # the settings are stored row-major (the last control fastest), the order the page's script reads them in
    wrong = maps.transpose(1, 0, 2, 3, 4).reshape(6, 2, 4, 5)
    assert not np.allclose(data / 255 * top[:, None, None, None], wrong, atol=top.max() / 255)


def test_theorem1_kernel_converges_to_the_convolution():
    errors = {a: (theorem1_kernel(a, SOBEL)[1] - theorem1_kernel(a, SOBEL)[2]).abs().max().item()
              for a in (0.5, 8.0, 46.0)}
    assert errors[0.5] > 0.5 and errors[8.0] < 1e-2 and errors[46.0] < 1e-15
    probs, _, _ = theorem1_kernel(46.0, SOBEL)
    # head h lights exactly its own neighbour: the argmax of head (dy, dx) is the centre + (dy, dx)
    shifts = [(dy, dx) for dy in (-1, 0, 1) for dx in (-1, 0, 1)]
    for h, (dy, dx) in enumerate(shifts):
        assert divmod(int(probs[h].argmax()), 7) == (3 + dy, 3 + dx)
    with pytest.raises(ValueError, match="odd"):
        theorem1_kernel(1.0, torch.ones(2, 2))


def test_theorem1_viewer_spans_alpha_half_to_46():
    viewer = theorem1_viewer(SOBEL, alphas=[0.5, 46.0])
    assert viewer.controls["α"] == [0.5, 46.0] and len(viewer.frames) == 2 and viewer.frames[0] != viewer.frames[1]


def test_bias_viewer_matches_the_bias_module():
    viewer = bias_viewer(values=(-1.0, 0.0, 1.0), length=6)
    spec = _spec(viewer)
    data = _maps(spec).reshape(3 ** 5, 5 + 36)
    setting = (2, 0, 1, 1, 0)  # b = (1, -1, 0, 0, -1)
    index = np.ravel_multi_index(setting, (3,) * 5)
    b = torch.tensor([1.0, -1.0, 0.0, 0.0, -1.0], dtype=torch.float64)
    module = RelativePositionBias(1, 2, window=True).double()
    with torch.no_grad():
        module.weight.copy_(b[None])
        probs = torch.softmax(module((6,), None, None), -1)[0]
    expected = torch.cat([torch.softmax(b, 0), probs.flatten()]).numpy()
    top = float(spec["vmax"][index])
    np.testing.assert_allclose(data[index] / 255 * top, expected, atol=top / 255 + 1e-3)
    wrong = np.ravel_multi_index(tuple(reversed(setting)), (3,) * 5)  # the same biases read in the wrong order
    assert not np.allclose(data[wrong] / 255 * float(spec["vmax"][wrong]), expected, atol=0.01)


def test_quadratic_maps_reproduce_the_committed_run():
    run = ROOT / "results" / "cpu-quick-sa-quadratic"
    if not (run / "centers.jsonl").is_file():
        pytest.skip("the committed quadratic run is not in this checkout")
    last = json.loads((run / "centers.jsonl").read_text().splitlines()[-1])
    with np.load(run / "attention.npz") as npz:
        queries, stored = npz["queries"].tolist(), torch.as_tensor(npz["query_maps"], dtype=torch.float64)
    maps = quadratic_query_maps(last["centers"], last["precision"], (16, 16), queries)
    assert (maps - stored.permute(0, 2, 1, 3, 4)).abs().max() < 1e-5
    # a sign error in δ = key - query (query - key) puts each head on the mirrored pixel
    flipped = quadratic_query_maps(-torch.tensor(last["centers"]), last["precision"], (16, 16), queries)
    assert (flipped - stored.permute(0, 2, 1, 3, 4)).abs().max() > 1e-3
    viewer = quadratic_run_viewer([last], stride=4)
    assert viewer.sizes == [1, 3, 4, 4] and len(viewer.panels) == 9


def test_chapter06_explorer_is_light():
    """Chapter 06's explorer (3 snapshots x 3 layers x 8 x 8 queries x 9 heads of 16 x 16) stays under 200 kB:
    1.33 MB of map bytes, mostly zeros, deflate to a few percent."""
    run = ROOT / "results" / "cpu-quick-sa-quadratic"
    if not (run / "centers.jsonl").is_file():
        pytest.skip("the committed quadratic run is not in this checkout")
    records = [json.loads(line) for line in (run / "centers.jsonl").read_text().splitlines()]
    snapshots = [records[i] for i in sorted({0, len(records) // 2, len(records) - 1})]
    viewer = quadratic_run_viewer(snapshots, stride=2)
    page = viewer._repr_html_()
    assert viewer.data.nbytes > 10 ** 6 and len(page.encode()) < 200_000
    np.testing.assert_array_equal(_maps(_spec(viewer)), viewer.data.ravel())


def test_sentence_kernel_viewer_keeps_every_head_and_token():
    from attnconv.figures.interactive import sentence_kernel_viewer

    rng = np.random.default_rng(0)
    record = {"tokens": ["a", "b", "c"], "offsets": [-1, 0, 1],
              "dynamic": rng.dirichlet(np.ones(3), size=(2, 4, 3)).tolist()}  # (L, N_h, N, 2k+1)
    viewer = sentence_kernel_viewer({"one": record, "two": record, "none": {"dynamic": None}})
    assert viewer.sizes == [2, 2, 4] and viewer.shapes == [(3, 3)] and viewer.row_labels == ["a", "b", "c"]
    with pytest.raises(ValueError, match="same tokens"):
        sentence_kernel_viewer({"one": record, "two": {**record, "tokens": ["x", "y", "z"]}})
    with pytest.raises(ValueError, match="row_labels"):
        HeatmapViewer(np.ones((2, 1, 3, 3)), {"a": [0, 1]}, ["p"], row_labels=["x"])


def test_exercise_checks_print_no_autograd_warning():
    """A chapter's ✔ line must not come with a UserWarning about float() of a tensor that requires grad."""
    import warnings

    from attnconv.course.exercises import EXERCISES, verify

    x = torch.randn(1, 4, 4, 3, dtype=torch.float64)
    pointwise = torch.nn.Conv2d(3, 5, 1, dtype=torch.float64)
    as_matmul = x @ pointwise.weight[:, :, 0, 0].T + pointwise.bias  # requires grad, as a reader's answer does
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        verify("ex-01-one-by-one", as_matmul=as_matmul, x=x, pointwise=pointwise)
    assert not [w for w in caught if issubclass(w.category, UserWarning)], [str(w.message) for w in caught]
    with warnings.catch_warnings(record=True) as caught:  # the check itself reads detached copies
        warnings.simplefilter("always")
        assert EXERCISES["ex-01-one-by-one"].check(as_matmul=as_matmul, x=x, pointwise=pointwise).passed
    assert not [w for w in caught if issubclass(w.category, UserWarning)], [str(w.message) for w in caught]
    with warnings.catch_warnings(record=True) as caught:  # control: the capture does see the warning it guards
        warnings.simplefilter("always")
        float(as_matmul.sum())
    assert any("requires_grad" in str(w.message) for w in caught)


def test_kernel_strip_prints_its_values_and_panels_take_their_own_labels():
    import numpy as np

    from attnconv.viewer import HeatmapViewer

    strip = np.random.default_rng(0).random((2, 1, 5))
    band = np.random.default_rng(1).random((2, 6, 6))
    viewer = HeatmapViewer([strip, band], {"b": [0, 1]}, ["kernel", "band"],
                           col_labels=[["-2", "-1", "0", "1", "2"], None], show_values=[0])
    page = viewer._repr_html_()
    assert page.count('class="av-cols av-vals" data-panel="0"') == 1 and "<span" in page
    assert ">-2</span>" in page
    with pytest.raises(ValueError, match="one-row panels"):
        HeatmapViewer([strip, band], {"b": [0, 1]}, ["kernel", "band"], show_values=[1])
    with pytest.raises(ValueError, match="col_labels"):
        HeatmapViewer([strip, band], {"b": [0, 1]}, ["kernel", "band"], col_labels=[["a"] * 4, None])


def test_labels_keep_their_size_and_labelled_panels_are_marked_for_the_phone_layout():
    """Labels are drawn at LABEL_PX whatever the cell (a 4 px cell would give 3.6 px tokens if they followed it):
    rows with labels are at least LABEL_PX + 2 tall, a strip that prints its values gets cells wide enough for
    them, and panels with labels carry av-labelled, which the phone layout leaves at full size."""
    import numpy as np

    from attnconv.viewer import LABEL_PX, VALUE_CELL_PX, HeatmapViewer

    maps = np.random.default_rng(0).random((2, 1, 6, 9))
    page = HeatmapViewer(maps, {"head": [1, 2]}, ["kernels"], cell=4, row_labels=list("abcdef"),
                         col_labels=[str(d) for d in range(-4, 5)])._repr_html_()
    sizes = [float(x) for x in re.findall(r"font-size: ([\d.]+)px", page)]
    assert sizes and min(sizes) >= LABEL_PX >= 10, sizes
    assert f"height: {LABEL_PX + 2:.2f}px" in page and "width: 36px; height: 84px" in page  # 9 x 4, 6 x 14
    assert page.count('class="av-panel av-labelled"') == 1
    strip = np.random.default_rng(1).random((2, 1, 5))
    page = HeatmapViewer([strip, maps[:, 0]], {"b": [0, 1]}, ["kernel", "plain"], show_values=[0])._repr_html_()
    assert f"width: {5 * VALUE_CELL_PX}px; height: 24px" in page, "the strip's cells fit their printed values"
    assert page.count('class="av-panel av-labelled"') == 1 and page.count('class="av-panel"') == 1
    css = page[page.index("<style>"):page.index("</style>")]
    assert ".av-panel:not(.av-labelled) {max-width: 100px;}" in css and "justify-content: safe center" in css


def test_numbered_figure_needs_a_key_and_shows_its_object(capsys):
    from attnconv.display import numbered_figure

    with pytest.raises(ValueError, match="key"):
        numbered_figure("", Table(["a"], [[1]]))
    numbered_figure("table-key", Table(["a"], [[1]]))  # outside a kernel: shown as text
    assert "a" in capsys.readouterr().out
