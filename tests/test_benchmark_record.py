"""The one record writer of the benchmark scripts: the JSON record as given, and a Markdown table from templates."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
from _measure import machine, write_record  # noqa: E402


def test_write_record_writes_the_json_and_a_table(tmp_path):
    rows = [{"N": 64, "ms": 1.2345, "ratio": 0.5}, {"N": 128, "ms": 10.0, "ratio": 0.25}]
    record = {"meta": {"benchmark": "demo", **machine()}, "rows": rows}
    text = write_record(tmp_path / "sub" / "demo", record, title="demo", note="batch 2.",
                        columns=[("N", "{N}"), ("time (ms)", "{ms:.1f}"), ("ratio", "{ratio:.2f}")], rows=rows,
                        summary="done.")
    assert json.loads((tmp_path / "sub" / "demo.json").read_text()) == record
    assert (tmp_path / "sub" / "demo.md").read_text() == text
    lines = text.splitlines()
    assert lines[0] == "# demo" and lines[2].startswith("batch 2. torch ") and "thread(s)" in lines[2]
    assert lines[4:8] == ["| N | time (ms) | ratio |", "|---|---|---|", "| 64 | 1.2 | 0.50 |", "| 128 | 10.0 | 0.25 |"]
    assert lines[-1] == "done."


def test_write_record_names_a_missing_column_key(tmp_path):
    with pytest.raises(KeyError, match="peak_mib"):
        write_record(tmp_path / "x", {"rows": []}, title="t", note="n", columns=[("peak", "{peak_mib:.1f}")],
                     rows=[{"ms": 1.0}])
