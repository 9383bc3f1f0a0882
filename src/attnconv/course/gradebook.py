"""The CSV gradebook: one row per student, one column per exercise and per written part, and the problems.

Its text cells come from the submissions (the file name, the problems found in it), so each is neutralized for the
spreadsheet that opens it (:func:`attnconv.course.escape.csv_cell`): a cell that starts with ``= + - @`` gets a
leading ``'`` and a line break is written ``\\n``, so a file named ``=HYPERLINK(...).ipynb`` is no formula and a
name with a line break starts no row. The numbers the grader writes stay numbers.
"""

from __future__ import annotations

import csv
from pathlib import Path

from .escape import cap, csv_cell, plain
from .exercises import exercises_for
from .report import WRITTEN_SUFFIX, GradeReport
from .sheets import read_sheet, sheet_conflicts

__all__ = ["write_gradebook"]


def write_gradebook(reports: list[GradeReport], target: Path, written: Path | None = None) -> Path:
    """One row per student, one column per exercise (and per written part, from the marked sheets), the number of
    cells that raised, and ``problems``: the reason a notebook was not graded, duplicated or renamed cells, a
    sheet that was replaced, an answer line that looks like a mark (the missing protections are left out: they
    are the same for every row and the grader prints them)."""
    if not reports:
        raise ValueError("no reports to write")
    chapter = reports[0].chapter
    graded = [e for e in exercises_for(chapter) if e.graded]
    by_hand = [e for e in exercises_for(chapter) if e.written]
    header = ["student", "notebook"] + [e.label for e in graded] + ["auto_score", "auto_max"] + \
        [e.label + WRITTEN_SUFFIX for e in by_hand] + ["written_score", "written_max", "total", "max", "errors",
                                                        "problems"]
    rows = []
    for report in reports:
        points = {e.label: e.points for e in report.exercises}
        sheet = written / f"{report.student}.md" if written else None
        marks = read_sheet(sheet, chapter) if sheet and sheet.is_file() else {}
        conflicts = sheet_conflicts(sheet, chapter) if sheet and sheet.is_file() else []
        written_score = sum(v for v in marks.values() if v is not None)
        problems = [p for p in report.problems if not p.startswith("not isolated")] + conflicts
        row = [csv_cell(report.student), csv_cell(Path(report.notebook).name)] + \
            [points.get(e.label, 0) for e in graded] + \
            [report.score, report.max_score] + \
            ["" if marks.get(e.label) is None else f"{marks[e.label]:g}" for e in by_hand] + \
            [f"{written_score:g}", sum(e.written for e in by_hand), f"{report.score + written_score:g}",
             report.max_score + sum(e.written for e in by_hand), len(report.cell_errors),
             csv_cell(" | ".join(cap(plain(p), 1000) for p in problems))]
        rows.append(row)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.name}.tmp")
    with tmp.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow([csv_cell(h) for h in header])
        writer.writerows(rows)
    tmp.replace(target)
    return target
