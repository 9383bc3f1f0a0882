"""Chapters 06 and 07 the way Google Colab runs them, with nothing reaching the internet.

- a stand-in ``google.colab`` module whose ``drive.mount`` makes a "Drive" folder in a temporary directory;
- the chapter's own install cell, pointed at this checkout: ``%pip`` installs it into a private folder (never
  the shared environment), and the repository "clone" is a local clone;
- CIFAR-10 and the NLTK zips downloaded from a server on 127.0.0.1, holding a tiny archive in the official
  python format and sample zips, through the environment variables the library honours;
- the ``smoke`` budget chosen through ``ATTNCONV_BUDGET``;
- no ``ATTNCONV_CACHE``, and a fresh local cache folder per session (a fresh runtime): the chapter mounts Drive, so
  the download cache is on Drive and a later session, or the other chapter, fetches nothing again.

Each chapter runs in a fresh kernel: its install cell, its import cell and its "Train it yourself" section. The
first ch06 session is cut during its second epoch (a disconnect); the next session resumes it from the Drive
checkpoint, and the chapter's figures then draw that run beside the committed ones.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError

from ..local_mirror import build_mirror, serve

ROOT = Path(__file__).resolve().parents[2]
RUN = "smoke-sa-quadratic"

_COLAB = '''
import os, sys, types
from pathlib import Path

def _mount(mountpoint, force_remount=False):
    (Path(mountpoint) / "MyDrive").mkdir(parents=True, exist_ok=True)

google = types.ModuleType("google"); colab = types.ModuleType("google.colab")
drive = types.ModuleType("google.colab.drive"); drive.mount = _mount
colab.drive, google.colab = drive, colab
sys.modules.update({"google": google, "google.colab": colab, "google.colab.drive": drive})
os.environ.update(ENV)
for name in ("ATTNCONV_DATA", "ATTNCONV_RESULTS", "PYTHONPATH"):
    os.environ.pop(name, None)
'''

_CUT = '''
from attnconv.train import vision
_evaluate, _calls = vision._evaluate, []
def _disconnect(*args, **kwargs):
    _calls.append(1)
    if len(_calls) == 2:  # the second epoch's evaluation: the browser tab closes
        raise KeyboardInterrupt("disconnected")
    return _evaluate(*args, **kwargs)
vision._evaluate = _disconnect
'''

_REPORT = '''
import attnconv, json
from pathlib import Path
_lines = {name: [l.get_label() for l in f.axes[0].get_lines()] for name, f in FIGURES.items()}
Path(REPORT).write_text(json.dumps({"attnconv": attnconv.__file__, "cwd": os.getcwd(), "mine": str(mine),
                                    "budget": BUDGET, "lines": _lines}))
'''


def _section(nb, title: str) -> list:
    """The code cells of the section headed ``## title``, up to the next heading."""
    cells, inside = [], False
    for cell in nb.cells:
        headings = [line for line in cell.source.splitlines() if line.startswith("## ")]
        if cell.cell_type == "markdown" and headings:
            inside = headings[-1] == f"## {title}"
        elif inside and cell.cell_type == "code":
            cells.append(cell)
    assert cells, f"no code cells under '## {title}'"
    return cells


def _colab_notebook(chapter: str, tmp: Path, env: dict, extra_before: str = "", report: str = "") -> nbformat.NotebookNode:
    """The install cell (pointed at this checkout), the import cell and the "Train it yourself" section."""
    nb = nbformat.read(ROOT / "notebooks" / f"{chapter}.ipynb", as_version=4)
    code = [c for c in nb.cells if c.cell_type == "code"]
    install = code[0]
    assert '"google.colab" in sys.modules' in install.source and "%pip install" in install.source
    site = tmp / "site"
    src = (install.source
           .replace('%pip install -q "attnconv @ git+https://github.com/attnconv/attnconv"',
                    f"%pip install -q --no-deps --no-build-isolation --no-index --target {site} {ROOT}\n"
                    f"    sys.path.insert(0, {str(site)!r})")
           .replace('"https://github.com/attnconv/attnconv", "/content/attnconv"', f'{str(ROOT)!r}, {str(tmp / "content" / "attnconv")!r}')
           .replace('"/content/attnconv/notebooks"', repr(str(tmp / "content" / "attnconv" / "notebooks"))))
    assert "github.com" not in src and str(site) in src, "the install cell changed: update this test"
    imports = next(c for c in code if "prepare_data(" in c.source and "RESULTS = results_dir()" in c.source)
    cells = [nbformat.v4.new_code_cell(f"ENV = {env!r}\n" + _COLAB), nbformat.v4.new_code_cell(src), imports]
    if extra_before:
        cells.append(nbformat.v4.new_code_cell(extra_before))
    cells += _section(nb, "Train it yourself")
    if report:
        cells.append(nbformat.v4.new_code_cell(report))
    nb.cells = cells
    return nb


