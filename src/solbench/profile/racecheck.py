"""Whether a solution gets racecheck besides memcheck: when its kernels use shared memory.

- CUDA C++ (cuda_cpp, and any C++-family source): a `__shared__` declaration in a source (static or
  `extern __shared__` dynamic shared memory).
- CUTLASS and CuTe DSL solutions: always (their kernels stage operands through shared memory in the
  library's headers, not in the solution's own text).
- Triton: any solution with a `@triton.jit` kernel (or the triton language): Triton puts tl.dot
  operands, reductions and layout conversions in shared memory by itself, which the source does not
  show, so every Triton kernel may use it.
- PyTorch alone: no (its library kernels are not the solution's code).
"""

from __future__ import annotations

import re

from solbench.data.solution import Language, Solution

SHARED_DECLARATION = re.compile(r"\b__shared__\b")
TRITON_KERNEL = re.compile(r"@\s*triton\s*\.\s*(jit|autotune)\b|\bimport\s+triton\b|\bfrom\s+triton\b")
ALWAYS = {Language.cutlass, Language.cute_dsl}


def racecheck_reason(solution: Solution) -> str | None:
    """Why the solution's kernels may use shared memory (None: no reason to run racecheck)."""
    languages = set(solution.spec.language_list)
    if languages & ALWAYS:
        return f"{', '.join(sorted(language.value for language in languages & ALWAYS))} kernels stage data through shared memory"
    for source in solution.sources:
        if SHARED_DECLARATION.search(source.content):
            return f"{source.path} declares __shared__ memory"
    if Language.triton in languages or any(TRITON_KERNEL.search(source.content) for source in solution.sources if source.path.endswith(".py")):
        return "a Triton kernel (Triton places dot operands, reductions and layout conversions in shared memory)"
    return None
