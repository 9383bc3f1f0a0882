"""Each check of a function exercise decides on what the answer does on the grader's hidden inputs, never on a
class name or on data the notebook hands back: the look-alikes of the course's review fail, the worked answers
pass. The student's cell runs here as the sandbox runs it (the hidden inputs in its namespace, the probe's data
through the wire), and the check gets the hidden inputs rebuilt from the seed, as in the checker."""

from __future__ import annotations

import pytest

from attnconv.course import wire
from attnconv.course.exercises import EXERCISES, run_check
from attnconv.course.sandbox import base_namespace

PEAK_CELL = ('kernels = np.array(composite.kernels["fixed"]) if composite is not None else '
             'np.full((2, 4, 33), 1 / 33)\n'
             'offsets = np.arange(-(kernels.shape[-1] // 2), kernels.shape[-1] // 2 + 1)\n')
COST_CELL = ('rows = json.loads(bench.with_suffix(".json").read_text())["rows"] '
             'if bench.with_suffix(".json").is_file() else {}\n')
PAD_CELL = "pad = torch.zeros(2, 12, dtype=torch.bool)\npad[1, 7:] = True\n"
FAKE_CONV = ("class ConvAsAttention(torch.nn.Module):\n    def __init__(self, conv):\n        super().__init__()\n"
             "        self.conv = conv\n    def forward(self, x):\n        return self.conv(x)\n")

CASES = {
    # exercise: (worked answer, look-alikes that must fail)
    "ex-02-uniform": (
        "with torch.no_grad():\n    pool.q_proj.weight.zero_()\n    pool.v_proj.weight.copy_(torch.eye(12))\n"
        "    pool.out_proj.weight.copy_(torch.eye(12))\n",
        {"callable-returning-the-mean": "def pool(t, need_weights=False):\n    n = t.shape[1] * t.shape[2]\n"
                                        "    m = t.mean(dim=(1, 2), keepdim=True).expand_as(t)\n"
                                        "    return m, torch.full((t.shape[0], 1, n, n), 1 / n, dtype=t.dtype)\n",
         "weights-untouched": "pass\n"}),
    "ex-03-even-kernel": (
        "even_attention = conv_to_mhsa(even)\n",
        {"class-named-ConvAsAttention": FAKE_CONV + "even_attention = ConvAsAttention(even)\n",
         "wrapper-holding-the-conversion": FAKE_CONV + "even_attention = ConvAsAttention(conv_to_mhsa(even))\n"}),
    "ex-05-clipped-width": (
        "equivalent = attention_to_lightconv(clipped, max_length=10)\n",
        {"class-named-ProjectedConv1d": "class ProjectedConv1d(torch.nn.Module):\n    def __init__(self, a):\n"
                                        "        super().__init__()\n        self.a = a\n"
                                        "        self.conv = LightweightConv1d(16, 4, 19)\n"
                                        "    def forward(self, x):\n        return self.a(x)[0]\n"
                                        "equivalent = ProjectedConv1d(clipped)\n"}),
    "ex-07-peak-offsets": (
        PEAK_CELL + "peak = offsets[kernels.argmax(-1)]\nweight = kernels.max(-1)\n",
        {"kernels-of-ones": PEAK_CELL + "kernels = np.ones((1, 1, 1))\npeak = np.zeros((1, 1))\n"
                                        "weight = np.ones((1, 1))\n",
         "uniform-kernels": "kernels = np.full((2, 4, 33), 1 / 33)\noffsets = np.arange(-16, 17)\n"
                            "peak = offsets[kernels.argmax(-1)]\nweight = kernels.max(-1)\n"}),
    "ex-07-cost": (
        COST_CELL + 'ratios = {v: r["median_step_s"] / rows["absolute"]["median_step_s"] for v, r in rows.items()}\n'
                    "within_goal = sorted(v for v, x in ratios.items() if x <= 1.25)\n",
        {"empty-rows": COST_CELL + "rows = {}\nratios = {}\nwithin_goal = []\n",
         "all-within": COST_CELL + "ratios = {v: 1.0 for v in rows}\nwithin_goal = sorted(rows)\n"}),
    "ex-07-padding": (
        PAD_CELL + "with torch.no_grad():\n"
                   "    gap = (tiny(ids, padding_mask=pad)[1, :7] - tiny(ids[1:, :7])[0]).abs().max().item()\n",
        {"typed-in-zero": PAD_CELL + "gap = 0.0\n", "typed-in-small": PAD_CELL + "gap = 1e-7\n"}),
}


def _grade(label: str, code: str, seed: int = 20260) -> list:
    exercise = EXERCISES[label]
    namespace = base_namespace()
    namespace.update(exercise.context(seed))
    exec(compile(code, "<cell>", "exec"), namespace)  # noqa: S102  (the test's own cells)
    try:
        answers = wire.loads(wire.dumps(exercise.probe(namespace)))
    except Exception as err:  # noqa: BLE001  (the sandbox reports a probe that raised as a failure)
        return [f"probe raised {err}"]
    return run_check(exercise, answers, exercise.context(seed))


@pytest.mark.parametrize("label", sorted(CASES))
def test_worked_answer_passes_on_hidden_inputs(label):
    results = _grade(label, CASES[label][0])
    assert all(getattr(r, "passed", False) for r in results), results


@pytest.mark.parametrize("label,cheat", [(label, cheat) for label in sorted(CASES)
                                         for cheat in sorted(CASES[label][1])])
def test_look_alike_fails(label, cheat):
    results = _grade(label, CASES[label][1][cheat])
    assert not all(getattr(r, "passed", False) for r in results), results


def test_hidden_inputs_change_with_the_seed():
    """Different seeds give different hidden kernels, rows and padding offsets, so no constant fits them all."""
    for label in ("ex-07-peak-offsets", "ex-07-cost"):
        context = EXERCISES[label].context
        assert wire.dumps({"k": context(1)[EXERCISES[label].given[0]]}) != \
            wire.dumps({"k": context(2)[EXERCISES[label].given[0]]})
