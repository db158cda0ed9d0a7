"""torch.compile of many references in one process, and of one reference at many shapes, without dynamo
quietly running them eagerly.

Dynamo keeps its compiled graphs on the code object of the outermost function it is given, and once
that code object holds `recompile_limit` of them (8) it runs every later call eagerly, with a warning
in a log nobody reads. A reference decorated with `@torch.no_grad()` (most public ones) is torch's
decorator wrapper, one code object shared by every decorated function: a worker that evaluated the
compiled baselines of eight such problems ran the ninth's and every later one's eagerly, and the
'compiled' candidate was timed as the eager reference (seen on a CPU run of 121 problems: a float4
reference that inductor cannot compile passed as compile-default after the others). A problem timed at
more than eight shapes (dynamic=False) hit the same limit on its own.

So a compiled reference is entered through a function of its own module (a code object per problem),
the limits are raised far above any run's needs, and hitting one anyway fails the call
(`fail_on_recompile_limit_hit`) instead of running it eagerly. The settings are source text: the
compiled candidate runs them in the evaluator's worker, which may not import solbench.
"""

from __future__ import annotations

from typing import Any, Callable

# Run with `_solbench_torch` bound to torch; names prefixed so that they never meet a reference's own.
LIMITS_SOURCE = """\
for _solbench_name, _solbench_floor in (("recompile_limit", 4096), ("accumulated_recompile_limit", 65536)):
    if hasattr(_solbench_torch._dynamo.config, _solbench_name):
        setattr(_solbench_torch._dynamo.config, _solbench_name, max(getattr(_solbench_torch._dynamo.config, _solbench_name), _solbench_floor))
if hasattr(_solbench_torch._dynamo.config, "fail_on_recompile_limit_hit"):
    _solbench_torch._dynamo.config.fail_on_recompile_limit_hit = True
"""


def compiled_source(reference: str, mode: str) -> str:
    """A reference's source followed by the lines that make its `run` torch.compile of a function of
    its own module that calls the reference's `run` (the compiled candidate's module, and what the
    compile-ahead processes compile: the same graphs, so the same cache entries)."""
    return (f"{reference}{'' if reference.endswith(chr(10)) else chr(10)}\n\n"
            "import torch as _solbench_torch\n\n"
            "_solbench_reference_run = run\n\n\n"
            "def _solbench_compiled_entry(*args, **kwargs):\n"
            "    return _solbench_reference_run(*args, **kwargs)\n\n\n"
            f"{LIMITS_SOURCE}"
            f"run = _solbench_torch.compile(_solbench_compiled_entry, mode={mode!r}, dynamic=False)\n")


def compiled_run(definition: Any, mode: str) -> Callable[..., Any]:
    """The compiled candidate's `run`, its module imported in this process (solbench.data.reference): how
    the trusted side compiles a reference itself (time_trusted, the compile-ahead processes), with the
    same limits and the same graphs as the candidate's worker."""
    from solbench.data.reference import reference_module

    return reference_module(definition.model_copy(update={"reference": compiled_source(definition.reference, mode)})).run
