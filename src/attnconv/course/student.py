"""Generate the student edition of the chapters: ``python -m attnconv.course.student [--out student]``
(``make student`` calls it).

From each worked chapter ``notebooks/NN_name.md`` it writes ``student/NN_name.ipynb`` with

- every region between ``### BEGIN SOLUTION`` and ``### END SOLUTION`` replaced by ``# YOUR CODE HERE`` and
  ``raise NotImplementedError()`` (kept at the region's indentation);
- every cell tagged ``solution`` removed, and every written ``{solution}`` block removed from the text;
- the book's folding tags (``hide-cell``, ...) dropped from solution cells, so that a student's stub is in view;
- no outputs, and stable cell ids, so that regenerating an unchanged chapter gives identical files;
- the hidden Colab install cell kept, and a first cell linking to this notebook's own Colab address;
- nbgrader's cell metadata (schema 3) on every answer cell: ``grade_id`` is the exercise's label;
- a Markdown answer cell (``YOUR ANSWER HERE``, nbgrader's manually graded answer, ``grade_id``
  ``<label>-written`` with its points) after each conceptual exercise and after the answer cell of each exercise
  with a written part; the grader collects these into a sheet for marking.

The worked chapters stay the only source: the student files are generated, committed, and checked to be current.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

import jupytext
import nbformat

__all__ = [
    "DEFAULT_REPOSITORY", "colab_url", "main", "plain_exercises", "prepare_student_book", "strip_solutions",
    "student_notebook",
    "write_student_edition",
]

BEGIN, END = "### BEGIN SOLUTION", "### END SOLUTION"
STUB = "# YOUR CODE HERE\nraise NotImplementedError()"
ANSWER_PLACEHOLDER = "YOUR ANSWER HERE"  # nbgrader's placeholder for a written answer
_READER_FOLDS = ("hide-cell", "hide-input", "hide-output")
DEFAULT_REPOSITORY = "https://github.com/attnconv/attnconv"
_SOLUTION_BLOCK = re.compile(r"^:::\{solution\}.*?^:::[ \t]*\n?", re.MULTILINE | re.DOTALL)
_EXERCISE_BLOCK = re.compile(r"^:::\{exercise\}[^\n]*\n:label: (\S+)\n+(.*?)\n:::[ \t]*$", re.MULTILINE | re.DOTALL)


def plain_exercises(text: str) -> str:
    """MyST ``{exercise}`` blocks as plain Markdown, which Jupyter and Colab render."""
    return _EXERCISE_BLOCK.sub(lambda m: f"**Exercise** `{m.group(1)}`\n\n{m.group(2)}", text)


def strip_solutions(source: str) -> str:
    """Replace each BEGIN/END SOLUTION region of a code cell by the student stub, keeping its indentation."""
    out, inside = [], False
    for line in source.splitlines():
        stripped = line.strip()
        if stripped == BEGIN:
            if inside:
                raise ValueError(f"nested {BEGIN!r} in:\n{source}")
            inside = True
            indent = line[: len(line) - len(line.lstrip())]
            out += [indent + stub_line for stub_line in STUB.splitlines()]
        elif stripped == END:
            if not inside:
                raise ValueError(f"{END!r} without {BEGIN!r} in:\n{source}")
            inside = False
        elif not inside:
            out.append(line)
    if inside:
        raise ValueError(f"{BEGIN!r} without {END!r} in:\n{source}")
    return "\n".join(out)


def _nbgrader(grade_id: str, points: int | None = None) -> dict:
    """nbgrader's cell metadata: an autograded answer cell (no points) or a manually graded one (points)."""
    meta = {"grade": points is not None, "grade_id": grade_id, "locked": False, "schema_version": 3,
            "solution": True, "task": False}
    if points is not None:
        meta["points"] = points
    return {"nbgrader": meta}


def answer_cell(label: str, points: int) -> nbformat.NotebookNode:
    """The Markdown cell in which a student writes the written part of exercise ``label``."""
    unit = "point" if points == 1 else "points"
    cell = nbformat.v4.new_markdown_cell(f"**Your answer to `{label}`** (written, {points} {unit})\n\n"
                                         f"{ANSWER_PLACEHOLDER}")
    cell.metadata.update(_nbgrader(f"{label}-written", points))
    return cell


def _exercise_label(source: str) -> str | None:
    match = re.search(r"verify\(\s*[\"']([\w-]+)[\"']", source)
    return match.group(1) if match else None


def colab_url(repository: str, path: str, branch: str = "main") -> str:
    """The Colab address of a notebook in a GitHub repository."""
    repo = repository.rstrip("/").removeprefix("https://github.com/")
    return f"https://colab.research.google.com/github/{repo}/blob/{branch}/{path}"


