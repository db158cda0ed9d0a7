"""Solution skeletons: a starting point per language that has the problem's exact signature.

The Python skeletons (pytorch, triton) keep the problem's reference in a file of their own
(`reference_math.py`) and call it, so that they pass `solbench eval` as written; the triton one moves
each result into its output with a real Triton copy kernel, the place where the user's kernel goes.
A cuda_cpp skeleton cannot call Python math: it compiles and launches a placeholder CUDA kernel that
zero-fills the outputs, so it evaluates as FAILED until the kernel is written.
"""

from __future__ import annotations

from dataclasses import dataclass

from solbench.data.definition import ConstAxis, Definition, TensorSpec
from solbench.data.dtypes import DType
from solbench.data.problem import Problem
from solbench.data.solution import Solution

LANGUAGES = ("pytorch", "triton", "cuda_cpp")
STYLES = ("auto", "dps", "returning")
REFERENCE_MODULE = "reference_math"

_CPP_ELEMENT = {
    DType.float64: "double", DType.float32: "float", DType.float16: "at::Half", DType.bfloat16: "at::BFloat16",
    DType.float8_e4m3fn: "at::Float8_e4m3fn", DType.float8_e5m2: "at::Float8_e5m2", DType.float4_e2m1: "uint8_t",
    DType.float4_e2m1fn_x2: "uint8_t", DType.int64: "int64_t", DType.int32: "int32_t", DType.int16: "int16_t",
    DType.int8: "int8_t", DType.uint8: "uint8_t", DType.bool: "bool",
}


class SkeletonError(ValueError):
    """A skeleton that cannot be written for this problem (the message says why and what to do)."""


@dataclass(frozen=True)
class Skeleton:
    solution: Solution
    notes: list[str]  # what the user should know (how to run it, what it does as written)


def default_style(definition: Definition) -> str:
    """Destination-passing (the format's default) unless an output is a Python scalar, which cannot be written in place."""
    return "returning" if any(spec.shape is None for spec in definition.outputs.values()) else "dps"


def skeleton(problem: Problem, language: str, style: str = "auto") -> Skeleton:
    """The skeleton solution of `problem` in `language` ("pytorch", "triton" or "cuda_cpp")."""
    if language not in LANGUAGES:
        raise SkeletonError(f"unknown language {language!r}; expected one of {', '.join(LANGUAGES)}")
    if style not in STYLES:
        raise SkeletonError(f"unknown style {style!r}; expected one of {', '.join(STYLES)}")
    definition = problem.definition
    dps = (default_style(definition) if style == "auto" else style) == "dps"
    if dps and any(spec.shape is None for spec in definition.outputs.values()):
        scalars = ", ".join(name for name, spec in definition.outputs.items() if spec.shape is None)
        raise SkeletonError(f"output(s) {scalars} are Python scalars and cannot be preallocated; use --style returning")
    if language == "cuda_cpp":
        entry, sources, notes = "kernel.cu", {"kernel.cu": _cuda_source(definition, dps)}, _CUDA_NOTES
    else:
        main = _pytorch_source(definition, dps) if language == "pytorch" else _triton_source(definition, dps)
        entry, sources = "main.py", {"main.py": main, f"{REFERENCE_MODULE}.py": definition.reference}
        notes = _TRITON_NOTES if language == "triton" else []
    languages = ["triton", "pytorch"] if language == "triton" else [language]
    solution = Solution.model_validate({
        "name": f"{definition.name}_{language}",
        "definition": definition.name,
        "author": "",
        "description": f"{language} skeleton for {definition.name} written by `solbench new` ({'destination-passing' if dps else 'returning'} style)",
        "spec": {"languages": languages, "target_hardware": [], "entry_point": f"{entry}::run", "destination_passing_style": dps},
        "sources": [{"path": path, "content": content} for path, content in sources.items()],
    })
    return Skeleton(solution, list(notes))


_TRITON_NOTES: list[str] = []  # on a CPU the evaluator runs Triton in its interpreter (TRITON_INTERPRET=1) by itself
_CUDA_NOTES = ["as written the kernel only zero-fills the outputs: `solbench eval` reports FAILED until you write it",
               "CUDA sources are built by torch.utils.cpp_extension on a machine with a GPU and a CUDA build of PyTorch"]


# --- shared pieces ------------------------------------------------------------------------------------


def _shape_text(spec: TensorSpec) -> str:
    return "scalar" if spec.shape is None else "[" + ", ".join(str(d) for d in spec.shape) + "]"


