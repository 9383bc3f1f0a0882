"""Sphinx extension: every chapter's launch targets come from one setting, ``repository.url`` in ``_config.yml``.

The Colab button is built from that setting by the theme. The hidden first cell of each chapter, which installs
``attnconv`` when the notebook runs in Colab, names the repository in its code. This extension reads every
chapter's code cells as the book builds and warns (an error under ``-W``) when one names another GitHub
repository, or when a chapter's install cell is missing, so that a fork or a move is one edit plus a search.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from sphinx.application import Sphinx
from sphinx.util import logging

logger = logging.getLogger(__name__)

_CODE_CELL = re.compile(r"^```\{code-cell\}[^\n]*\n(.*?)^```", re.MULTILINE | re.DOTALL)
_GITHUB_REPO = re.compile(r"https://github\.com/[\w.-]+/[\w.-]+")


def normalise(url: str) -> str:
    """``https://github.com/owner/name`` without a trailing slash or ``.git``."""
    return url.strip().rstrip("/").removesuffix(".git")


def code_of(text: str) -> str:
    """The code cells of a chapter, given as MyST markdown or as ``.ipynb`` JSON, joined by newlines."""
    if text.lstrip().startswith("{"):
        cells = json.loads(text).get("cells", [])
        return "\n".join("".join(c["source"]) if isinstance(c["source"], list) else c["source"]
                         for c in cells if c.get("cell_type") == "code")
    return "\n".join(m.group(1) for m in _CODE_CELL.finditer(text))


def disagreements(text: str, repository: str) -> list[str]:
    """What in a chapter disagrees with ``repository``; an empty list when nothing does.

    Args:
        text: the chapter, as MyST markdown or as ``.ipynb`` JSON.
        repository: ``repository.url`` from ``_config.yml``.
    """
    if not isinstance(repository, str) or not repository.startswith("https://github.com/"):
        raise ValueError(f"repository must be a https://github.com/owner/name URL, got {repository!r}")
    repository = normalise(repository)
    code = code_of(text)
    problems = [f"names {url}, not {repository}" for url in _GITHUB_REPO.findall(code)
                if normalise(url) != repository]
    if f"git+{repository}" not in code:
        problems.append(f"has no install cell for git+{repository}")
    return problems


def _check(app: Sphinx, docname: str, source: list[str]) -> None:
    if not docname.startswith("notebooks/"):
        return
    repository = app.config.html_theme_options.get("repository_url", "")
    for problem in disagreements(source[0], repository):
        logger.warning(f"{docname}: launch target {problem} (repository.url in _config.yml)",
                       location=docname, type="attnconv", subtype="launch")


def _launch_only_with_a_notebook(app: Sphinx, pagename: str, templatename: str, context: dict, doctree) -> None:
    """Drop the launch (rocket) buttons from a page with no paired ``.ipynb`` beside its ``.md``: Colab cannot open
    a ``.md``, so a button there leads to an error page (the claims page and the instructors' page run code, which
    makes the theme treat them as notebooks)."""
    source = Path(app.env.doc2path(pagename))
    if source.suffix == ".md" and not source.with_suffix(".ipynb").is_file():
        context["header_buttons"] = [b for b in context.get("header_buttons", []) if b.get("label") != "launch-buttons"]


def setup(app: Sphinx) -> dict:
    app.connect("source-read", _check)
    app.connect("html-page-context", _launch_only_with_a_notebook, priority=900)  # after the theme adds them
    return {"parallel_read_safe": True, "parallel_write_safe": True}
