"""Launch targets (the Colab button and each chapter's hidden install cell) all come from ``repository.url``."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import yaml

from attnconv.course.student import DEFAULT_REPOSITORY

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "book" / "ext"))
from launch_targets import disagreements  # noqa: E402

REPOSITORY = yaml.safe_load((ROOT / "_config.yml").read_text())["repository"]["url"]
CHAPTERS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.md"))
CELL = '```{code-cell} ipython3\nif "google.colab" in sys.modules:\n    %pip install -q "attnconv @ git+URL"\n```\n'


@pytest.mark.parametrize("md", CHAPTERS, ids=lambda p: p.stem)
def test_chapter_launch_targets_agree_with_config(md):
    assert disagreements(md.read_text(), REPOSITORY) == []


def test_student_edition_default_repository_is_the_config_one():
    assert DEFAULT_REPOSITORY == REPOSITORY


def test_disagreements_catch_a_fork_mismatch_and_a_missing_install_cell():
    url = "https://github.com/attnconv/attnconv"
    assert disagreements(CELL.replace("URL", url), url) == []
    assert disagreements(CELL.replace("URL", url + ".git"), url + "/") == []
    fork = disagreements(CELL.replace("URL", "https://github.com/someone/fork"), url)
    assert any("someone/fork" in p for p in fork) and any("no install cell" in p for p in fork)
    clone = CELL.replace("URL", url) + '```{code-cell} ipython3\n!git clone https://github.com/old/home\n```\n'
    assert disagreements(clone, url) == ["names https://github.com/old/home, not " + url]
    # prose may cite other repositories; only code cells are launch targets
    assert disagreements(CELL.replace("URL", url) + "See https://github.com/epfml/attention-cnn.\n", url) == []


@pytest.mark.parametrize("bad", ["", "github.com/a/b", None])
def test_disagreements_rejects_a_non_github_repository(bad):
    with pytest.raises(ValueError, match="repository"):
        disagreements(CELL, bad)


def test_disagreements_read_a_notebook_too():
    import jupytext

    url = "https://github.com/attnconv/attnconv"
    ipynb = jupytext.writes(jupytext.reads(CELL.replace("URL", url), fmt="md:myst"), fmt="ipynb")
    assert disagreements(ipynb, url) == []
    assert disagreements(ipynb, "https://github.com/someone/fork") != []


def test_build_hook_warns_only_for_a_disagreeing_chapter(monkeypatch):
    """The Sphinx hook turns a disagreement into a warning, which the strict build (-W) makes an error."""
    import types

    import launch_targets

    warnings = []
    monkeypatch.setattr(launch_targets.logger, "warning", lambda msg, **kw: warnings.append(msg))
    app = types.SimpleNamespace(config=types.SimpleNamespace(html_theme_options={"repository_url": REPOSITORY}))
    launch_targets._check(app, "notebooks/01_x", [CELL.replace("URL", REPOSITORY)])
    launch_targets._check(app, "book/intro", ["no code here"])
    assert warnings == []
    launch_targets._check(app, "notebooks/02_y", [CELL.replace("URL", "https://github.com/old/home")])
    assert len(warnings) == 2 and all("notebooks/02_y" in w for w in warnings)
