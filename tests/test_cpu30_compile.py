"""``benchmarks/cpu30_compile.py`` weighs compiling against the steps it speeds up or slows, over the recipe."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
from _measure import machine  # noqa: E402
from cpu30_compile import report  # noqa: E402

META = {**machine(), "commit": "0" * 40, "dirty": False, "cpu": "test CPU", "images": 6000, "epochs": 3,
        "rounds": 2}


def _runs(eager_s: float, compiled_s: float, compiling_s: float) -> list[dict]:
    return [{"round": r, "compiled": compiled, "first_epoch_s": 10.0 + (compiling_s if compiled else 0.0),
             "later_train_s": compiled_s if compiled else eager_s, "process_wall_s": 60.0, "full_test_acc": 0.3}
            for r in (1, 2) for compiled in (False, True)]


def test_slower_compiled_steps_are_a_cost_and_do_not_pay(tmp_path):
    text = report(META, _runs(8.0, 9.0, 66.0), str(tmp_path / "r"))
    assert "0.89x the eager speed" in text and "compiling added 66 s" in text
    assert "would cost" in text and text.rstrip().endswith("it does not pay.")
    assert (tmp_path / "r.json").is_file()


def test_faster_steps_pay_only_when_they_win_back_the_compiling(tmp_path):
    pays = report(META, _runs(8.0, 6.0, 60.0), str(tmp_path / "a"))  # 25% of 24.4 min saved against 60 s
    assert "would save" in pays and pays.rstrip().endswith("it pays.")
    short = report(META, _runs(8.0, 7.99, 60.0), str(tmp_path / "b"))  # about 2 s saved against 60 s
    assert "would save" in short and short.rstrip().endswith("it does not pay.")
