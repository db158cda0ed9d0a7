"""Solution: languages, entry point, sources."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from pydantic import ValidationError

from solbench.data.errors import SpecError
from solbench.data.files import parse_model
from solbench.data.solution import Language, Solution, SolutionSpec

PY_SOURCE = {"path": "main.py", "content": "def run(x):\n    return x\n"}
CU_SOURCE = {"path": "kernel.cu", "content": "extern \"C\" void run() {}\n"}


def solution(spec: dict[str, Any] | None = None, sources: list[dict[str, Any]] | None = None, **extra: Any) -> dict[str, Any]:
    data: dict[str, Any] = {
        "name": "my_solution",
        "definition": "spec_test",
        "author": "tester",
        "spec": {"languages": ["pytorch"], "target_hardware": ["LOCAL"], "entry_point": "main.py::run"},
        "sources": [copy.deepcopy(PY_SOURCE)],
    }
    if spec is not None:
        data["spec"].update(spec)
    if sources is not None:
        data["sources"] = sources
    data.update(extra)
    return data


def valid(data: dict[str, Any]) -> Solution:
    model, issues = parse_model(Solution, data)
    assert issues == [], [str(i) for i in issues]
    return model


def errors_of(data: dict[str, Any]) -> list[tuple[str | None, str]]:
    model, issues = parse_model(Solution, data)
    assert model is None
    return [(i.field, i.message) for i in issues]


def test_a_python_solution():
    model = valid(solution())
    assert model.spec.language_list == [Language.pytorch]
    assert model.spec.family == "python"
    assert model.spec.entry_file == "main.py"
    assert model.spec.entry_symbol == "run"
    assert model.spec.target_hardware == ["LOCAL"]
    assert model.spec.destination_passing_style is True  # the default
    assert model.spec.dependencies == [] and model.spec.compile_options is None
    assert model.description == ""
    assert model.source("main.py") == PY_SOURCE["content"]
    with pytest.raises(KeyError):
        model.source("other.py")


def test_a_cpp_solution_with_several_languages_of_one_family():
    data = solution(
        spec={
            "languages": ["cuda_cpp", "cutlass", "cublas"],
            "entry_point": "src/kernel.cu::launch",
            "dependencies": ["cutlass>=3.5"],
            "destination_passing_style": False,
            "compile_options": {"cflags": ["-O3"], "cuda_cflags": ["--use_fast_math"]},
        },
        sources=[{"path": "src/kernel.cu", "content": "// kernel"}, {"path": "src/kernel.h", "content": "// header"}],
    )
    model = valid(data)
    assert model.spec.family == "cpp"
    assert model.spec.language_list == [Language.cuda_cpp, Language.cutlass, Language.cublas]
    assert model.spec.entry_file == "src/kernel.cu" and model.spec.entry_symbol == "launch"
    assert model.spec.destination_passing_style is False
    assert model.spec.compile_options == {"cflags": ["-O3"], "cuda_cflags": ["--use_fast_math"]}
    assert model.to_json_dict() == data


@pytest.mark.parametrize("extension", [".cu", ".cpp", ".cc", ".cxx"])
def test_cpp_entry_extensions(extension):
    name = f"kernel{extension}"
    valid(solution(spec={"languages": ["cuda_cpp"], "entry_point": f"{name}::run"}, sources=[{"path": name, "content": ""}]))


def test_languages_as_a_single_string():
    data = solution(spec={"languages": "triton"})
    model = valid(data)
    assert model.spec.languages == Language.triton
    assert model.spec.language_list == [Language.triton]
    assert model.spec.family == "python"
    assert model.to_json_dict() == data  # written back as a string, as read
    assert model.to_json_dict()["spec"]["languages"] == "triton"


@pytest.mark.parametrize("language", list(Language), ids=lambda l: l.value)
def test_families(language):
    python = {"pytorch", "triton", "cute_dsl", "cutile", "cudnn_frontend"}
    assert language.family == ("python" if language.value in python else "cpp")


@pytest.mark.parametrize("languages", [["pytorch", "cuda_cpp"], ["triton", "cutlass", "cute_dsl"], ["cudnn_frontend", "cudnn"]])
def test_mixed_families_are_rejected(languages):
    errors = errors_of(solution(spec={"languages": languages}))
    assert [f for f, _ in errors] == ["spec.languages"]
    assert "mix the Python and C++ families" in errors[0][1]
    with pytest.raises(SpecError):
        Solution.model_validate(solution(spec={"languages": languages}))


def test_no_language():
    assert errors_of(solution(spec={"languages": []})) == [("spec.languages", "at least one language is needed")]


def test_unknown_language():
    errors = errors_of(solution(spec={"languages": ["fortran"]}))
    assert errors and all(f.startswith("spec.languages") for f, _ in errors)
    with pytest.raises(ValidationError):
        Solution.model_validate(solution(spec={"languages": ["fortran"]}))


@pytest.mark.parametrize("entry_point", ["main.py", "main.py:run", "main.py::", "::run", "main.py::1run", "main.py::run.inner", "a::b::c", "main.py::run x"])
def test_entry_point_format(entry_point):
    errors = errors_of(solution(spec={"entry_point": entry_point}))
    assert errors == [("spec.entry_point", f"entry_point {entry_point!r} must read 'file::symbol'")]


def test_entry_file_must_be_among_the_sources():
    errors = errors_of(solution(spec={"entry_point": "other.py::run"}))
    assert [f for f, _ in errors] == ["spec.entry_point"]
    assert "entry file 'other.py' is not among the sources (main.py)" in errors[0][1]


@pytest.mark.parametrize(
    ("languages", "entry", "allowed"),
    [
        (["pytorch"], "main.cu", ".py"),
        (["triton"], "main.txt", ".py"),
        (["cuda_cpp"], "main.py", ".cc, .cpp, .cu, .cxx"),
        (["cutlass"], "main.h", ".cc, .cpp, .cu, .cxx"),
    ],
)
def test_entry_file_extension_fits_the_family(languages, entry, allowed):
    errors = errors_of(solution(spec={"languages": languages, "entry_point": f"{entry}::run"}, sources=[{"path": entry, "content": ""}]))
    assert [f for f, _ in errors] == ["spec.entry_point"]
    assert f"must end in {allowed}, got {entry!r}" in errors[0][1]


@pytest.mark.parametrize("path", ["/abs/main.py", "../main.py", "sub/../main.py", "./main.py", "sub//main.py", "sub\\main.py", "sub/"])
def test_source_paths_must_be_plain_relative(path):
    sources = [copy.deepcopy(PY_SOURCE), {"path": path, "content": ""}]
    errors = errors_of(solution(sources=sources))
    assert ("sources.1.path", f"{path!r} must be a plain relative path (no '..', no leading '/', normalised)") in errors


def test_source_path_dot_is_rejected():
    errors = errors_of(solution(sources=[copy.deepcopy(PY_SOURCE), {"path": ".", "content": ""}]))
    assert [f for f, _ in errors] == ["sources.1.path"]


def test_duplicate_source_paths():
    sources = [copy.deepcopy(PY_SOURCE), {"path": "util.py", "content": ""}, {"path": "main.py", "content": "# again"}]
    assert errors_of(solution(sources=sources)) == [("sources.2.path", "'main.py' appears twice")]


def test_nested_source_paths_are_fine():
    model = valid(solution(spec={"entry_point": "pkg/sub/main.py::run"}, sources=[{"path": "pkg/sub/main.py", "content": ""}, {"path": "pkg/util.py", "content": ""}]))
    assert model.spec.entry_file == "pkg/sub/main.py"


@pytest.mark.parametrize(
    ("data", "field"),
    [
        (solution(sources=[]), "sources"),
        (solution(name="bad name"), "name"),
        (solution(definition=""), "definition"),
        (solution(sources=[{"path": "", "content": ""}]), "sources.0.path"),
        (solution(sources=[{"path": "main.py"}]), "sources.0.content"),
        (solution(spec={"destination_passing_style": "maybe"}), "spec.destination_passing_style"),
        (solution(spec={"target_hardware": "H100"}), "spec.target_hardware"),
    ],
)
def test_structural_errors(data, field):
    assert field in [f for f, _ in errors_of(data)]


def test_missing_spec_keys():
    data = solution()
    del data["spec"]["entry_point"]
    assert errors_of(data) == [("spec.entry_point", "Field required")]


def test_every_issue_is_reported_at_once():
    data = solution(
        spec={"languages": ["pytorch", "cuda_cpp"], "entry_point": "missing.py::run"},
        sources=[copy.deepcopy(PY_SOURCE), {"path": "../x.py", "content": ""}, copy.deepcopy(PY_SOURCE)],
    )
    fields = [f for f, _ in errors_of(data)]
    assert fields == ["spec.languages", "sources.1.path", "sources.2.path", "spec.entry_point"]


def test_unknown_keys_are_kept():
    data = solution(
        spec={"sm_arch": ["sm_90"], "languages": ["pytorch"]},
        sources=[{"path": "main.py", "content": "", "mode": "0644"}],
        version=3,
        metadata={"agent": "x", "tries": [1, 2]},
    )
    model = valid(data)
    assert model.model_extra == {"version": 3, "metadata": {"agent": "x", "tries": [1, 2]}}
    assert model.spec.model_extra == {"sm_arch": ["sm_90"]}
    assert model.sources[0].model_extra == {"mode": "0644"}
    assert model.to_json_dict() == data


def test_solution_spec_alone():
    spec = SolutionSpec(languages=["cutile"], entry_point="k.py::main")
    assert spec.family == "python" and spec.entry_file == "k.py" and spec.entry_symbol == "main"