def student_notebook(chapter: Path, repository: str = DEFAULT_REPOSITORY, folder: str = "student") -> nbformat.NotebookNode:
    """The student edition of one worked chapter (a MyST ``.md`` or an ``.ipynb``)."""
    from .exercises import EXERCISES

    nb = jupytext.read(chapter)
    cells = []
    name = chapter.with_suffix(".ipynb").name
    link = colab_url(repository, f"{folder}/{name}")
    cells.append(nbformat.v4.new_markdown_cell(
        f"**Student edition.** [Open this notebook in Colab]({link}). Replace each `raise NotImplementedError()` "
        "with your answer; the `verify(...)` line after it checks your work."))
    for cell in nb.cells:
        tags = cell.metadata.get("tags", [])
        if "solution" in tags:
            continue
        if cell.cell_type == "code":
            new = nbformat.v4.new_code_cell(strip_solutions(cell.source))
            if BEGIN in cell.source:  # the book folds worked solutions; a student's stub stays in view
                tags = [t for t in tags if t not in _READER_FOLDS]
            if tags:
                new.metadata["tags"] = list(tags)
            label = _exercise_label(cell.source) if BEGIN in cell.source else None
            if label:
                new.metadata.update(_nbgrader(label))
            cells.append(new)
            if label in EXERCISES and EXERCISES[label].written:
                cells.append(answer_cell(label, EXERCISES[label].written))
        else:
            text = _SOLUTION_BLOCK.sub("", cell.source)
            pos = 0
            for block in _EXERCISE_BLOCK.finditer(text):  # a conceptual exercise gets its answer cell right after
                exercise = EXERCISES.get(block.group(1))
                if exercise is not None and not exercise.graded and exercise.written:
                    cells.append(_markdown(text[pos:block.end()], name, folder))
                    cells.append(answer_cell(exercise.label, exercise.written))
                    pos = block.end()
            if text[pos:].strip() or pos == 0:
                cells.append(_markdown(text[pos:], name, folder))
    out = nbformat.v4.new_notebook(cells=cells, metadata={
        "kernelspec": {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"},
        "language_info": {"name": "python"},
    })
    for i, cell in enumerate(out.cells):
        cell.id = f"cell-{i:03d}"
    return out


def _markdown(text: str, name: str, folder: str) -> nbformat.NotebookNode:
    text = plain_exercises(text).replace(f"notebooks/{name}", f"{folder}/{name}")
    return nbformat.v4.new_markdown_cell(text.strip("\n"))


def write_student_edition(notebooks: Path, out: Path, repository: str = DEFAULT_REPOSITORY) -> list[Path]:
    """Write ``out/NN_name.ipynb`` for every ``notebooks/NN_name.md``; returns the files written."""
    chapters = sorted(notebooks.glob("[0-9][0-9]_*.md"))
    if not chapters:
        raise FileNotFoundError(f"no chapters NN_name.md in {notebooks}")
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for chapter in chapters:
        target = out / chapter.with_suffix(".ipynb").name
        text = nbformat.writes(student_notebook(chapter, repository, out.name)) + "\n"
        tmp = target.with_suffix(".ipynb.tmp")
        tmp.write_text(text)
        tmp.replace(target)  # atomic: a reader never sees half a notebook
        written.append(target)
    return written


def prepare_student_book(root: Path, student: Path, out: Path) -> Path:
    """Lay out a copy of the book whose chapters are the student notebooks, for ``make book-student``.

    The copy's configuration hides every ``{solution}`` block (sphinx-exercise's ``hide_solutions``) and does
    not execute the chapters, whose exercises are stubs. Returns the folder to build.
    """
    import shutil

    import yaml

    if out.exists():
        shutil.rmtree(out)
    (out / "notebooks").mkdir(parents=True)
    shutil.copytree(root / "book", out / "book", ignore=shutil.ignore_patterns("*.tmp"))
    # The chapters show library code with literalinclude (../src/attnconv/...): the copy needs the sources.
    shutil.copytree(root / "src" / "attnconv", out / "src" / "attnconv",
                    ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    shutil.copy(root / "_toc.yml", out / "_toc.yml")
    for notebook in sorted(student.glob("*.ipynb")):
        shutil.copy(notebook, out / "notebooks" / notebook.name)
    # Pages that are not chapters (a part's appendix, NNa_name) have no exercises and no student edition: the
    # student book shows them as they are, so that every page of the table of contents is there.
    for notebook in sorted((root / "notebooks").glob("[0-9][0-9][a-z]_*.ipynb")):
        shutil.copy(notebook, out / "notebooks" / notebook.name)
    config = yaml.safe_load((root / "_config.yml").read_text())
    config["title"] = f"{config.get('title', 'Book')} (student edition)"
    config["execute"] = {**config.get("execute", {}), "execute_notebooks": "off"}
    config["exclude_patterns"] = [p for p in config.get("exclude_patterns", []) if p != "notebooks/*.ipynb"]
    config.setdefault("sphinx", {}).setdefault("config", {})["hide_solutions"] = True
    (out / "_config.yml").write_text(yaml.safe_dump(config, sort_keys=False, allow_unicode=True))
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--notebooks", type=Path, default=Path("notebooks"))
    parser.add_argument("--out", type=Path, default=Path("student"))
    parser.add_argument("--repository", default=DEFAULT_REPOSITORY)
    parser.add_argument("--book", type=Path, help="also lay out a student copy of the book in this folder")
    args = parser.parse_args(argv)
    for path in write_student_edition(args.notebooks, args.out, args.repository):
        print(f"wrote {path}")
    if args.book:
        print(f"student book sources in {prepare_student_book(Path('.'), args.out, args.book)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

