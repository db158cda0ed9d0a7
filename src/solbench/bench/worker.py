"""A worker process: builds and runs one solution (role "solution", untrusted) or the problem's
reference (role "reference", trusted: it also makes the inputs and the expected outputs).

    python -m solbench.bench.worker --role solution --read-fd R --write-fd W --device cuda

It answers each request on the channel with {"ok": true, ...} or {"ok": false, "kind": ..., "error": ...}.
"""

from __future__ import annotations

import argparse
import os
import sys
import traceback
from pathlib import Path
from typing import Any, Callable

from solbench.bench.ipc import export_cuda, import_cuda
from solbench.bench.protocol import Channel, ChannelClosed
from solbench.bench.shm import read_blob, write_blob

ERROR_TAIL = 4000


class Worker:
    def __init__(self, role: str, device: str):
        import torch

        self.role = role
        self.device = device
        self.torch = torch
        self.function: Callable[..., Any] | None = None
        self.problem = None
        self.timer = None
        self.flusher = None
        self.notes: list[str] = []
        self.exports: dict[str, list[Any]] = {}  # tensors shared by CUDA IPC, kept alive per group
        if device.startswith("cuda"):
            index = torch.device(device).index
            self.device = device = f"cuda:{torch.cuda.current_device() if index is None else index}"
            torch.cuda.set_device(device)
            torch.empty(1, device=device)  # create the context now, not inside a timed call

    # --- requests ------------------------------------------------------------------------------

    def hello(self, request: dict[str, Any]) -> dict[str, Any]:
        import torch

        name = torch.cuda.get_device_name(torch.device(self.device)) if self.device.startswith("cuda") else "cpu"
        return {"pid": os.getpid(), "device": self.device, "device_name": name, "torch": torch.__version__}

    def load_problem(self, request: dict[str, Any]) -> dict[str, Any]:
        from solbench.spec.definition import Definition
        from solbench.spec.problem import Problem
        from solbench.spec.reference import reference_module

        definition = Definition.model_validate(request["definition"])
        root = Path(request["root"]) if request.get("root") else None
        self.problem = Problem(definition, [], root, kind=request.get("kind", "problem"))
        if self.role == "reference":
            self.function = reference_module(definition).run
        return {}

    def build(self, request: dict[str, Any]) -> dict[str, Any]:
        from solbench.bench.builders import build
        from solbench.spec.solution import Solution

        if self.role != "solution":
            raise PermissionError("only a solution worker builds solutions")
        solution = Solution.model_validate(request["solution"])
        built = build(solution, cache_root=Path(request["cache_root"]), device=self.device)
        self.function = built.function
        return {"cached": built.cached, "log": built.log[-ERROR_TAIL:], "build_dir": str(built.build_dir)}

    def prepare(self, request: dict[str, Any]) -> dict[str, Any]:
        """Inputs of one trial (and, if asked, the reference's outputs for them) into blobs."""
        from solbench.spec.inputs import generate_inputs
        from solbench.spec.workload import Workload

        if self.role != "reference" or self.problem is None:
            raise PermissionError("only the reference worker prepares inputs")
        workload = Workload.model_validate(request["workload"])
        paths = request["paths"]
        inputs = generate_inputs(self.problem, workload, seed=request["seed"], trial=request["trial"], device=self.device)
        described = {name: self._describe(value, paths[f"in:{name}"], request) for name, value in inputs.items()}
        answer: dict[str, Any] = {"inputs": described}
        if request.get("reference"):
            with self.torch.no_grad():
                results = self._outputs_of(self.function(*inputs.values()))
            self._synchronize()
            answer["outputs"] = {name: self._describe(value, paths[f"out:{name}"], request) for name, value in results.items()}
        return answer

    def run(self, request: dict[str, Any]) -> dict[str, Any]:
        """One correctness call: inputs from blobs, outputs (poisoned first when preallocated) to blobs."""
        arguments = self._load_arguments(request["inputs"])
        outputs = self._allocate_outputs(request["outputs"]) if request["dps"] else None
        results = self._call(arguments, outputs, request["dps"])
        self._synchronize()
        devices = {name: str(value.device) if isinstance(value, self.torch.Tensor) else None for name, value in results.items()}
        described = {name: self._describe(value, request["paths"][name], request) for name, value in results.items() if name in request["paths"]}
        return {"outputs": described, "devices": devices, "returned": list(results)}

    def time(self, request: dict[str, Any]) -> dict[str, Any]:
        from solbench.bench.timing import CacheFlusher, make_timer, measure

        if self.timer is None:
            self.timer, self.notes = make_timer(self.device, request.get("timer", "auto"))
            self.flusher = CacheFlusher(self.device)
        pools = [self._load_arguments(inputs, copy=False) for inputs in request["input_sets"]]
        dps = request["dps"]
        counter = [0]

        def prepare() -> Callable[[], Any]:
            source = pools[counter[0] % len(pools)]
            counter[0] += 1
            arguments = [self._fresh(value) for value in source]  # fresh values at fresh addresses
            outputs = self._allocate_outputs(request["outputs"]) if dps else None
            return lambda: self._call(arguments, outputs, dps)

        samples = measure(
            prepare, self.timer, self.flusher, warmup=request.get("warmup", 3), min_iterations=request.get("min_iterations", 20),
            max_iterations=request.get("max_iterations", 1000), budget_s=request.get("budget_s", 10.0),
            target_spread=request.get("target_spread", 0.02),
        )
        return {"times_ms": samples.times_ms, "method": samples.method, "notes": self.notes + samples.notes}

    # --- helpers -------------------------------------------------------------------------------

    def _call(self, arguments: list[Any], outputs: dict[str, Any] | None, dps: bool) -> dict[str, Any]:
        if self.function is None:
            raise RuntimeError("nothing is built or loaded yet")
        if dps:
            self.function(*arguments, *outputs.values())
            return outputs
        return self._outputs_of(self.function(*arguments))

    def _outputs_of(self, result: Any) -> dict[str, Any]:
        names = list(self.problem.definition.outputs) if self.problem else []
        values = list(result) if isinstance(result, (tuple, list)) else [result]
        if len(values) != len(names):
            raise _WrongOutputs(f"returned {len(values)} value(s); the definition declares {len(names)} output(s) ({', '.join(names)})")
        return dict(zip(names, values))

    def _load_arguments(self, described: dict[str, Any], copy: bool = True) -> list[Any]:
        arguments = []
        for value in described.values():
            if isinstance(value, dict) and "scalar" in value:
                arguments.append(value["scalar"])
            else:
                tensor = import_cuda(value) if isinstance(value, dict) and "cuda_ipc" in value else read_blob(value)
                arguments.append(tensor.to(self.device, copy=True) if copy else tensor.to(self.device))
        return arguments

    def _describe(self, value: Any, path: str, request: dict[str, Any]) -> Any:
        """A tensor for another process: shared in place on the GPU when asked (kept alive until its
        group is released), else copied into a memory-mapped file."""
        group = request.get("group")
        if group is not None and request.get("ipc") and isinstance(value, self.torch.Tensor) and value.is_cuda:
            value = value.detach()
            self.exports.setdefault(group, []).append(value)
            return export_cuda(value)
        return _describe(value, path)

    def release(self, groups: list[Any]) -> None:
        for group in groups or []:
            self.exports.pop(group, None)

    def _fresh(self, value: Any) -> Any:
        return value.clone() if isinstance(value, self.torch.Tensor) else value

    def _allocate_outputs(self, specs: dict[str, Any]) -> dict[str, Any]:
        torch = self.torch
        outputs = {}
        for name, spec in specs.items():
            dtype = getattr(torch, spec["dtype"])
            tensor = torch.empty(spec["shape"], dtype=dtype, device=self.device)
            _poison(tensor)
            outputs[name] = tensor
        return outputs

    def _synchronize(self) -> None:
        if self.device.startswith("cuda"):
            self.torch.cuda.synchronize()


