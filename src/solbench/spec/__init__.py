"""The data model shared by every stage, and the loaders and writers of its files."""

from solbench.spec.definition import ConstAxis, Definition, Distribution, ExprAxis, TensorSpec, VarAxis
from solbench.spec.dtypes import DType
from solbench.spec.errors import Issue, SpecError, SpecWarning
from solbench.spec.loaders import Loaded, load_problems, load_solution, load_traces, scan, write_problem_folder
from solbench.spec.problem import Problem, check_problem, check_workload
from solbench.spec.solution import Language, Solution, SolutionSpec, SourceFile
from solbench.spec.trace import Correctness, Evaluation, Performance, Status, Trace
from solbench.spec.workload import CustomInput, RandomInput, SafetensorsInput, ScalarInput, Tolerance, Workload

__all__ = [
    "ConstAxis", "Correctness", "CustomInput", "DType", "Definition", "Distribution", "Evaluation", "ExprAxis",
    "Issue", "Language", "Loaded", "Performance", "Problem", "RandomInput", "SafetensorsInput", "ScalarInput",
    "Solution", "SolutionSpec", "SourceFile", "SpecError", "SpecWarning", "Status", "TensorSpec", "Tolerance",
    "Trace", "VarAxis", "Workload", "check_problem", "check_workload", "load_problems", "load_solution",
    "load_traces", "scan", "write_problem_folder",
]
