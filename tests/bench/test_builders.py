"""Builders turn Solutions into callables: real imports and real compiles, no mocks.

C++ builds take tens of seconds each on a small CPU (torch/extension.h alone), so there are only two
full ones here: one with its own PYBIND11_MODULE, and one with a generated binding that also covers
the cache. The syntax-error source includes no header, so that compiler run fails at once; the other
failures are caught before the compiler runs.
"""

from __future__ import annotations

import re
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
import torch

from solbench.bench.builders import BuildError, Built, _generate_binding, build, build_key, target_arch
from solbench.data import Solution, load_solution

DATA = Path(__file__).resolve().parents[1] / "fixtures" / "solutions" / "builders"
HAS_CUDA = torch.cuda.is_available()


def from_folder(folder: str, languages: list[str], entry_point: str, **spec: Any) -> Solution:
    """A Solution whose sources are the files of DATA/folder (paths relative to it)."""
    root = DATA / folder
    sources = [
        {"path": path.relative_to(root).as_posix(), "content": path.read_text(encoding="utf-8")}
        for path in sorted(root.rglob("*"))
        if path.is_file() and "__pycache__" not in path.parts
    ]
    return Solution.model_validate({
        "name": folder,
        "definition": "builders_test",
        "spec": {"languages": languages, "entry_point": entry_point, **spec},
        "sources": sources,
    })


def inline(sources: dict[str, str], entry_point: str, languages: list[str] | None = None, **spec: Any) -> Solution:
    return Solution.model_validate({
        "name": "inline",
        "definition": "builders_test",
        "spec": {"languages": languages or ["pytorch"], "entry_point": entry_point, **spec},
        "sources": [{"path": path, "content": content} for path, content in sources.items()],
    })


def with_source(solution: Solution, path: str, content: str) -> Solution:
    data = solution.to_json_dict()
    data["sources"] = [{"path": s["path"], "content": content if s["path"] == path else s["content"]} for s in data["sources"]]
    return Solution.model_validate(data)


# --- Python family ----------------------------------------------------------------------------------


def test_pytorch_solution_returns_its_value(tmp_path: Path):
    solution = load_solution(DATA / "pytorch_scaled_add.json")
    built = build(solution, cache_root=tmp_path, device="cpu")
    assert isinstance(built, Built) and not built.cached
    assert built.build_dir == tmp_path / build_key(solution, "cpu") / "build"
    assert (built.build_dir / "main.py").read_text() == solution.source("main.py")
    a, b = torch.randn(16), torch.randn(16)
    torch.testing.assert_close(built.function(a, b), a + 2 * b)
    assert "main.py::run" in built.log


