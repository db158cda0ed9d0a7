"""The KernelBench importer: a real Model run by the file's own code equals the imported reference."""

from __future__ import annotations

import importlib.util
import textwrap
from pathlib import Path

import pytest
import torch

from solbench.data.inputs import derive_seed, generate_inputs
from solbench.data.loaders import scan
from solbench.data.loaders.kernelbench import INPUTS_ENTRYPOINT, load_kernelbench_file
from solbench.data.reference import reference_module

FILES = sorted((Path(__file__).parents[2] / "fixtures" / "kernelbench").glob("*.py"))


def _original_module(path: Path):
    spec = importlib.util.spec_from_file_location(f"original_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _as_tuple(value):
    return tuple(value) if isinstance(value, (tuple, list)) else (value,)


def test_there_are_enough_kernelbench_files():
    assert len(FILES) >= 10


@pytest.mark.parametrize("path", FILES, ids=[p.stem for p in FILES])
def test_imported_reference_equals_the_files_own_model(path: Path):
    loaded = load_kernelbench_file(path)
    assert loaded.ok, [str(i) for i in loaded.issues]
    problem = loaded.problem
    (workload,) = problem.workloads
    seed = 7
    inputs = generate_inputs(problem, workload, seed=seed)

    # The file's own way: seed, build the model, draw the inputs, call forward.
    original = _original_module(path)
    torch.manual_seed(derive_seed(seed, workload.uuid, 0, "custom"))
    model = original.Model(*original.get_init_inputs())
    arguments = original.get_inputs()
    expected = _as_tuple(model(*arguments))

    produced = _as_tuple(reference_module(problem.definition).run(*inputs.values()))
    assert len(produced) == len(expected) == len(problem.definition.outputs)
    for out, exp, (name, spec) in zip(produced, expected, problem.definition.outputs.items()):
        assert torch.equal(out, exp), name
        assert list(out.shape) == spec.shape and out.dtype == spec.dtype.torch_dtype()

    # Every parameter, buffer and plain tensor attribute became a named input holding the model's values.
    state = dict(model.named_parameters()) | dict(model.named_buffers())
    for dotted, tensor in state.items():
        name = next(n for n in problem.definition.inputs if n == dotted.replace(".", "_"))
        if not dotted.endswith(("running_mean", "running_var", "num_batches_tracked")):  # training mode updates these in place
            assert torch.equal(inputs[name], tensor.detach()), dotted
    # Forward arguments come first, in forward's order, with the values get_inputs() gives.
    for (name, value), argument in zip(inputs.items(), arguments):
        if isinstance(argument, torch.Tensor):
            assert torch.equal(value, argument), name
        else:
            assert value == argument and problem.definition.inputs[name].shape is None


def test_input_names_types_and_workload(tmp_path: Path):
    loaded = load_kernelbench_file(Path(__file__).parents[2] / "fixtures" / "kernelbench" / "14_softmax_dim_arg.py")
    definition = loaded.problem.definition
    assert list(definition.inputs) == ["x", "dim", "temperature"]
    assert definition.inputs["dim"].shape is None and definition.inputs["dim"].dtype.value == "int64"
    assert definition.inputs["temperature"].dtype.value == "float64"
    workload = loaded.problem.workloads[0]
    assert workload.inputs["dim"].type == "scalar" and workload.inputs["dim"].value == -1
    assert workload.inputs["x"].type == "custom"
    assert definition.custom_inputs_entrypoint == INPUTS_ENTRYPOINT
    assert definition.name == "14_softmax_dim_arg" and definition.axes == {}


def test_uuid_is_stable_and_follows_the_source(tmp_path: Path):
    source = (Path(__file__).parents[2] / "fixtures" / "kernelbench" / "01_linear.py").read_text()
    first, second = tmp_path / "a" / "k.py", tmp_path / "b" / "k.py"
    first.parent.mkdir()
    second.parent.mkdir()
    first.write_text(source)
    second.write_text(source.replace("256", "255"))
    uuid_a = load_kernelbench_file(first).problem.workloads[0].uuid
    assert load_kernelbench_file(first).problem.workloads[0].uuid == uuid_a
    assert load_kernelbench_file(second).problem.workloads[0].uuid != uuid_a


def _write(tmp_path: Path, name: str, body: str) -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(body))
    return path


