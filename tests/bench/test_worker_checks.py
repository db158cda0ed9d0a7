"""The worker's own checks never fail on what a solution returns: every odd output gets its status
and a one-line reason in the trace, never a traceback of the harness."""

from __future__ import annotations

from pathlib import Path

import pytest

from solbench.bench.orchestrator import EvalOptions, evaluate
from solbench.data.inline import inline_problem, inline_solution
from solbench.data.trace import Status

# One workload per odd output, told apart by the size n (the solution picks its misbehaviour by it).
ODD_SOLUTION = '''
import torch

def run(x):
    n = x.shape[0]
    y = x * 2
    if n == 1:
        return "not a tensor"
    if n == 2:
        return ((y,),)                     # a nested tuple as the one output
    if n == 3:
        return x.view(-1)                  # a view of the input
    if n == 4:
        return y.t().contiguous().t()      # non-contiguous, correct: must pass
    if n == 5:
        return torch.nested.nested_tensor([y[0], y[1]])
    if n == 6:
        return torch.empty_like(y, device="meta")
    if n == 7:
        return torch.quantize_per_tensor(y, 0.1, 0, torch.qint8)
    if n == 8:
        return y.to_sparse()
    if n == 9:
        return [y, y]                      # two values for one declared output
    if n == 10:
        return y.expand(2, n, n)[0]        # a stride-0 view of a fresh tensor, correct: must pass
    return y
'''

EXPECTED = {  # n -> (status, words the one-line reason has)
    1: (Status.INCORRECT_SHAPE, "output 'y' is a str, not a tensor"),
    2: (Status.INCORRECT_SHAPE, "output 'y' is a tuple, not a tensor"),
    3: (Status.REWARD_HACK, "REWARD_HACK [output-aliases-input]"),
    4: (Status.PASSED, ""),
    5: (Status.INCORRECT_SHAPE, "a nested tensor"),
    6: (Status.INCORRECT_SHAPE, "a meta tensor"),
    7: (Status.INCORRECT_SHAPE, "a quantized tensor"),
    8: (Status.INCORRECT_SHAPE, "sparse"),
    9: (Status.INCORRECT_SHAPE, "returned 2 value(s); the definition declares 1 output(s)"),
    10: (Status.PASSED, ""),
}


@pytest.mark.filterwarnings("ignore")
def test_odd_outputs_get_their_status_and_a_one_line_reason(tmp_path: Path):
    problem = inline_problem("odd_outputs", "import torch\n\ndef run(x):\n    return x * 2\n",
                             {"x": (["n", "n"], "float32")}, {"y": (["n", "n"], "float32")},
                             axes={"n": {"type": "var"}}, workload_axes=[{"n": n} for n in EXPECTED])
    solution = inline_solution("odd", problem.name, "pytorch", "k.py::run", {"k.py": ODD_SOLUTION}, dps=False)
    options = EvalOptions(device="cpu", trials=1, hidden=0, timing=False, cache_root=tmp_path, static_analysis=False)
    traces = evaluate(problem, solution, options)
    seen = {trace.workload.axes["n"]: trace.evaluation for trace in traces}
    for n, (status, words) in EXPECTED.items():
        evaluation = seen[n]
        assert evaluation.status == status, (n, evaluation.status, evaluation.log)
        assert "Traceback" not in evaluation.log, (n, evaluation.log)
        if words:
            harness_log = evaluation.log.split("[solution worker output]")[0].strip()  # what the solution printed comes after
            assert len(harness_log.splitlines()) == 1 and words in harness_log, (n, evaluation.log)
