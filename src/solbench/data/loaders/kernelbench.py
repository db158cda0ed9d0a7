"""Import a KernelBench-style Python file as a Definition and one Workload.

The file holds `class Model(nn.Module)`, `get_inputs()` and `get_init_inputs()`. The import keeps
the file's source as the reference and appends an adapter:
- `run(<forward args>, <weights>)` calls the model functionally with the weights it is given, so
  that a solution receives every tensor the output depends on as a named input;
- `solbench_make_inputs(axes, device)` builds the model and its inputs exactly as the file does
  (Model(*get_init_inputs()) then get_inputs(), on the CPU, from the RNG the harness seeded).
Weights are parameters, buffers and plain tensor attributes of every submodule.
Shapes come from running the file on the meta device (no memory, any size); a file that cannot run
there is run for real on the CPU, and the issue says why.
"""

from __future__ import annotations

import hashlib
import inspect
import keyword
import re
import types
import uuid
from pathlib import Path
from typing import Any

from solbench.data.definition import Definition
from solbench.data.dtypes import DType
from solbench.data.errors import Issue
from solbench.data.files import parse_model
from solbench.data.loaders.loaded import Loaded
from solbench.data.problem import Problem, check_problem
from solbench.data.workload import Workload

INPUTS_ENTRYPOINT = "solbench_make_inputs"
UUID_NAMESPACE = uuid.UUID("5f0b6a8e-3c1d-4b7a-9a51-0c9d2f6e8b11")
DEFAULT_TOLERANCE = {"max_atol": 1e-2, "max_rtol": 1e-2, "required_matched_ratio": 1.0}

ADAPTER = '''

# ---- solbench adapter: the KernelBench-style module above as run(inputs..., weights...) ----
import torch as _solbench_torch

_SOLBENCH_ARGS = {args!r}
_SOLBENCH_WEIGHTS = {weights!r}
_SOLBENCH_MODEL = []


def _solbench_model():
    """The module built once on the meta device: it holds the structure, run() supplies the tensors."""
    if not _SOLBENCH_MODEL:
        with _solbench_torch.device("meta"):
            _SOLBENCH_MODEL.append(Model(*get_init_inputs()))
    return _SOLBENCH_MODEL[0]


try:  # build it now, outside any tensor mode a caller may later run the reference under
    _solbench_model()
except Exception:  # noqa: BLE001 - a module that cannot be built on meta is built on first use
    pass


def _solbench_tensors(module):
    """Parameters, buffers and plain tensor attributes of every submodule, by dotted path."""
    found = dict(module.named_parameters())
    found.update(module.named_buffers())
    for prefix, sub in module.named_modules():
        for attribute, value in vars(sub).items():
            if isinstance(value, _solbench_torch.Tensor):
                found[f"{{prefix}}.{{attribute}}" if prefix else attribute] = value
    return found


def run({signature}):
    arguments = locals()
    weights = {{path: arguments[name] for name, path in _SOLBENCH_WEIGHTS.items()}}
    output = _solbench_torch.func.functional_call(
        _solbench_model(), weights, tuple(arguments[name] for name in _SOLBENCH_ARGS)
    )
    return tuple(output) if isinstance(output, (tuple, list)) else output


def {entrypoint}(axes, device):
    model = Model(*get_init_inputs())
    values = get_inputs()
    tensors = _solbench_tensors(model)
    made = {{name: value for name, value in zip(_SOLBENCH_ARGS, values) if isinstance(value, _solbench_torch.Tensor)}}
    made.update({{name: tensors[path].detach() for name, path in _SOLBENCH_WEIGHTS.items()}})
    return {{name: tensor.to(device) for name, tensor in made.items()}}
'''


def looks_like_kernelbench(source: str) -> bool:
    return bool(re.search(r"^class\s+Model\s*\(", source, re.M)) and "def get_inputs" in source


def load_kernelbench_file(path: Path) -> Loaded:
    loaded = Loaded(path, "kernelbench", name=_problem_name(path))
    try:
        source = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        loaded.issues.append(Issue(f"cannot read: {exc}", path))
        return loaded
    try:
        data, notes = describe_kernelbench(source, loaded.name, path)
    except _ImportFailure as exc:
        loaded.issues.append(Issue(str(exc), path, exc.line, exc.field))
        return loaded
    loaded.issues += [Issue(note, path, severity="warning") for note in notes]
    definition, issues = parse_model(Definition, data["definition"], path=path, prefix="definition")
    workload, workload_issues = parse_model(Workload, data["workload"], path=path, prefix="workload")
    loaded.issues += issues + workload_issues
    if definition is None or workload is None:
        return loaded
    problem = Problem(definition, [workload], path.parent, path, "kernelbench")
    loaded.issues += [i.located(path=path) for i in check_problem(problem)]
    if loaded.ok:
        loaded.problem = problem
    return loaded


