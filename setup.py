"""The package's metadata is in pyproject.toml; this file adds one build step: the committed records.

The chapters read measured figures from ``results/`` (:mod:`attnconv.records`). A wheel built from the repository
(as Colab's ``pip install "attnconv @ git+..."`` builds one) carries a copy of them as ``attnconv/_records``, so
that a notebook run with no repository around it still finds them. Only record files are copied, never a
checkpoint.
"""

import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

RECORD_SUFFIXES = (".json", ".jsonl", ".md", ".npz")  # as attnconv.records.RECORD_SUFFIXES


class BuildWithRecords(build_py):
    """``build_py``, then ``results/`` (its record files only) into ``attnconv/_records`` of the build."""

    def run(self):
        super().run()
        source = Path(__file__).resolve().parent / "results"
        if self.editable_mode or not source.is_dir():  # an editable install reads the checkout's own results/
            return
        target = Path(self.build_lib) / "attnconv" / "_records"
        shutil.rmtree(target, ignore_errors=True)
        for path in sorted(source.rglob("*")):
            if path.is_file() and path.suffix in RECORD_SUFFIXES:
                dest = target / path.relative_to(source)
                dest.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(path, dest)


setup(cmdclass={"build_py": BuildWithRecords})