class _WrongOutputs(Exception):
    """The solution returned another number of values than the definition has outputs."""


def _poison(tensor: Any) -> None:
    """Fill a preallocated output with values no correct kernel leaves there."""
    import torch

    if tensor.numel() == 0:
        return
    if tensor.dtype == torch.float4_e2m1fn_x2:
        tensor.view(torch.uint8).fill_(0x77)
    elif tensor.is_floating_point():
        tensor.fill_(float("nan"))
    elif tensor.dtype == torch.bool:
        tensor.fill_(True)
    else:
        tensor.fill_(torch.iinfo(tensor.dtype).max)


def _describe(value: Any, path: str) -> Any:
    import torch

    if isinstance(value, torch.Tensor):
        return write_blob(value, path)
    if isinstance(value, (bool, int, float)):
        return {"scalar": value}
    return {"unsupported": type(value).__name__}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--role", choices=["solution", "reference"], required=True)
    parser.add_argument("--read-fd", type=int, required=True)
    parser.add_argument("--write-fd", type=int, required=True)
    parser.add_argument("--device", default="cpu")
    args = parser.parse_args()
    channel = Channel(args.read_fd, args.write_fd)
    try:
        worker = Worker(args.role, args.device)
    except Exception as exc:  # noqa: BLE001 - report why the worker cannot start
        channel.send({"ok": False, "kind": "runtime", "error": f"worker start failed: {type(exc).__name__}: {exc}"})
        sys.exit(1)
    handlers = {"hello": worker.hello, "load_problem": worker.load_problem, "build": worker.build, "prepare": worker.prepare,
                "run": worker.run, "time": worker.time}
    while True:
        try:
            request = channel.receive()
        except ChannelClosed:
            return
        command = request.get("cmd")
        if command == "exit":
            channel.send({"ok": True})
            return
        worker.release(request.get("release"))
        handler = handlers.get(command)
        if handler is None:
            channel.send({"ok": False, "kind": "protocol", "error": f"unknown command {command!r}"})
            continue
        try:
            answer = handler(request)
            channel.send({"ok": True, **answer})
        except _WrongOutputs as exc:
            channel.send({"ok": False, "kind": "outputs", "error": str(exc)})
        except Exception as exc:  # noqa: BLE001 - the solution may raise anything; report it
            kind = "compile" if type(exc).__name__ == "BuildError" else "runtime"
            detail = "".join(traceback.format_exception(exc))[-ERROR_TAIL:] if kind == "runtime" else str(exc)[-20000:]
            summary = (str(exc).strip().splitlines() or [""])[0]
            channel.send({"ok": False, "kind": kind, "error": f"{type(exc).__name__}: {summary}"[:500], "detail": detail})


if __name__ == "__main__":
    main()
