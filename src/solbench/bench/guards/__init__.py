"""Guards against reward hacking. `static`: analysis of solution sources before they run."""

from solbench.bench.guards.static import RULES, Finding, analyze_cpp, analyze_python, analyze_solution

__all__ = ["Finding", "RULES", "analyze_solution", "analyze_python", "analyze_cpp"]