def _signature_lines(definition: Definition, dps: bool, comment: str) -> list[str]:
    lines = [f"{comment} Inputs:"]
    lines += [f"{comment}   {name}: {_shape_text(spec)} {spec.dtype.value}" for name, spec in definition.inputs.items()]
    lines.append(f"{comment} Outputs ({'preallocated and passed after the inputs: write into them' if dps else 'returned, in this order'}):")
    lines += [f"{comment}   {name}: {_shape_text(spec)} {spec.dtype.value}" for name, spec in definition.outputs.items()]
    axes = [f"{name} = {axis.value}" for name, axis in definition.axes.items() if isinstance(axis, ConstAxis)]
    if axes:
        lines.append(f"{comment} Constant axes: {', '.join(axes)}")
    return lines


def _value_names(definition: Definition) -> dict[str, str]:
    """A local name for each output's computed value that clashes with no parameter."""
    taken = set(definition.inputs) | set(definition.outputs)
    names = {}
    for output in definition.outputs:
        candidate = f"{output}_value"
        while candidate in taken:
            candidate += "_"
        taken.add(candidate)
        names[output] = candidate
    return names


def _torch_dtype(dtype: DType) -> str:
    return str(dtype.torch_dtype())  # "torch.bfloat16"


# --- pytorch ------------------------------------------------------------------------------------------


def _python_header(definition: Definition, dps: bool, language: str) -> list[str]:
    return [
        f'"""{language} solution of {definition.name}, started by `solbench new`.',
        "",
        "As written, run() calls the problem's reference (reference_math.py), so `solbench eval` passes;",
        "replace that call with your implementation and delete reference_math.py when nothing needs it.",
        '"""',
        "",
        *_signature_lines(definition, dps, "#"),
        "",
    ]


def _unpack(definition: Definition, values: dict[str, str]) -> str:
    """`a_value, b_value = reference_run(...)` (a one-element tuple for a single output)."""
    call = f"reference_run({', '.join(definition.inputs)})"
    names = [values[output] for output in definition.outputs]
    return f"{names[0]} = {call}" if len(names) == 1 else f"{', '.join(names)} = {call}"


def _pytorch_source(definition: Definition, dps: bool) -> str:
    inputs, outputs = list(definition.inputs), list(definition.outputs)
    values = _value_names(definition)
    parameters = ", ".join(inputs + (outputs if dps else []))
    lines = _python_header(definition, dps, "PyTorch")
    lines += ["import torch", "", f"from {REFERENCE_MODULE} import run as reference_run", "", "", f"def run({parameters}):"]
    lines.append("    # TODO: your implementation goes here; as written it computes the reference math.")
    if not dps:
        lines.append(f"    return reference_run({', '.join(inputs)})")
    else:
        lines.append(f"    {_unpack(definition, values)}")
        lines += [f"    {output}.copy_({values[output]})" for output in outputs]
    return "\n".join(lines) + "\n"


# --- triton -------------------------------------------------------------------------------------------

_TRITON_KERNEL = '''
BLOCK = 1024


@triton.jit
def copy_kernel(source_ptr, destination_ptr, n, BLOCK: tl.constexpr):
    """destination[i] = source[i] over n contiguous elements: the kernel to turn into yours."""
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(destination_ptr + offsets, tl.load(source_ptr + offsets, mask=mask), mask=mask)


def launch_copy(source: torch.Tensor, destination: torch.Tensor) -> None:
    """Writes source into the contiguous tensor destination with copy_kernel."""
    source = source.contiguous()
    n = destination.numel()
    if n:
        copy_kernel[(triton.cdiv(n, BLOCK),)](source, destination, n, BLOCK=BLOCK)
'''


def _triton_source(definition: Definition, dps: bool) -> str:
    inputs, outputs = list(definition.inputs), list(definition.outputs)
    values = _value_names(definition)
    parameters = ", ".join(inputs + (outputs if dps else []))
    lines = _python_header(definition, dps, "Triton")
    lines += ["import torch", "import triton", "import triton.language as tl", "", f"from {REFERENCE_MODULE} import run as reference_run", ""]
    lines += _TRITON_KERNEL.splitlines()
    lines += ["", "", f"def run({parameters}):"]
    lines.append("    # TODO: compute the outputs in your kernel; as written the reference math computes them and")
    lines.append("    # copy_kernel writes them into the outputs.")
    lines.append(f"    {_unpack(definition, values)}")
    for output in outputs:
        spec = definition.outputs[output]
        if spec.shape is None:
            continue  # a Python scalar: returned as it is
        if not dps:
            lines.append(f"    {output} = torch.empty({values[output]}.shape, dtype={_torch_dtype(spec.dtype)}, device={values[output]}.device)")
        lines.append(f"    launch_copy({values[output]}, {output})")
    if not dps:
        returned = [output if definition.outputs[output].shape is not None else values[output] for output in outputs]
        lines.append(f"    return {', '.join(returned)}")
    return "\n".join(lines) + "\n"


# --- cuda_cpp -----------------------------------------------------------------------------------------


def _cpp_parameter(name: str, spec: TensorSpec) -> str:
    if spec.shape is not None:
        return f"torch::Tensor {name}"
    if spec.dtype == DType.bool:
        return f"bool {name}"
    return f"double {name}" if spec.dtype.is_floating else f"int64_t {name}"