class _ImportFailure(Exception):
    def __init__(self, message: str, line: int | None = None, field: str | None = None):
        super().__init__(message)
        self.line, self.field = line, field


def describe_kernelbench(source: str, name: str, path: Path) -> tuple[dict[str, Any], list[str]]:
    """The definition and workload as JSON objects, plus notes on anything done differently."""
    import torch

    module = _execute(source, name, path)
    for required in ("Model", "get_inputs"):
        if not hasattr(module, required):
            raise _ImportFailure(f"defines no {required}; a KernelBench-style file needs class Model, get_inputs() and get_init_inputs()")
    for reserved in ("run", INPUTS_ENTRYPOINT):
        if reserved in vars(module):
            raise _ImportFailure(f"defines its own top-level {reserved!r}, which the imported reference needs; rename it")
    if not hasattr(module, "get_init_inputs"):
        module.get_init_inputs = lambda: []
        source += "\n\ndef get_init_inputs():\n    return []\n"
    notes: list[str] = []
    try:
        model, values, outputs = _trace_shapes(module, torch.device("meta"))
    except _ImportFailure:
        raise
    except Exception as exc:  # noqa: BLE001 - any failure on meta means: try the real thing
        notes.append(f"shapes taken from a real CPU run; the meta device failed: {type(exc).__name__}: {_first_line(exc)}")
        try:
            with torch.random.fork_rng(devices=[]):
                torch.manual_seed(0)
                model, values, outputs = _trace_shapes(module, torch.device("cpu"))
        except _ImportFailure:
            raise
        except Exception as real_exc:  # noqa: BLE001 - the user's code may raise anything
            raise _ImportFailure(
                f"running Model(*get_init_inputs())(*get_inputs()) failed: {type(real_exc).__name__}: {_first_line(real_exc)}",
                _line_in(real_exc, path),
            ) from None

    arg_names = _argument_names(model, values)
    inputs: dict[str, Any] = {}
    workload_inputs: dict[str, Any] = {}
    for index, (arg, value) in enumerate(zip(arg_names, values)):
        if isinstance(value, torch.Tensor):
            inputs[arg] = _tensor_spec(value, f"forward argument {arg!r}")
            workload_inputs[arg] = {"type": "custom"}
        elif isinstance(value, (bool, int, float)):
            dtype = "bool" if isinstance(value, bool) else "int64" if isinstance(value, int) else "float64"
            inputs[arg] = {"shape": None, "dtype": dtype}
            workload_inputs[arg] = {"type": "scalar", "value": value}
        else:
            raise _ImportFailure(f"get_inputs()[{index}] is a {type(value).__name__}; only tensors and Python scalars can be inputs")
    weights: dict[str, str] = {}
    for dotted, tensor in _module_tensors(model).items():
        input_name = _unique_identifier(dotted, inputs.keys())
        weights[input_name] = dotted
        inputs[input_name] = _tensor_spec(tensor, f"weight {dotted!r}")
        workload_inputs[input_name] = {"type": "custom"}

    outputs_spec: dict[str, Any] = {}
    results = outputs if isinstance(outputs, (tuple, list)) else [outputs]
    for index, result in enumerate(results):
        if not isinstance(result, torch.Tensor):
            raise _ImportFailure(f"forward returns a {type(result).__name__} at position {index}; outputs must be tensors")
        output_name = "output" if not isinstance(outputs, (tuple, list)) else f"output_{index}"
        outputs_spec[_unique_identifier(output_name, inputs.keys())] = _tensor_spec(result, f"output {index}")

    adapter = ADAPTER.format(
        args=arg_names,
        weights=weights,
        signature=", ".join(list(inputs)),
        entrypoint=INPUTS_ENTRYPOINT,
    )
    digest = hashlib.sha256(source.encode()).hexdigest()
    definition = {
        "name": name,
        "op_type": "kernelbench",
        "description": _description(module, path),
        "axes": {},
        "inputs": inputs,
        "outputs": outputs_spec,
        "reference": source.rstrip() + "\n" + adapter,
        "custom_inputs_entrypoint": INPUTS_ENTRYPOINT,
    }
    workload = {
        "uuid": str(uuid.uuid5(UUID_NAMESPACE, f"{name}:{digest}")),
        "axes": {},
        "inputs": workload_inputs,
        "tolerance": DEFAULT_TOLERANCE,
    }
    return {"definition": definition, "workload": workload}, notes