def test_triton_kernel_runs_under_the_interpreter(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    pytest.importorskip("triton")
    # Triton 3.9 reads TRITON_INTERPRET through triton.knobs at every @triton.jit decoration (the
    # knob is looked up in the environment on each access), so it must be set before the solution
    # module is executed by build(); whether triton itself was imported earlier does not matter.
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    solution = from_folder("triton_add", ["triton"], "kernel.py::run")
    built = build(solution, cache_root=tmp_path, device="cpu")
    from triton.runtime.interpreter import InterpretedFunction

    assert isinstance(built.function.__globals__["add_kernel"], InterpretedFunction)
    a, b = torch.randn(200), torch.randn(200)
    out = torch.full((200,), float("nan"))
    assert built.function(a, b, out) is None
    torch.testing.assert_close(out, a + b)


def test_multi_file_solution_imports_its_own_modules_in_isolation(tmp_path: Path):
    # main.py imports helpers.py and ops/scale.py (ops is a namespace package: no __init__.py).
    solution = from_folder("multi_file", ["pytorch"], "main.py::run")
    path_before = list(sys.path)
    built = build(solution, cache_root=tmp_path, device="cpu")
    x = torch.arange(4.0)
    torch.testing.assert_close(built.function(x), 3.0 * (x + 1.0) + 100.0)
    # The build folder was on sys.path only for the import; the solution's modules left sys.modules.
    assert sys.path == path_before
    assert "helpers" not in sys.modules and "ops" not in sys.modules and "ops.scale" not in sys.modules
    # A second solution with a helpers.py of its own gets its own, not the first one's.
    other = inline({"main.py": "from helpers import OFFSET\n\ndef run(x):\n    return x + OFFSET\n", "helpers.py": "OFFSET = -1.0\n"}, "main.py::run")
    torch.testing.assert_close(build(other, cache_root=tmp_path, device="cpu").function(x), x - 1.0)
    torch.testing.assert_close(built.function(x), 3.0 * (x + 1.0) + 100.0)


def test_python_syntax_error_is_a_build_error_and_is_not_cached(tmp_path: Path):
    solution = inline({"main.py": "def run(x)\n    return x\n"}, "main.py::run")
    with pytest.raises(BuildError) as caught:
        build(solution, cache_root=tmp_path, device="cpu")
    assert "SyntaxError" in str(caught.value) and "main.py" in str(caught.value)
    assert not (tmp_path / build_key(solution, "cpu") / "build").exists()


def test_exception_at_import_is_a_build_error(tmp_path: Path):
    solution = inline({"main.py": "import no_such_module_for_solbench\n\ndef run(x):\n    return x\n"}, "main.py::run")
    with pytest.raises(BuildError, match="ModuleNotFoundError.*no_such_module_for_solbench"):
        build(solution, cache_root=tmp_path, device="cpu")
    exiting = inline({"main.py": "raise SystemExit(3)\n"}, "main.py::run")
    with pytest.raises(BuildError, match="SystemExit"):
        build(exiting, cache_root=tmp_path, device="cpu")


def test_missing_or_non_callable_entry_symbol(tmp_path: Path):
    solution = load_solution(DATA / "pytorch_scaled_add.json")
    data = solution.to_json_dict()
    data["spec"]["entry_point"] = "main.py::forward"
    with pytest.raises(BuildError, match="'forward' was not found in main.py.*run"):
        build(Solution.model_validate(data), cache_root=tmp_path, device="cpu")
    data["spec"]["entry_point"] = "main.py::NOT_CALLABLE"
    with pytest.raises(BuildError, match="not callable"):
        build(Solution.model_validate(data), cache_root=tmp_path, device="cpu")


def test_python_build_is_cached_and_a_changed_byte_changes_the_key(tmp_path: Path):
    solution = load_solution(DATA / "pytorch_scaled_add.json")
    first = build(solution, cache_root=tmp_path, device="cpu")
    second = build(solution, cache_root=tmp_path, device="cpu")
    assert not first.cached and second.cached
    assert second.build_dir == first.build_dir and "reused cached build" in second.log
    a, b = torch.randn(3), torch.randn(3)
    torch.testing.assert_close(second.function(a, b), a + 2 * b)
    changed = with_source(solution, "main.py", solution.source("main.py").replace("alpha=2.0", "alpha=3.0"))
    assert build_key(changed, "cpu") != build_key(solution, "cpu")
    third = build(changed, cache_root=tmp_path, device="cpu")
    assert not third.cached
    torch.testing.assert_close(third.function(a, b), a + 3 * b)


def test_build_key_is_stable_and_covers_what_it_must():
    solution = load_solution(DATA / "pytorch_scaled_add.json")
    key = build_key(solution, "cpu")
    assert len(key) == 64 and int(key, 16) >= 0
    assert build_key(load_solution(DATA / "pytorch_scaled_add.json"), "cpu") == key
    assert build_key(Solution.model_validate(solution.to_json_dict()), "cpu") == key
    data = solution.to_json_dict()
    variants = []
    for change in ("options", "languages", "entry", "path"):
        variant = Solution.model_validate(data).to_json_dict()
        if change == "options":
            variant["spec"]["compile_options"] = {"cflags": ["-O2"]}
        elif change == "languages":
            variant["spec"]["languages"] = ["triton"]
        elif change == "entry":
            variant["spec"]["entry_point"] = "main.py::NOT_CALLABLE"
        else:
            variant["sources"].append({"path": "extra.py", "content": ""})
        variants.append(build_key(Solution.model_validate(variant), "cpu"))
    assert len({key, *variants}) == 5
    # Not part of the key: name, author, description.
    renamed = dict(data, name="other_name", author="someone else", description="changed")
    assert build_key(Solution.model_validate(renamed), "cpu") == key


def test_concurrent_builds_of_one_key_do_not_corrupt_each_other(tmp_path: Path):
    solution = inline({"main.py": "import time\ntime.sleep(0.5)\n\ndef run(x):\n    return x * 2\n"}, "main.py::run")
    results: list[Built | BaseException] = []

    def worker() -> None:
        try:
            results.append(build(solution, cache_root=tmp_path, device="cpu"))
        except BaseException as exc:  # noqa: BLE001
            results.append(exc)

    threads = [threading.Thread(target=worker) for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert all(isinstance(r, Built) for r in results), results
    assert sorted(r.cached for r in results) == [False, True, True]  # type: ignore[union-attr]
    assert all(r.function(torch.ones(2)).tolist() == [2.0, 2.0] for r in results)  # type: ignore[union-attr]


def test_unsafe_source_paths_are_refused_even_without_validation(tmp_path: Path):
    solution = load_solution(DATA / "pytorch_scaled_add.json")
    for bad in ("../escape.py", "/tmp/absolute.py"):
        sneaky = solution.model_copy(update={"sources": [*solution.sources, solution.sources[0].model_copy(update={"path": bad})]})
        with pytest.raises(BuildError, match="plain relative path"):
            build(sneaky, cache_root=tmp_path / "cache", device="cpu")
    assert not (tmp_path / "escape.py").exists()


# --- target arch ------------------------------------------------------------------------------------


def test_target_arch_is_none_on_cpu():
    assert target_arch("cpu", None) is None
    assert target_arch("cpu", {"arch": "sm_90a"}) is None
    if not HAS_CUDA:
        assert target_arch("cuda", None) is None
        assert target_arch("cuda:0", {"arch": "sm_90a"}) is None


@pytest.mark.gpu
@pytest.mark.skipif(not HAS_CUDA, reason="needs a CUDA GPU")
def test_target_arch_on_the_gpu():
    major, minor = torch.cuda.get_device_capability(0)
    assert target_arch("cuda", None) == f"{major}.{minor}"
    assert target_arch("cuda:0", {"arch": f"sm_{major}{minor}a"}) == f"{major}.{minor}a"
    assert target_arch("cuda", {"cuda_cflags": [f"-gencode=arch=compute_{major}{minor}a,code=sm_{major}{minor}a"]}) == f"{major}.{minor}a"


# --- C++ family -------------------------------------------------------------------------------------


def test_cpp_solution_with_its_own_pybind11_module(tmp_path: Path):
    solution = from_folder("cpp_pybind", ["cuda_cpp"], "add.cpp::add")
    started = time.perf_counter()
    built = build(solution, cache_root=tmp_path, device="cpu")
    print(f"C++ build with PYBIND11_MODULE: {time.perf_counter() - started:.1f} s")
    assert not built.cached
    a, b = torch.randn(5), torch.randn(5)
    torch.testing.assert_close(built.function(a, b), a + b)
    assert "built as they are" in built.log


def test_cpp_solution_without_pybind11_gets_a_generated_binding_and_is_cached(tmp_path: Path):
    solution = from_folder("cpp_generated", ["cuda_cpp"], "scaled_add.cpp::scaled_add", compile_options={"cflags": "-DSOLBENCH_TEST=1"})
    started = time.perf_counter()
    built = build(solution, cache_root=tmp_path, device="cpu")
    first_seconds = time.perf_counter() - started
    a, b = torch.randn(6), torch.randn(6)
    out = torch.empty(6)
    assert built.function(a, b, 0.5, out) is None
    torch.testing.assert_close(out, a + 0.5 * b)
    bindings = list(built.build_dir.glob("solbench_binding_*.cpp"))
    assert len(bindings) == 1
    binding = bindings[0].read_text()
    # the entry's own source is included and compiled with the binding: torch's headers are parsed once
    assert '#include "scaled_add.cpp"' in binding and 'm.def("scaled_add", &scaled_add' in binding
    assert not list(built.build_dir.glob("scaled_add.o")) and len(list(built.build_dir.glob("*.o"))) == 1
    libraries = {path: path.stat().st_mtime_ns for path in built.build_dir.glob("*.so")}
    assert len(libraries) == 1

    started = time.perf_counter()
    again = build(solution, cache_root=tmp_path, device="cpu")
    second_seconds = time.perf_counter() - started
    print(f"C++ build with generated binding: {first_seconds:.1f} s; cached: {second_seconds:.3f} s")
    assert again.cached and again.build_dir == built.build_dir
    assert second_seconds < 2.0 < first_seconds
    assert {path: path.stat().st_mtime_ns for path in again.build_dir.glob("*.so")} == libraries  # not recompiled
    out2 = torch.empty(6)
    again.function(a, b, 0.5, out2)
    torch.testing.assert_close(out2, out)

    # Another process (a fresh worker) loads the cached library without compiling.
    script = (
        "import sys, json, torch\n"
        "from pathlib import Path\n"
        "from solbench.bench.builders import build\n"
        "from solbench.data import Solution\n"
        "solution = Solution.model_validate(json.loads(sys.stdin.read()))\n"
        f"built = build(solution, cache_root=Path({str(tmp_path)!r}), device='cpu')\n"
        "out = torch.zeros(2)\n"
        "built.function(torch.ones(2), torch.ones(2), 3.0, out)\n"
        "print(built.cached, out.tolist())\n"
    )
    started = time.perf_counter()
    result = subprocess.run([sys.executable, "-c", script], input=solution.to_json(), capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split("\n")[-2] == "True [4.0, 4.0]"
    assert {path: path.stat().st_mtime_ns for path in again.build_dir.glob("*.so")} == libraries
    print(f"cached load in a fresh process (torch import included): {time.perf_counter() - started:.1f} s")


def test_cpp_syntax_error_carries_the_compiler_message(tmp_path: Path):
    solution = from_folder("cpp_syntax_error", ["cuda_cpp"], "broken.cpp::add")
    started = time.perf_counter()
    with pytest.raises(BuildError) as caught:
        build(solution, cache_root=tmp_path, device="cpu")
    print(f"failing C++ build: {time.perf_counter() - started:.1f} s")
    message = str(caught.value)
    # GCC says "expected ',' or ';' before 'return'" (typographic quotes are made plain).
    assert re.search(r"broken\.cpp:4:3: error: expected .*';' before 'return'", message), message
    assert message.startswith("build failed:\n") and "ninja: build stopped" in message
    assert len(message) <= 20_000
    assert not (tmp_path / build_key(solution, "cpu") / "build").exists()  # failed builds are not cached


def test_cpp_entry_symbol_not_found_without_pybind11(tmp_path: Path):
    source = "#include <torch/extension.h>\n\ntorch::Tensor add(torch::Tensor a) { return a; }\n\nvoid caller() { forward(1); }\n"
    solution = inline({"k.cpp": source}, "k.cpp::forward", languages=["cuda_cpp"])
    with pytest.raises(BuildError, match="entry symbol 'forward' was not found"):
        build(solution, cache_root=tmp_path, device="cpu")
    kernel_only = inline({"k.cu": "__global__ void forward(float* x) {}\n"}, "k.cu::forward", languages=["cuda_cpp"])
    if torch.version.cuda is None:
        with pytest.raises(BuildError, match="CUDA is not available"):
            build(kernel_only, cache_root=tmp_path, device="cpu")
    else:
        with pytest.raises(BuildError, match="not found.*CUDA kernel"):
            build(kernel_only, cache_root=tmp_path, device="cuda")


def test_a_generated_binding_includes_a_host_source_and_declares_what_it_cannot_include():
    """No compiler runs here: the binding's text. A C++ source is included (torch's headers parsed once; a
    definition's default arguments may not be declared a second time), a CUDA source is declared and linked."""
    definition = "namespace ops {\nvoid scale(torch::Tensor x, double by = 2.0) { x.mul_(by); }\n}\n"
    host = inline({"main.cpp": "#include <torch/extension.h>\n" + definition}, "main.cpp::scale", languages=["cuda_cpp"])
    binding, included = _generate_binding(host, {"main.cpp": definition}, {"main.cpp"})
    assert included == "main.cpp" and '#include "main.cpp"' in binding and "= 2.0" not in binding
    assert 'm.def("scale", &ops::scale' in binding
    device = inline({"k.cu": definition}, "k.cu::scale", languages=["cuda_cpp"])
    binding, included = _generate_binding(device, {"k.cu": definition}, set())
    assert included is None and '#include "k.cu"' not in binding
    assert "namespace ops {\nvoid scale(torch::Tensor x, double by = 2.0);\n}" in binding and 'm.def("scale", &ops::scale' in binding


@pytest.mark.skipif(torch.version.cuda is not None, reason="this torch has CUDA")
def test_cuda_source_on_a_cpu_only_torch_is_a_build_error(tmp_path: Path):
    solution = from_folder("cuda_add", ["cuda_cpp"], "add.cu::add")
    with pytest.raises(BuildError, match="CUDA is not available.*add.cu"):
        build(solution, cache_root=tmp_path, device="cpu")
    assert not (tmp_path / build_key(solution, "cpu") / "build").exists()


@pytest.mark.gpu
@pytest.mark.skipif(not HAS_CUDA, reason="needs a CUDA GPU")
def test_cuda_solution_builds_and_runs_on_the_gpu(tmp_path: Path):
    solution = from_folder("cuda_add", ["cuda_cpp"], "add.cu::add")
    started = time.perf_counter()
    built = build(solution, cache_root=tmp_path, device="cuda")
    print(f"CUDA build: {time.perf_counter() - started:.1f} s")
    major, minor = torch.cuda.get_device_capability(0)
    assert f"arch={major}.{minor}" in built.log
    a, b = torch.randn(1000, device="cuda"), torch.randn(1000, device="cuda")
    torch.testing.assert_close(built.function(a, b), a + b)
    assert build(solution, cache_root=tmp_path, device="cuda").cached


@pytest.mark.gpu
@pytest.mark.skipif(not HAS_CUDA or torch.cuda.get_device_capability(0) != (9, 0), reason="needs a Hopper (sm_90) GPU")
def test_cuda_solution_built_for_sm_90a(tmp_path: Path):
    solution = from_folder("cuda_add", ["cuda_cpp"], "add.cu::add", compile_options={"arch": "sm_90a"})
    assert target_arch("cuda", solution.spec.compile_options) == "9.0a"
    assert build_key(solution, "cuda") != build_key(from_folder("cuda_add", ["cuda_cpp"], "add.cu::add"), "cuda")
    built = build(solution, cache_root=tmp_path, device="cuda")
    assert "arch=9.0a" in built.log
    ninja = (built.build_dir / "build.ninja").read_text()
    assert "compute_90a" in ninja and "sm_90a" in ninja
    a, b = torch.randn(100, device="cuda"), torch.randn(100, device="cuda")
    torch.testing.assert_close(built.function(a, b), a + b)
