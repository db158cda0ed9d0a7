"""The generated reference frees each intermediate tensor after its last use (as torch.fx's own code
does), so an extracted backward needs the memory of what is alive, not of everything it made."""

from __future__ import annotations

import weakref
from pathlib import Path

import pytest

transformers = pytest.importorskip("transformers")
import torch  # noqa: E402
from torch.utils._python_dispatch import TorchDispatchMode  # noqa: E402
from torch.utils._pytree import tree_leaves  # noqa: E402

from solbench.data.inputs import generate_inputs  # noqa: E402
from solbench.data.selection import choose_workloads  # noqa: E402
from solbench.dataset.extract.reference_code import _with_frees  # noqa: E402

from extract_testkit import tiny_problem  # noqa: E402


class LiveTensorBytes(TorchDispatchMode):
    """Bytes of the storages that tensors made by aten calls keep alive: now and at the peak."""

    def __init__(self) -> None:
        super().__init__()
        self.holders: dict[int, int] = {}  # storage address -> tensors alive on it
        self.sizes: dict[int, int] = {}
        self.now = self.peak = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        result = func(*args, **(kwargs or {}))
        for value in tree_leaves(result):
            if isinstance(value, torch.Tensor) and value.untyped_storage().nbytes():
                self._hold(value)
        return result

    def _hold(self, tensor: torch.Tensor) -> None:
        address = tensor.untyped_storage().data_ptr()
        if address not in self.holders:
            self.holders[address], self.sizes[address] = 0, tensor.untyped_storage().nbytes()
            self.now += self.sizes[address]
            self.peak = max(self.peak, self.now)
        self.holders[address] += 1
        weakref.finalize(tensor, self._release, address)

    def _release(self, address: int) -> None:
        self.holders[address] -= 1
        if not self.holders[address]:
            del self.holders[address]
            self.now -= self.sizes.pop(address)


def _peak_bytes(source: str, inputs: dict) -> tuple[int, object]:
    namespace: dict = {}
    exec(compile(source, "<reference>", "exec"), namespace)
    tracker = LiveTensorBytes()
    with torch.no_grad(), tracker:
        result = namespace["run"](**inputs)
    return tracker.peak, result


def test_fx_frees_become_dels_of_tensors_only():
    lines = ["    mul = a * b;  a = b = None", "    size = sym_size(mul, 0)", "    view = mul.view(size);  mul = size = None", "    return view"]
    assert _with_frees(lines, tensors={"mul", "view"}) == [
        "    mul = a * b", "    size = sym_size(mul, 0)", "    view = mul.view(size)", "    del mul", "    return view"]


def test_an_extracted_attention_backward_keeps_alive_only_what_it_still_needs(tmp_path: Path):
    _, _, problem, _, _ = tiny_problem(tmp_path, "llama3_8b", "attention", backward=True)
    source = problem.definition.reference
    assert "\n    del " in source
    inputs = generate_inputs(problem, choose_workloads(problem, "smallest:1")[0], seed=1, device="cpu")
    freed, freed_result = _peak_bytes(source, inputs)
    kept = "\n".join(line for line in source.splitlines() if not line.lstrip().startswith("del "))
    whole, kept_result = _peak_bytes(kept, inputs)
    for got, expected in zip(tree_leaves(freed_result), tree_leaves(kept_result), strict=True):
        torch.testing.assert_close(got, expected, rtol=0, atol=0)  # the same values
    assert freed < 0.6 * whole, (freed, whole)