def _execute(source: str, name: str, path: Path) -> types.ModuleType:
    module = types.ModuleType("solbench_kernelbench_" + re.sub(r"\W", "_", name))
    module.__file__ = str(path)
    try:
        code = compile(source, str(path), "exec")
    except SyntaxError as exc:
        raise _ImportFailure(f"does not parse: {exc.msg}", exc.lineno) from None
    try:
        exec(code, module.__dict__)  # the problem file is the user's own, trusted input
    except Exception as exc:  # noqa: BLE001 - the user's code may raise anything
        raise _ImportFailure(f"importing it failed: {type(exc).__name__}: {_first_line(exc)}", _line_in(exc, path)) from None
    return module


def _line_in(exc: BaseException, path: Path) -> int | None:
    """The line of the user's file where the exception was raised (its innermost frame there)."""
    line = None
    trace = exc.__traceback__
    while trace is not None:
        if trace.tb_frame.f_code.co_filename == str(path):
            line = trace.tb_lineno
        trace = trace.tb_next
    return line


def _trace_shapes(module: types.ModuleType, device: Any) -> tuple[Any, list[Any], Any]:
    import torch

    with torch.device(device):
        init = module.get_init_inputs()
        if not isinstance(init, (list, tuple)):
            raise _ImportFailure(f"get_init_inputs() must return a list or tuple, got {type(init).__name__}")
        model = module.Model(*init)
        values = module.get_inputs()
        if not isinstance(values, (list, tuple)):
            raise _ImportFailure(f"get_inputs() must return a list or tuple, got {type(values).__name__}")
        values = list(values)
        with torch.no_grad():
            outputs = model(*values)
    return model, values, outputs


def _argument_names(model: Any, values: list[Any]) -> list[str]:
    try:
        parameters = list(inspect.signature(model.forward).parameters.values())
    except (TypeError, ValueError):
        parameters = []
    names: list[str] = []
    for parameter in parameters:
        if parameter.kind == inspect.Parameter.VAR_POSITIONAL:
            break
        if parameter.kind not in (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD):
            break
        names.append(parameter.name)
    names = names[: len(values)]
    while len(names) < len(values):
        names.append(f"input_{len(names)}")
    taken: set[str] = set()
    return [_unique_identifier(n, taken, add=True) for n in names]


def _module_tensors(model: Any) -> dict[str, Any]:
    import torch

    found: dict[str, Any] = dict(model.named_parameters())
    found.update(model.named_buffers())
    for prefix, sub in model.named_modules():
        for attribute, value in vars(sub).items():
            if isinstance(value, torch.Tensor):
                found[f"{prefix}.{attribute}" if prefix else attribute] = value
    return found


def _tensor_spec(tensor: Any, what: str) -> dict[str, Any]:
    try:
        dtype = DType.from_torch(tensor.dtype)
    except ValueError as exc:
        raise _ImportFailure(f"{what}: {exc}") from None
    shape = list(tensor.shape)
    if dtype.is_packed and shape:
        shape[-1] *= 2
    return {"shape": shape, "dtype": dtype.value}


def _unique_identifier(name: str, taken: Any, add: bool = False) -> str:
    base = re.sub(r"\W", "_", name).strip("_") or "tensor"
    if base[0].isdigit() or keyword.iskeyword(base):
        base = f"t_{base}"
    candidate, suffix = base, 1
    while candidate in taken or candidate.startswith("_solbench"):
        candidate, suffix = f"{base}_{suffix}", suffix + 1
    if add:
        taken.add(candidate)
    return candidate


def _problem_name(path: Path) -> str:
    return re.sub(r"[^A-Za-z0-9_.\-]", "_", path.stem) or "kernelbench"


def _description(module: types.ModuleType, path: Path) -> str:
    doc = inspect.getdoc(module.Model) or module.__doc__ or ""
    first_paragraph = " ".join(doc.strip().split("\n\n")[0].split())
    return first_paragraph or f"KernelBench-style module imported from {path.name}"


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else "(no message)"