def _size_expression(definition: Definition, axis: int | str) -> str:
    """C++ for one output dimension: a number, or the size of an input dimension with that axis."""
    if isinstance(axis, int) or str(axis).isdigit():
        return str(axis)
    declared = definition.axes.get(str(axis))
    if isinstance(declared, ConstAxis):
        return str(declared.value)
    for name, spec in definition.inputs.items():
        if spec.shape is not None:
            for position, dim in enumerate(spec.shape):
                if dim == axis:
                    return f"{name}.size({position})"
    raise SkeletonError(f"axis {axis!r} of an output is no dimension of any input, so a returning C++ skeleton cannot size it; use --style dps")


def _cuda_source(definition: Definition, dps: bool) -> str:
    inputs, outputs = definition.inputs, definition.outputs
    tensors = [name for name, spec in inputs.items() if spec.shape is not None]
    parameters = [_cpp_parameter(name, spec) for name, spec in inputs.items()]
    if dps:
        parameters += [f"torch::Tensor {name}" for name in outputs]
    returns = "void" if dps else "torch::Tensor" if len(outputs) == 1 else f"std::tuple<{', '.join(['torch::Tensor'] * len(outputs))}>"
    lines = [
        f"// CUDA solution of {definition.name}, started by `solbench new`.",
        "//",
        "// As written the kernel only zero-fills the outputs, so `solbench eval` reports FAILED until you",
        "// write it: replace zero_fill_kernel with your kernel and its launches in run().",
        "//",
        *_signature_lines(definition, dps, "//"),
        "",
        "#include <torch/extension.h>",
        "#include <c10/cuda/CUDAException.h>",
        "#include <c10/cuda/CUDAStream.h>",
        "#include <cuda_runtime.h>",
        "",
        "// TODO: your kernel goes here.",
        "template <typename T>",
        "__global__ void zero_fill_kernel(T* out, int64_t n) {",
        "  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {",
        "    out[i] = T(0);",
        "  }",
        "}",
        "",
        "template <typename T>",
        "static void launch_zero_fill(torch::Tensor out, cudaStream_t stream) {",
        "  const int64_t n = out.numel();",
        "  if (n == 0) return;",
        "  const int threads = 256;",
        "  const int blocks = (int)std::min<int64_t>((n + threads - 1) / threads, 65535);",
        "  zero_fill_kernel<T><<<blocks, threads, 0, stream>>>(reinterpret_cast<T*>(out.data_ptr()), n);",
        "  C10_CUDA_KERNEL_LAUNCH_CHECK();",
        "}",
        "",
        f"{returns} run({', '.join(parameters)}) {{",
    ]
    for name in tensors + (list(outputs) if dps else []):
        lines.append(f'  TORCH_CHECK({name}.is_cuda() && {name}.is_contiguous(), "{name} must be a contiguous CUDA tensor");')
    lines.append("  cudaStream_t stream = c10::cuda::getCurrentCUDAStream();  // launch on the caller's stream")
    if not dps:
        device = tensors[0] if tensors else None
        options = f"torch::TensorOptions().dtype({{dtype}}).device({device}.device())" if device else "torch::TensorOptions().dtype({dtype}).device(torch::kCUDA)"
        for name, spec in outputs.items():
            sizes = ", ".join(_size_expression(definition, axis) for axis in spec.shape or [])
            dtype = f"torch::{_scalar_type(spec.dtype)}"
            lines.append(f"  torch::Tensor {name} = torch::empty({{{sizes}}}, {options.format(dtype=dtype)});")
    for name, spec in outputs.items():
        lines.append(f"  launch_zero_fill<{_CPP_ELEMENT[spec.dtype]}>({name}, stream);")
    if not dps:
        names = list(outputs)
        lines.append(f"  return {names[0]};" if len(names) == 1 else f"  return {{{', '.join(names)}}};")
    lines.append("}")
    return "\n".join(lines) + "\n"


def _scalar_type(dtype: DType) -> str:
    """The c10::ScalarType spelling (kBFloat16 ...) of a dtype."""
    names = {
        DType.float64: "kFloat64", DType.float32: "kFloat32", DType.float16: "kFloat16", DType.bfloat16: "kBFloat16",
        DType.float8_e4m3fn: "kFloat8_e4m3fn", DType.float8_e5m2: "kFloat8_e5m2", DType.float4_e2m1: "kFloat4_e2m1fn_x2",
        DType.float4_e2m1fn_x2: "kFloat4_e2m1fn_x2", DType.int64: "kInt64", DType.int32: "kInt32", DType.int16: "kInt16",
        DType.int8: "kInt8", DType.uint8: "kUInt8", DType.bool: "kBool",
    }
    return names[dtype]
