"""The data model shared by every stage, and the loaders and writers of its files."""

from solbench.data.definition import ConstAxis, Definition, Distribution, ExprAxis, TensorSpec, VarAxis
from solbench.data.dtypes import DType
from solbench.data.errors import Issue, SpecError, SpecWarning
from solbench.data.loaders import Loaded, load_problems, load_solution, load_traces, scan, write_problem_folder
from solbench.data.problem import Problem, check_problem, check_workload
from solbench.data.solution import Language, Solution, SolutionSpec, SourceFile
from solbench.data.trace import Correctness, Evaluation, Performance, Status, Trace
from solbench.data.workload import CustomInput, RandomInput, SafetensorsInput, ScalarInput, Tolerance, Workload

__all__ = [
    "ConstAxis", "Correctness", "CustomInput", "DType", "Definition", "Distribution", "Evaluation", "ExprAxis",
    "Issue", "Language", "Loaded", "Performance", "Problem", "RandomInput", "SafetensorsInput", "ScalarInput",
    "Solution", "SolutionSpec", "SourceFile", "SpecError", "SpecWarning", "Status", "TensorSpec", "Tolerance",
    "Trace", "VarAxis", "Workload", "check_problem", "check_workload", "load_problems", "load_solution",
    "load_traces", "scan", "write_problem_folder",
]
