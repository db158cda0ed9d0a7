"""benchmarks/compile_plain.py: a reference that torch.compile cannot compile is recorded with the line
that names its error, not the hint dynamo prints after it."""

from __future__ import annotations

from types import ModuleType

DYNAMO_FAILURE = """Traceback (most recent call last):
  File "<string>", line 23, in <module>
  File "/torch/_dynamo/eval_frame.py", line 841, in compile_wrapper
    raise e.with_traceback(None) from e.__cause__
torch._inductor.exc.InductorError: KeyError: torch.float4_e2m1fn_x2

Set TORCHDYNAMO_VERBOSE=1 for the internal stack trace (please do this especially if you're reporting a bug to PyTorch). For even more developer context, set TORCH_LOGS="+dynamo"

"""


def test_the_failure_detail_is_the_error_not_dynamos_hint(compile_plain: ModuleType) -> None:
    assert compile_plain.error_line(DYNAMO_FAILURE) == "torch._inductor.exc.InductorError: KeyError: torch.float4_e2m1fn_x2"


def test_output_without_a_named_error_gives_its_last_line(compile_plain: ModuleType) -> None:
    assert compile_plain.error_line("loading\nKilled\n") == "Killed"
    assert compile_plain.error_line("") == "no output"
