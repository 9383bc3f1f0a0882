"""The sandbox gives a cell the full namespace (PyTorch, NumPy, SymPy and the library's public API) unless the cell's
source shows that it reads nothing but ``np``, ``sp``, ``math`` or ``replace`` from it: then only those, and
PyTorch is not imported (about 1.2 CPU seconds of each sandbox's start-up)."""

from __future__ import annotations

import subprocess
import sys

from attnconv.course import wire
from attnconv.course.exercises import EXERCISES
from attnconv.course.sandbox import base_namespace, free_names, run_function_exercise


def test_free_names_are_what_a_cell_reads_and_never_binds():
    assert free_names("def square(x):\n    return x * x") == set()
    assert free_names("import numpy\nys = [math.sqrt(v) for v in xs]\nz = numpy.ones(2)") == {"math", "xs"}
    assert free_names("out = F.relu(torch.ones(2))") == {"F", "torch"}
    assert free_names("try:\n    pass\nexcept ValueError as err:\n    print(err)") == set()
    # a cell that can read its namespace as a whole, or that does not parse, gets everything
    for whole in ("t = globals()['torch']", "g = (lambda: 0).__globals__", "import sys\ng = sys._getframe()",
                  "t = eval('torch')", "t = vars()", "def f(:"):
        assert free_names(whole) is None, whole


def test_a_light_namespace_imports_no_pytorch_and_the_full_one_is_unchanged():
    code = ("import sys\nfrom attnconv.course.sandbox import base_namespace\n"
            "ns = base_namespace({'np', 'math', 'replace'})\nprint(sorted(ns), 'torch' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.stdout.split("] ")[-1].strip() == "False", out.stdout + out.stderr
    assert "['math', 'np', 'replace']" in out.stdout
    full = base_namespace(None)
    assert {"torch", "F", "np", "sp", "MultiHeadSelfAttention"} <= full.keys()
    assert base_namespace({"np", "torch"}).keys() == full.keys()  # one name beyond the light ones: everything


# The answer is off by one wherever the sandbox imported PyTorch, so the squares it sends back say which it did.
TELLS = 'import sys\n\ndef square(x):\n    return x * x + ("torch" in sys.modules)\n'


def _squares(code: str, seed: int = 5) -> tuple[list, list]:
    answers, problem = run_function_exercise("ex-toy-square", code, seed, 120, ("toy_checks",))
    assert answers is not None, problem
    xs = EXERCISES["ex-toy-square"].context(seed)["xs"]
    return wire.loads(answers["json"])["squares"], [x * x for x in xs]


def test_the_sandbox_imports_pytorch_only_for_a_cell_that_names_it(toy):
    got, squares = _squares(TELLS + 'verify("ex-toy-square", square=square, xs=xs)')
    assert got == squares, "a cell that names neither PyTorch nor the library ran with PyTorch imported"
    got, squares = _squares(TELLS + "ones = torch.ones(1)")  # names torch: the full namespace, as before
    assert got == [s + 1 for s in squares]
