"""A quiet build log (book/ext/quiet_build.py): a build that subsets the icon fonts and executes a chapter prints
no fontTools INFO line and no kernel warning about unencrypted TCP, and its chapter still runs. The same build
without the extension prints both, so the check can fail."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
EXT = ROOT / "book" / "ext"
sys.path.insert(0, str(EXT))
import quiet_build  # noqa: E402

PAGE = """---
jupytext:
  text_representation:
    extension: .md
    format_name: myst
kernelspec:
  display_name: Python 3
  language: python
  name: python3
---
# A chapter

```{code-cell} ipython3
print("six times seven is", 6 * 7)
```
"""


def _build(folder: Path, extensions: list[str]) -> tuple[str, str]:
    """Build a one-chapter book with the book's own extensions; returns the log and the chapter's HTML."""
    folder.mkdir()
    lines = "\n".join(f"    {name}: {EXT}" for name in extensions)
    (folder / "_config.yml").write_text(f"title: one chapter\nexecute:\n  execute_notebooks: force\n"
                                        f"sphinx:\n  local_extensions:\n{lines}\n")
    (folder / "_toc.yml").write_text("format: jb-book\nroot: index\n")
    (folder / "index.md").write_text(PAGE)
    book = Path(sys.executable).with_name("jupyter-book")
    run = subprocess.run([str(book), "build", str(folder), "--path-output", str(folder / "out")],
                         capture_output=True, text=True, timeout=600)
    log = run.stdout + run.stderr
    assert run.returncode == 0, log[-3000:]
    return log, (folder / "out" / "_build" / "html" / "index.html").read_text()


@pytest.mark.skipif(shutil.which("jupyter-book", path=str(Path(sys.executable).parent)) is None,
                    reason="jupyter-book is not installed next to this Python")
def test_a_build_prints_no_fonttools_info_and_no_kernel_tcp_warning(tmp_path):
    log, html = _build(tmp_path / "quiet", ["light_icons", "quiet_build"])
    assert "six times seven is 42" in html, "the chapter was executed and its output shown"
    assert "fontTools" not in log, [line for line in log.splitlines() if "fontTools" in line][:3]
    assert "without encryption" not in log

    noisy, _ = _build(tmp_path / "noisy", ["light_icons"])  # the wrong variant: without the extension
    assert sum("INFO fontTools" in line for line in noisy.splitlines()) > 20
    assert "Kernel is running over TCP without encryption" in noisy


def test_fonttools_warnings_still_show(caplog):
    logger = __import__("logging").getLogger("fontTools")
    before = logger.level
    try:
        quiet_build.quiet_fonttools()
        caplog.set_level("INFO")
        logger.getChild("subset").info("pruned")
        logger.getChild("subset").warning("a real problem")
        assert [r.getMessage() for r in caplog.records if r.name.startswith("fontTools")] == ["a real problem"]
    finally:
        logger.setLevel(before)