def test_data_dependent_forward_falls_back_to_a_real_cpu_run(tmp_path: Path):
    path = _write(
        tmp_path,
        "nonzero.py",
        """
        import torch
        import torch.nn as nn

        class Model(nn.Module):
            def forward(self, x):
                return x[x > 0].sum().reshape(1)

        def get_inputs():
            return [torch.randn(64)]

        def get_init_inputs():
            return []
        """,
    )
    loaded = load_kernelbench_file(path)
    assert loaded.ok
    assert any("real CPU run" in str(w) for w in loaded.warnings)
    assert loaded.problem.definition.outputs["output"].shape == [1]


def test_large_shapes_allocate_nothing(tmp_path: Path):
    # 65536 x 65536 fp32 would be 16 GiB: the import must go through the meta device.
    path = _write(
        tmp_path,
        "huge.py",
        """
        import torch
        import torch.nn as nn
        N = 65536

        class Model(nn.Module):
            def __init__(self):
                super().__init__()
                self.linear = nn.Linear(N, N)

            def forward(self, x):
                return self.linear(x)

        def get_inputs():
            return [torch.randn(N, N)]

        def get_init_inputs():
            return []
        """,
    )
    loaded = load_kernelbench_file(path)
    assert loaded.ok and not loaded.warnings
    assert loaded.problem.definition.inputs["linear_weight"].shape == [65536, 65536]


@pytest.mark.parametrize(
    ("body", "fragment"),
    [
        ("import torch\ndef get_inputs():\n    return []\n", "defines no Model"),
        ("import torch\nclass Model(torch.nn.Module):\n    pass\ndef get_inputs():\n    return []\ndef run():\n    pass\n", "defines its own top-level 'run'"),
        ("import torch\nclass Model(torch.nn.Module):\n    def forward(self, x):\n        return x\ndef get_inputs():\n    return [[1, 2]]\n", "only tensors and Python scalars"),
        ("import torch\nclass Model(torch.nn.Module):\n    def forward(self, x):\n        return 'text'\ndef get_inputs():\n    return [torch.ones(2)]\n", "outputs must be tensors"),
        ("import torch\nclass Model(torch.nn.Module):\n    def forward(self, x):\n        raise RuntimeError('boom')\ndef get_inputs():\n    return [torch.ones(2)]\n", "RuntimeError: boom"),
        ("def broken(:\n", "does not parse"),
    ],
)
def test_bad_files_get_one_clear_error(tmp_path: Path, body: str, fragment: str):
    loaded = load_kernelbench_file(_write(tmp_path, "bad.py", body))
    assert not loaded.ok and loaded.problem is None
    assert len(loaded.errors) == 1
    message = str(loaded.errors[0])
    assert fragment in message and str(tmp_path / "bad.py") in message


def test_missing_get_init_inputs_means_no_arguments(tmp_path: Path):
    path = _write(
        tmp_path,
        "noinit.py",
        """
        import torch
        import torch.nn as nn

        class Model(nn.Module):
            def forward(self, a, b):
                return a * b, a + b

        def get_inputs():
            return [torch.randn(3, 4), torch.randn(3, 4)]
        """,
    )
    (result,) = scan(path)
    assert result.ok
    assert list(result.problem.definition.outputs) == ["output_0", "output_1"]
    inputs = generate_inputs(result.problem, result.problem.workloads[0], seed=1)
    product, total = reference_module(result.problem.definition).run(*inputs.values())
    assert torch.equal(product, inputs["a"] * inputs["b"]) and torch.equal(total, inputs["a"] + inputs["b"])
