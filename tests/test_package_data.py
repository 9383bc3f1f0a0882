"""A non-editable install carries the viewers' CSS and JavaScript, which live as package data, not Python strings."""

from __future__ import annotations

import shutil
import subprocess
import sys
import textwrap
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
ASSETS = ("attnconv/viewer_assets/viewer.css", "attnconv/viewer_assets/viewer.js",
          "attnconv/viewer_assets/explorable.css", "attnconv/viewer_assets/numerics.js",
          *(f"attnconv/viewer_assets/explore_{n}.js" for n in ("attention", "bias", "construction", "model")))


def test_viewer_assets_are_files_the_viewer_inlines():
    from attnconv.viewer import FrameViewer, _asset

    css, js = _asset("viewer.css"), _asset("viewer.js")
    assert ".attnconv-viewer" in css and "function" in js
    page = FrameViewer(lambda a: _figure(), {"a": [1, 2]})._repr_html_()
    # the script is the file's, with the viewer's element id filled in
    assert js.split("ROOT_ID")[1][:200] in page and "ROOT_ID" not in page
    assert css.strip().splitlines()[-1] in page


def _figure():
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(1, 1))
    ax.plot([0, 1])
    return fig


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    """The package built as a wheel from a copy of the tree (so no build/ folder lands in the checkout)."""
    src = tmp_path_factory.mktemp("tree")
    shutil.copy(ROOT / "pyproject.toml", src)
    shutil.copy(ROOT / "README.md", src)
    shutil.copytree(ROOT / "src", src / "src", ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    out = tmp_path_factory.mktemp("dist")
    code = f"from setuptools import build_meta; print(build_meta.build_wheel({str(out)!r}))"
    done = subprocess.run([sys.executable, "-c", code], cwd=src, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    return out / done.stdout.strip().splitlines()[-1]


def test_wheel_holds_the_viewer_assets(wheel):
    names = set(zipfile.ZipFile(wheel).namelist())
    missing = [a for a in ASSETS if a not in names]
    assert not missing, f"the wheel lacks {missing}; see [tool.setuptools.package-data] in pyproject.toml"


def test_installed_wheel_renders_a_viewer(wheel, tmp_path):
    """Unpacked alone on sys.path (as pip would install it), the package renders a viewer with its script."""
    site = tmp_path / "site"
    zipfile.ZipFile(wheel).extractall(site)
    code = textwrap.dedent(f"""
        import sys
        sys.path.insert(0, {str(site)!r})
        import numpy as np
        import attnconv.viewer as v
        assert v.__file__.startswith({str(site)!r}), v.__file__
        page = v.HeatmapViewer(np.ones((2, 1, 3, 3)), {{"x": [0, 1]}}, ["map"])._repr_html_()
        assert "putImageData" in page and ".attnconv-viewer" in page
    """)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