def _run(nb, cwd: Path, allow_errors: bool = False):
    client = NotebookClient(nb, timeout=600, kernel_name="python3", allow_errors=allow_errors,
                            resources={"metadata": {"path": str(cwd)}})
    client.execute()
    return nb


@pytest.fixture(scope="module")
def colab(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("colab")
    served, requests = tmp / "served", []
    sums = build_mirror(served)
    with serve(served, sums, requests) as urls:
        env = {**urls, "ATTNCONV_BUDGET": "smoke", "ATTNCONV_DRIVE_MOUNT": str(tmp / "drive"),
               "MPLBACKEND": "module://matplotlib_inline.backend_inline"}
        saved = {k: os.environ.pop(k, None) for k in ("ATTNCONV_DATA", "PYTHONPATH", "ATTNCONV_CACHE")}
        try:  # the kernel starts bare
            yield tmp, env, requests
        finally:
            os.environ.update({k: v for k, v in saved.items() if v is not None})


def _session(env: dict, tmp: Path, name: str) -> dict:
    """The environment of a fresh runtime: its own empty local cache folder (the user cache of a new VM)."""
    return {**env, "XDG_CACHE_HOME": str(tmp / "runtimes" / name)}


ARCHIVE = "/cifar-10-python.tar.gz"


def test_chapter_06_in_colab_downloads_trains_resumes_and_draws_the_run(colab):
    tmp, env, requests = colab
    folder = tmp / "drive" / "MyDrive" / "attnconv-runs" / RUN
    drive_cache = tmp / "drive" / "MyDrive" / "attnconv" / "cache"
    cut = _run(_colab_notebook("06_cifar10_training", tmp, _session(env, tmp, "first"), extra_before=_CUT), tmp,
               allow_errors=True)
    assert requests.count(ARCHIVE) == 1, requests
    assert (drive_cache / "cifar-10-python.tar.gz").is_file(), "the download cache must be on the mounted Drive"
    assert not (tmp / "runtimes" / "first" / "attnconv").exists(), "nothing downloaded into the runtime's own cache"
    errors = [o for c in cut.cells for o in c.get("outputs", []) if o.get("output_type") == "error"]
    assert errors and errors[0]["ename"] == "KeyboardInterrupt", errors
    assert (folder / "checkpoint.pt").is_file() and not (folder / "final.json").exists()
    first = [json.loads(line) for line in (folder / "metrics.jsonl").read_text().splitlines()]
    assert [r["epoch"] for r in first] == [1]

    report = tmp / "report06.json"
    nb = _colab_notebook("06_cifar10_training", tmp, _session(env, tmp, "second"),
                         report=f"REPORT = {str(report)!r}\nFIGURES = my_figures\n" + _REPORT)
    _run(nb, tmp)
    assert requests.count(ARCHIVE) == 1, f"a second session must not download CIFAR-10 again: {requests}"
    seen = json.loads(report.read_text())
    assert seen["attnconv"].startswith(str(tmp / "site")), "the chapter must import the copy its install cell installed"
    assert seen["budget"] == "smoke" and seen["mine"] == str(folder)
    history = [json.loads(line) for line in (folder / "metrics.jsonl").read_text().splitlines()]
    assert [r["epoch"] for r in history] == [1, 2] and history[0] == first[0], "resumed, not started again"
    prov = json.loads((folder / "provenance.json").read_text())
    # the download: the tiny archive's md5 is not the official one, so the record names it a mirror's
    assert prov["data"].startswith("CIFAR-10-format archive from a mirror"), prov
    assert str(drive_cache) in prov["data_source"], prov
    assert seen["lines"]["accuracy"][-1] == f"your run ({RUN})"
    assert "committed cpu-long sa-quadratic" in seen["lines"]["accuracy"]
    assert set(seen["lines"]) == {"accuracy", "centers", "reach"}
    pictures = [o for c in nb.cells for o in c.get("outputs", []) if "image/png" in o.get("data", {})]
    assert len(pictures) >= 3, "the figures of the reader's run were not drawn"


def test_chapter_07_in_colab_downloads_the_corpora_and_pretrains(colab):
    tmp, env, requests = colab
    report = tmp / "report07.json"
    nb = _colab_notebook("07_bert_convolutional_attention", tmp, _session(env, tmp, "ch07"),
                         report=f"REPORT = {str(report)!r}\nFIGURES = {{'curve': fig}}\n" + _REPORT)
    _run(nb, tmp)
    seen = json.loads(report.read_text())
    folder = tmp / "drive" / "MyDrive" / "attnconv-runs" / "bert-smoke-composite"
    assert seen["mine"] == str(folder) and (folder / "final.json").is_file()
    assert (tmp / "drive" / "MyDrive" / "attnconv" / "cache" / "nltk" / "corpora" / "brown.zip").is_file()
    assert requests.count("/brown.zip") == 1, requests
    assert seen["lines"]["curve"][-1] == "your run (bert-smoke-composite)"
    assert "committed cpu-quick absolute" in seen["lines"]["curve"]
