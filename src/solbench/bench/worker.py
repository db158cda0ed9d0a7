"""A worker process: builds and runs one solution (role "solution", untrusted) or the problem's
reference (role "reference", trusted: it computes the expected outputs, after the solution has
answered). Both generate each call's inputs themselves from the seed in the request (trusted code on a
CPU maps the reference worker's instead: PrepareRequest.share).

    python -m solbench.bench.worker --role solution --read-fd R --write-fd W --device cuda

It answers each request on the channel with {"ok": true, "nonce": ..., ...} or {"ok": false, "kind": ...,
"error": ..., "nonce": ...}, echoing the request's nonce. Everything the worker relies on is imported
here, before any solution code runs, and a solution worker checks after each step that ran solution
code that none of it was rebound (solbench.bench.integrity). Correctness calls and timed calls take
the same path (fresh inputs, L2 flush, the timer around the call), so that a solution cannot tell
them apart; the outputs of some timed calls, chosen by the orchestrator, are handed back to be
checked too.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import time as clock
import traceback
import uuid
from pathlib import Path
from typing import Any, Callable

from solbench.bench.bits import same_bits
from solbench.bench.builders import build
from solbench.bench.cpu_scaled_mm import route_cpu_scaled_mm
from solbench.bench.integrity import Snapshot, precision_state
from solbench.bench.ipc import export_cuda, probe_tensor
from solbench.bench.memory import device_memory, memory_failure, return_cached_memory
from solbench.bench.messages import (
    ALIAS_MARK,
    BuildAnswer, BuildRequest, EnergyAnswer, EnergyRequest, EnergyWindow, ExpectAnswer, ExpectRequest, HelloAnswer, HelloRequest,
    LoadProblemAnswer, LoadProblemRequest, MalformedMessage, OutputSpec, PrepareRequest, Request, RunAnswer, RunRequest, TimeAnswer,
    TimeRequest, parse_request, to_wire,
)
from solbench.bench.precision import oracle_arguments
from solbench.bench.protocol import Channel, ChannelClosed
from solbench.bench.shm import read_blob, write_blob
from solbench.bench.timing import CacheFlusher, make_gate, make_timer, measure, ungated_series
from solbench.data.definition import Definition
from solbench.data.inputs import generate_inputs
from solbench.data.problem import Problem
from solbench.data.reference import reference_module
from solbench.data.solution import Solution
from solbench.energy import counter as energy_counter  # pynvml imported now, before any solution code (integrity records it)
from solbench.energy import window as energy_window

ERROR_TAIL = 4000
UNJOINED_SLACK_MS = 0.05  # beyond the error of CUPTI's GPU-to-host timestamp conversion
SOLUTION_STEPS = ("build", "run", "time", "energy")  # requests that run solution code: integrity is checked after each
POISON_BYTE = 0xFF  # all ones: NaN in every floating dtype (fp32, fp16, bf16, fp8 e4m3fn and e5m2), -1 in integers


class Violation(Exception):
    """The solution did something no honest solution does; `rule` names the check."""

    def __init__(self, rule: str, message: str):
        super().__init__(message)
        self.rule = rule


class Worker:
    def __init__(self, role: str, device: str):
        import torch

        self.role = role
        self.device = device
        self.torch = torch
        self.function: Callable[..., Any] | None = None
        self.problem: Problem | None = None
        self.timer = None
        self.flusher = None
        self.gate = None
        self.notes: list[str] = []
        self.exports: dict[str, list[Any]] = {}  # tensors shared by CUDA IPC, kept alive per group
        self.kept_inputs: dict[str, list[Any]] = {}  # reference: a trial's inputs, kept for `expect`, per group
        if device.startswith("cuda"):
            index = torch.device(device).index
            self.device = device = f"cuda:{torch.cuda.current_device() if index is None else index}"
            torch.cuda.set_device(device)
            torch.empty(1, device=device)  # create the context now, not inside a timed call
        else:
            route_cpu_scaled_mm(torch)  # before seal(): the integrity snapshot records the rebinding as the worker's own
        self.initial_precision = precision_state()
        self.startup_cudnn_tf32 = torch.backends.cudnn.allow_tf32  # a reference worker serves several problems: each starts from this
        self.snapshot: Snapshot | None = None

    def seal(self) -> None:
        """Record what the worker relies on; called once, before any solution code is loaded."""
        self.snapshot = Snapshot()
        self.snapshot.pin("worker", self)

    def _harness_set(self, **values: Any) -> None:
        """Rebind the worker's own attributes, and re-pin them (and the timer, flusher and gate among them)
        in the integrity snapshot: only what the harness sets itself is accepted as changed."""
        for name, value in values.items():
            setattr(self, name, value)
        if self.snapshot is None:
            return
        self.snapshot.repin("worker", *values)
        for name in ("timer", "flusher", "gate"):
            if name in values and values[name] is not None:
                self.snapshot.pin(f"worker.{name}", values[name])

    # --- requests ------------------------------------------------------------------------------

    def hello(self, request: HelloRequest) -> HelloAnswer:
        torch = self.torch
        name = torch.cuda.get_device_name(torch.device(self.device)) if self.device.startswith("cuda") else "cpu"
        probe = None
        if request.ipc_probe and self.device.startswith("cuda"):  # can the orchestrator map this process's memory?
            probe = self._describe(probe_tensor(self.device), "", request.model_copy(update={"ipc": True}))
        return HelloAnswer(pid=os.getpid(), device=self.device, device_name=name, torch=torch.__version__, ipc_probe=probe,
                           memory=device_memory(self.device))

    def load_problem(self, request: LoadProblemRequest) -> LoadProblemAnswer:
        definition = Definition.model_validate(request.definition)
        root = Path(request.root) if request.root else None
        self._harness_set(problem=Problem(definition, [], root, kind=request.kind, input_profile=request.input_profile,
                                          synthesize_missing_blobs=request.synthesize_missing_blobs))
        if self.role == "reference":
            self._harness_set(function=reference_module(definition).run)
        if request.policy == "strict":
            # cuDNN convolutions default to TF32: under strict, fp32 means fp32 for the reference and
            # for a solution's library calls alike (a solution that turns it back on is flagged)
            self.torch.backends.cudnn.allow_tf32 = False
        else:
            self.torch.backends.cudnn.allow_tf32 = self.startup_cudnn_tf32
        self._harness_set(initial_precision=precision_state())
        return LoadProblemAnswer(precision=self.initial_precision)

    def build(self, request: BuildRequest) -> BuildAnswer:
        if self.role != "solution":
            raise PermissionError("only a solution worker builds solutions")
        solution = Solution.model_validate(request.solution)
        built = build(solution, cache_root=Path(request.cache_root), device=self.device)
        self._harness_set(function=built.function)
        return BuildAnswer(cached=built.cached, log=built.log[-ERROR_TAIL:], build_dir=str(built.build_dir))

    def prepare(self, request: PrepareRequest) -> ExpectAnswer:
        """Generates the inputs of one trial (kept privately when asked, for `expect`) and, if asked,
        computes the reference's outputs for them."""
        self._require_reference()
        started = clock.perf_counter()
        try:
            arguments = self._inputs(request.workload, request.seed, request.trial)
        except Exception as exc:
            described = memory_failure(exc, self.device)
            if described is None:
                raise
            self._free_memory()
            raise ReferenceOutOfMemory(f"the reference worker ran out of memory generating the inputs: {described}", None) from None
        shared = self._share(arguments, request.share) if request.share else None
        inputs_s = clock.perf_counter() - started
        if request.keep:  # nobody else holds them: kept as they are
            self.kept_inputs[str(request.group)] = arguments
        if not request.reference:
            return ExpectAnswer(seconds={"inputs": inputs_s}, inputs=shared)
        answer = self._expected(arguments, request.paths, request.oracle, request)
        return answer.model_copy(update={"seconds": {**answer.seconds, "inputs": inputs_s}, "inputs": shared})

    def _share(self, arguments: list[Any], paths: dict[str, str]) -> dict[str, Any] | None:
        """The inputs copied into blobs at `paths`, for a trusted solution worker on a CPU to map instead of
        drawing them again (a multi-GB weight takes seconds to draw); None where an input would not
        cross unchanged (see shareable) or the blobs' folder has no room for them."""
        names = list(self.problem.definition.inputs)
        if len(names) != len(arguments) or set(paths) != set(names) or not all(shareable(self.torch, value) for value in arguments):
            return None
        needed = sum(value.numel() * value.element_size() for value in arguments if isinstance(value, self.torch.Tensor))
        if not room_for(Path(next(iter(paths.values()))).parent, needed):
            return None
        return {name: _describe(value, paths[name]) for name, value in zip(names, arguments)}

    def expect(self, request: ExpectRequest) -> ExpectAnswer:
        """The reference's outputs (and the fp64 oracle's, when asked) for inputs kept by `prepare`:
        computed only after the solution has answered, so they exist nowhere while it runs. The
        inputs are dropped only once the outputs exist (a retry after running out of memory reuses them)."""
        self._require_reference()
        arguments = self.kept_inputs.get(str(request.group))
        if arguments is None:
            raise RuntimeError(f"no inputs kept for group {request.group!r}")
        try:
            answer = self._expected(arguments, request.paths, request.oracle, request)
        except ReferenceOutOfMemory as exc:
            if exc.pristine is not None:  # the inputs as they were before the reference may have changed them in place
                self.kept_inputs[str(request.group)] = exc.pristine
            raise
        self.kept_inputs.pop(str(request.group), None)
        return answer

    def run(self, request: RunRequest) -> RunAnswer:
        """One correctness call on inputs generated here from the request's seed and trial (as the
        reference generates its own, and as timed calls are fed); the outputs (poisoned first when
        preallocated) go to blobs. With `repeat`, the call is made twice on equal inputs and the
        second is judged."""
        self._ensure_timer(request.timer, request.launch_gate)
        if self.gate is not None and (request.repeat or int(request.trial) == 0):  # a workload's first trial: its kernels load now
            self.gate.prime()
        arguments = self._received(request.inputs) if request.inputs is not None else self._inputs(request.workload, request.seed, request.trial)
        pristine = [self._fresh(value) for value in arguments]
        results, allocated = self._checked_call(arguments, request)
        if request.repeat:
            first = _memory_of(results)  # the first call's outputs are not read after the second call (CUDA graphs overwrite them)
            _poison_storages(results)
            again = [self._fresh(value) for value in pristine]
            second, allocated = self._checked_call(again, request)
            _reject_reused_outputs(first, second)
            results, arguments = second, again
        devices = {name: str(value.device) if isinstance(value, self.torch.Tensor) else None for name, value in results.items()}
        # handed over as copies: memory a CUDA graph owns (torch.compile's reduce-overhead pool) is not
        # the caching allocator's to share over CUDA IPC or to free when the orchestrator lets go of it
        described = {name: self._describe(self._fresh(value) if self.device.startswith("cuda") else value, request.paths[name], request)
                     for name, value in results.items() if name in request.paths}
        spans = list(getattr(self.timer, "last_spans_ms", [])) if request.timeline else []  # the judged call's activities (CUPTI)
        return RunAnswer(outputs=described, devices=devices, returned=list(results), aliased_outputs=self._aliased(results, arguments),
                         modified_inputs=self._modified(arguments, pristine), spans_ms=spans)

    def time(self, request: TimeRequest) -> TimeAnswer:
        """Times the callable on fresh inputs for every call (generated here from the request's seed,
        one trial number per call), and hands back the outputs of the calls listed in `check` and of
        the last call, to be compared with the reference's outputs for the same trial numbers."""
        self._ensure_timer(request.timer, request.launch_gate)
        workload, dps, seed = request.workload, request.dps, request.seed
        check = set(request.check)
        state: dict[str, Any] = {"index": -1, "results": None, "arguments": None, "allocated": None}
        kept: dict[int, dict[str, Any]] = {}
        aliased: set[str] = set()

        def keep_finished_call() -> None:
            """Outside the timed region: checks the call just made and keeps its outputs if asked."""
            if state["index"] >= 0:
                self._reject_unjoined_work()
            if state["index"] in check and state["results"] is not None:
                _admit_outputs(state["results"])
                self._reject_bad_outputs(state["results"], state["allocated"])
                aliased.update(self._aliased(state["results"], state["arguments"]))
                # copied now, before the next call: a CUDA graph's static outputs are rewritten by its next replay
                kept[state["index"]] = {name: self._fresh(value) for name, value in state["results"].items()}

        def prepare() -> Callable[[], Any]:
            keep_finished_call()
            state["index"] += 1
            arguments = self._inputs(workload, seed, state["index"])
            outputs = self._allocate_outputs(request.outputs) if dps else None
            state.update(results=None, arguments=arguments, allocated=_pointers(outputs))

            def call() -> None:
                state["results"] = self._call(arguments, outputs, dps)

            return call

        samples = measure(
            prepare, self.timer, self.flusher, warmup=request.warmup, min_iterations=request.min_iterations,
            max_iterations=request.max_iterations, budget_s=request.budget_s, target_rse=request.target_rse, gate=self.gate,
        )
        ungated = []
        if self.gate is not None and self.gate.enabled and request.launch_series:
            ungated = ungated_series(prepare, self.timer, self.flusher, request.launch_series)
        check.add(state["index"])  # the last call is always checked
        keep_finished_call()
        self._synchronize()
        checked = {}
        for index, results in sorted(kept.items()):
            checked[str(index)] = {
                name: self._describe(value, os.path.join(request.blob_dir, f"chk-{index}-{name}-{uuid.uuid4().hex[:8]}.bin"), request)
                for name, value in results.items()
            }
        return TimeAnswer(times_ms=samples.times_ms, method=samples.method, notes=self.notes + samples.notes, checked=checked,
                          calls=state["index"] + 1, aliased_outputs=sorted(aliased), ungated_times_ms=ungated)

    def energy(self, request: EnergyRequest) -> EnergyAnswer:
        """Energy of the timed calls (solbench.energy.window): idle power, then a window of the calls' setup
        alone, then a window of steps of `request.batch` calls each (one synchronisation per step: no work
        of a call outlives its step), then the setup alone again. Every call has fresh inputs of its own
        trial number and reads them from beyond the L2, as a timed call does, in one of two ways:

        - made ahead (where they fit in `request.pool_bytes` and are made within AHEAD_MAKING_S): the inputs
          of every call of the window are generated before it, the L2 flushed once, and each call is the
          first to read its inputs; a blank step is a synchronisation alone. The windows then hold the calls
          and little else, which short calls need: generating inputs and flushing the L2 for each call
          cost many times a call of a few microseconds, and the difference of two windows of mostly that
          work is noise (H100, 2026-12-06: a 5 us call read at -1.7 J per call, CV 150%);
        - per step: each step generates its calls' inputs, then runs each call behind its own L2 flush (a
          single call flushed and synchronised before it, as in timing); a blank step is the same without
          the calls.

        The outputs of the calls in `check` and of the last call come back, to be compared as timed calls' are."""
        self._ensure_timer(request.timer, False)
        counter, note = energy_counter.open_counter(self.device)
        if counter is None:
            return EnergyAnswer(note=note)
        workload, dps, seed, batch = request.workload, request.dps, request.seed, request.batch
        check = set(request.check)
        min_steps = -(-max(request.min_calls, max(check, default=-1) + 1) // batch)
        state: dict[str, Any] = {"index": -1, "blank": 0, "finished": []}  # finished: (index, results, arguments, allocated) of the last step
        kept: dict[int, dict[str, Any]] = {}
        aliased: set[str] = set()
        ahead: list[tuple[list[Any], dict[str, Any] | None] | None] = []  # inputs and outputs made ahead, by call index

        def one_set(trial: int) -> tuple[list[Any], dict[str, Any] | None]:
            return self._inputs(workload, seed, trial), self._allocate_outputs(request.outputs) if dps else None

        def blank_set() -> tuple[list[Any], dict[str, Any] | None]:  # trial numbers no checked call ever sees
            state["blank"] += 1
            return one_set(-state["blank"])

        def keep_finished_calls() -> None:
            for index, results, arguments, allocated in state["finished"]:
                if index in check and results is not None:
                    _admit_outputs(results)
                    self._reject_bad_outputs(results, allocated)
                    aliased.update(self._aliased(results, arguments))
                    kept[index] = {name: self._fresh(value) for name, value in results.items()}
            state["finished"] = []

        def call(arguments: list[Any], outputs: dict[str, Any] | None) -> None:
            state["index"] += 1
            state["finished"].append((state["index"], self._call(arguments, outputs, dps), arguments, _pointers(outputs)))

        def blank_step() -> None:
            sets = [blank_set() for _ in range(batch)]
            for _ in sets:
                self.flusher()
            self._synchronize()
            del sets

        def call_step() -> None:
            keep_finished_calls()
            sets = [one_set(state["index"] + 1 + offset) for offset in range(batch)]
            for arguments, outputs in sets:
                self.flusher()
                if batch == 1:
                    self._synchronize()
                call(arguments, outputs)
            self._synchronize()

        def blank_step_ahead() -> None:
            self._synchronize()

        def call_step_ahead() -> None:
            keep_finished_calls()
            first = state["index"] + 1
            if first + batch > len(ahead):
                raise energy_window.StepsExhausted(f"the counter did not update within the {len(ahead)} calls whose inputs were made ahead")
            for index in range(first, first + batch):
                arguments, outputs = ahead[index]  # type: ignore[misc]
                ahead[index] = None  # the step keeps its own references until its outputs are checked
                call(arguments, outputs)
            self._synchronize()

        def make_ahead() -> None:  # between the first blank window and the window of calls, inside neither
            ahead.extend(one_set(index) for index in range(calls_ahead))
            self.flusher()
            self._synchronize()

        try:
            with getattr(self.timer, "paused", contextlib.nullcontext)():  # CUPTI records nothing while the windows run
                calls_ahead, window_s = self._calls_made_ahead(request, min_steps, blank_set) if request.pool_bytes > 0 else (0, 0.0)
                if calls_ahead:
                    readings = energy_window.measure(counter, blank_step_ahead, call_step_ahead, window_s, request.idle_s,
                                                     min_calls=min_steps, before_calls=make_ahead, shortest_s=window_s / 2)
                else:
                    readings = energy_window.measure(counter, blank_step, call_step, request.window_s, request.idle_s, min_calls=min_steps)
        except energy_window.CounterStuck as exc:
            return EnergyAnswer(note=f"energy not measured: {exc}")
        ahead.clear()
        check.add(state["index"])  # the last call is always checked
        keep_finished_calls()
        self._synchronize()
        checked = {str(index): {name: self._describe(value, os.path.join(request.blob_dir, f"nrg-{index}-{name}-{uuid.uuid4().hex[:8]}.bin"), request)
                                for name, value in results.items()} for index, results in sorted(kept.items())}
        windows = {name: EnergyWindow(**getattr(readings, name).to_json()) for name in ("idle", "blank", "loop", "blank_after")}
        return EnergyAnswer(**windows, calls=state["index"] + 1, batch=batch, inputs_ahead=calls_ahead, checked=checked,
                            aliased_outputs=sorted(aliased))

    def _calls_made_ahead(self, request: EnergyRequest, min_steps: int, blank_set: Callable[[], Any]) -> tuple[int, float]:
        """How many calls' inputs the window of calls makes ahead, and the windows' length (0: inputs per
        step instead; solbench.energy.window.calls_ahead). From steps of calls timed on blank trial
        numbers: the calls that fit in `request.pool_bytes` and in half of the device memory free,
        and are made within AHEAD_MAKING_S."""
        batch = request.batch
        sets = [blank_set() for _ in range(batch)]
        self._synchronize()
        started = clock.perf_counter()
        sets += [blank_set() for _ in range(batch)]
        self._synchronize()
        making_s = (clock.perf_counter() - started) / batch
        size = sum(value.nbytes for value in [*sets[0][0], *(sets[0][1] or {}).values()] if isinstance(value, self.torch.Tensor))
        self.flusher()
        self._synchronize()
        for arguments, outputs in sets[:batch]:  # a step to warm up after the flush, then one timed
            self._call(arguments, outputs, request.dps)
        self._synchronize()
        started = clock.perf_counter()
        for arguments, outputs in sets[batch:]:
            self._call(arguments, outputs, request.dps)
        self._synchronize()
        step_s = max(clock.perf_counter() - started, 1e-6)
        del sets
        memory = device_memory(self.device)  # half of what is free now at most: the calls' own work needs the rest
        pool_bytes = min(request.pool_bytes, memory[0] // 2) if memory is not None else request.pool_bytes
        fitting_calls = min(pool_bytes // max(size, 1), int(energy_window.AHEAD_MAKING_S / max(making_s, 1e-9)))
        return energy_window.calls_ahead(fitting_calls, batch, step_s, request.window_s, min_steps)

    # --- the call and its checks -----------------------------------------------------------------

    def _ensure_timer(self, timer: str, launch_gate: bool) -> None:
        """The timer, the cache flusher and the launch gate, set together or not at all: one that fails
        (the flush buffer out of memory on a crowded GPU) leaves none set, so the next call tries again
        instead of calling a flusher that was never made."""
        if self.timer is not None:
            return
        made_timer, notes = make_timer(self.device, timer)
        flusher = CacheFlusher(self.device)
        gate = None
        if self.device.startswith("cuda") and launch_gate:
            gate, note = make_gate(self.device)
            notes += [note] if note else []
        self._harness_set(flusher=flusher, gate=gate, notes=notes, timer=made_timer)

    def _checked_call(self, arguments: list[Any], request: RunRequest) -> tuple[dict[str, Any], dict[str, Any] | None]:
        """A correctness call, made exactly as a timed call is (flush, timer), then checked."""
        dps = request.dps
        outputs = self._allocate_outputs(request.outputs) if dps else None
        if not dps:  # the memory the solution's own output allocations will get holds poison, never an earlier call's results
            self._poison_free_memory(request.outputs)
        allocated = _pointers(outputs)
        holder: dict[str, Any] = {}

        def call() -> None:
            if request.nvtx:  # only the solution's call is inside the range (solbench profile: ncu profiles just that)
                self.torch.cuda.nvtx.range_push(request.nvtx)
            try:
                holder["results"] = self._call(arguments, outputs, dps)
            finally:
                if request.nvtx:
                    self.torch.cuda.nvtx.range_pop()

        self.flusher()
        self._synchronize()
        self.timer.measure(call, self.gate)
        self._synchronize()
        self._reject_unjoined_work()
        _admit_outputs(holder["results"])
        self._reject_bad_outputs(holder["results"], allocated)
        return holder["results"], allocated

    def _call(self, arguments: list[Any], outputs: dict[str, Any] | None, dps: bool) -> dict[str, Any]:
        if self.function is None:
            raise RuntimeError("nothing is built or loaded yet")
        if dps:
            self.function(*arguments, *outputs.values())
            return outputs
        return self._outputs_of(self.function(*arguments))

    def _reject_unjoined_work(self) -> None:
        """Device work still running after the caller's stream finished the call was put on another
        stream and never joined back: its outputs race with the caller's next work."""
        outlived = self.timer.outlived_ms
        if outlived > UNJOINED_SLACK_MS:
            raise Violation("unjoined-stream", f"device work of the call ran on for {outlived:.3f} ms after the caller's stream had finished it: "
                                               "a stream the call never joined back to the caller's (wait for it before returning)")

    def _reject_bad_outputs(self, results: dict[str, Any], allocated: dict[str, Any] | None) -> None:
        torch = self.torch
        for name, value in results.items():
            if isinstance(value, torch.Tensor) and type(value) is not torch.Tensor and type(value) is not torch.nn.Parameter:
                raise Violation("lazy-output", f"output {name!r} is a {type(value).__module__}.{type(value).__qualname__}, not a plain torch.Tensor")
        if allocated is not None:
            for name, pointers in allocated.items():
                value = results.get(name)
                if _storage_pointers(value) != pointers:
                    raise Violation("output-repointed", f"output {name!r} no longer holds the memory it was given (set_ or a swapped storage)")

    def _aliased(self, results: dict[str, Any], arguments: list[Any]) -> list[str]:
        """Each output that shares memory with an input, as "OUTPUT<-INPUT" (allowed only where the
        reference's output shares memory with that same input: in-place updates, KV-cache writes)."""
        names = list(self.problem.definition.inputs) if self.problem else []
        return [f"{name}{ALIAS_MARK}{names[position] if position < len(names) else position}" for name, value in results.items()
                if isinstance(value, self.torch.Tensor)
                for position, argument in enumerate(arguments) if isinstance(argument, self.torch.Tensor) and _overlap(value, argument)]

    def _modified(self, arguments: list[Any], pristine: list[Any]) -> list[str]:
        """Inputs whose bits changed during the call (allowed only where the reference changes them too)."""
        names = list(self.problem.definition.inputs) if self.problem else []
        return [names[position] if position < len(names) else str(position) for position, (value, original) in enumerate(zip(arguments, pristine))
                if isinstance(value, self.torch.Tensor) and not same_bits(value, original)]

    def _expected(self, arguments: list[Any], paths: dict[str, str], want_oracle: bool, request: Request) -> ExpectAnswer:
        """The reference's outputs for `arguments` (left unchanged: a retry can reuse them). Running
        out of memory is reported as such (ReferenceOutOfMemory), with the sizes."""
        started = clock.perf_counter()
        pristine: list[Any] | None = None
        calls = arguments
        oracle_s = 0.0
        try:
            pristine = [self._fresh(value) for value in arguments]
            with self.torch.enable_grad():  # backward problems differentiate inside run (torch.autograd.grad); inputs need no grad
                results = self._outputs_of(self.function(*calls))
                behaviour = {"aliased_outputs": self._aliased(results, calls), "modified_inputs": self._modified(calls, pristine)}
                self._synchronize()
                oracle_started = clock.perf_counter()
                oracle = None
                if want_oracle and (short := self._short_of_memory_for_oracle(pristine, results)):
                    oracle = short
                elif want_oracle:
                    try:
                        oracle = self._outputs_of(self.function(*oracle_arguments(pristine)))
                    except Exception as exc:  # noqa: BLE001 - a reference that cannot run in fp64: no oracle, and say why
                        oracle = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
                self._synchronize()
                oracle_s = clock.perf_counter() - oracle_started if want_oracle else 0.0
        except Exception as exc:
            described = memory_failure(exc, self.device)
            if described is not None:
                calls = results = None  # noqa: F841 - what the failed call left, freed before the orchestrator retries
                self._free_memory()
                raise ReferenceOutOfMemory(f"the reference ran out of memory: {described}", pristine) from None
            raise
        outputs = {name: self._describe(value, paths[f"out:{name}"], request) for name, value in results.items()}
        oracles = {name: self._describe(value, paths[f"out:{name}"] + ".oracle.bin", request) for name, value in oracle.items()} if isinstance(oracle, dict) else None
        seconds = {"reference": clock.perf_counter() - started - oracle_s, "oracle": oracle_s}
        return ExpectAnswer(outputs=outputs, oracle=oracles, oracle_error=oracle if isinstance(oracle, str) else None, seconds=seconds, **behaviour)

    # --- helpers -------------------------------------------------------------------------------

    def _inputs(self, workload: Any, seed: int, trial: int) -> list[Any]:
        """A call's inputs in the definition's order, generated here (the same in both workers)."""
        return list(generate_inputs(self.problem, workload, seed=int(seed), trial=int(trial), device=self.device).values())

    def _received(self, described: dict[str, Any]) -> list[Any]:
        """Inputs the reference worker shared (PrepareRequest.share), in the definition's order: each blob
        mapped copy-on-write, so that a call changing its inputs in place changes nothing else."""
        names = list(self.problem.definition.inputs)
        if list(described) != names:
            raise RuntimeError(f"shared inputs {sorted(described)} are not the problem's {names}")
        return [value["scalar"] if "scalar" in value else read_blob(value) for value in described.values()]

    def _short_of_memory_for_oracle(self, arguments: list[Any], results: dict[str, Any]) -> str | None:
        """Why the fp64 oracle would not fit in the device memory now free (None: it fits). Its
        inputs and outputs take twice the bytes of fp32 ones, and the reference's intermediates more."""
        if not self.device.startswith("cuda"):
            return None
        torch = self.torch
        device = torch.device(self.device)
        tensors = [value for value in [*arguments, *results.values()] if isinstance(value, torch.Tensor)]
        needed = 3 * sum(value.numel() * 8 for value in tensors)
        free, _ = torch.cuda.mem_get_info(device)
        free += torch.cuda.memory_reserved(device) - torch.cuda.memory_allocated(device)
        if needed <= free:
            return None
        return f"MemoryError: the fp64 oracle needs about {needed / 2**30:.1f} GiB of device memory, {free / 2**30:.1f} GiB is free"

    def _require_reference(self) -> None:
        if self.role != "reference" or self.problem is None:
            raise PermissionError("only the reference worker computes expected outputs")

    def _outputs_of(self, result: Any) -> dict[str, Any]:
        names = list(self.problem.definition.outputs) if self.problem else []
        values = list(result) if isinstance(result, (tuple, list)) else [result]
        if len(values) != len(names):
            raise _WrongOutputs(f"returned {len(values)} value(s); the definition declares {len(names)} output(s) ({', '.join(names)})")
        return dict(zip(names, values))

    def _describe(self, value: Any, path: str, request: Request) -> Any:
        """A tensor for another process: shared in place on the GPU when asked (kept alive until its
        group is released), else copied into a memory-mapped file."""
        group = request.group
        if group is not None and request.ipc and isinstance(value, self.torch.Tensor) and value.is_cuda:
            value = value.detach()
            self.exports.setdefault(group, []).append(value)
            return export_cuda(value)
        return _describe(value, path, digest=request.digest and self.role == "reference")

    def release(self, groups: list[str]) -> None:
        for group in groups:
            self.exports.pop(group, None)
            self.kept_inputs.pop(group, None)

    def _fresh(self, value: Any) -> Any:
        return value.clone() if isinstance(value, self.torch.Tensor) else value

    def _allocate_outputs(self, specs: dict[str, OutputSpec]) -> dict[str, Any]:
        torch = self.torch
        outputs = {}
        for name, spec in specs.items():
            dtype = getattr(torch, spec.dtype)
            tensor = torch.empty(spec.shape, dtype=dtype, device=self.device)
            _poison(tensor)
            outputs[name] = tensor
        return outputs

    def _poison_free_memory(self, specs: dict[str, OutputSpec]) -> None:
        """Allocate a poisoned block the size of each output and free it again: the caching allocator
        hands those blocks to the solution's next allocations of those sizes, so an output element
        it never writes is NaN (or the dtype's poison), not a value a previous call left there. On a
        CPU, blocks of this size come fresh from the OS (zeros) or from the poisoned ones."""
        poisoned = self._allocate_outputs(specs)
        self._synchronize()
        del poisoned

    def _free_memory(self) -> None:
        import gc

        gc.collect()
        if self.device.startswith("cuda"):
            self.torch.cuda.empty_cache()

    def _synchronize(self) -> None:
        if self.device.startswith("cuda"):
            self.torch.cuda.synchronize()

    def precision_changes(self) -> dict[str, Any]:
        now = precision_state()
        return {name: value for name, value in now.items() if self.initial_precision.get(name) != value}


class _WrongOutputs(Exception):
    """The solution's outputs are not what any check can take: another number of values than the
    definition has outputs, or a tensor that is no plain dense one (one line: which output, what it is)."""


class ReferenceOutOfMemory(Exception):
    """The reference ran out of memory (the message has the sizes): the orchestrator frees and retries once."""

    def __init__(self, message: str, pristine: list[Any] | None):
        super().__init__(message)
        self.pristine = pristine


def _admit_outputs(results: dict[str, Any]) -> None:
    """Outputs the worker's own checks can take: a plain dense tensor on a real device, or anything
    else that is no tensor (judged by the comparison). Run before any check touches their memory."""
    import torch

    for name, value in results.items():
        if not isinstance(value, torch.Tensor):
            continue
        try:
            what = _odd_tensor(value)
        except Exception as exc:  # noqa: BLE001 - a tensor that cannot even say what it is
            what = f"a tensor that cannot be inspected ({type(exc).__name__}: {(str(exc).strip().splitlines() or [''])[0][:200]})"
        if what:
            raise _WrongOutputs(f"output {name!r} is {what}; outputs are plain dense (strided) tensors")


def _odd_tensor(value: Any) -> str | None:
    import torch

    if value.is_nested:
        return "a nested tensor"
    if value.layout != torch.strided:
        return f"a tensor of layout {value.layout} (e.g. sparse)"
    if value.is_quantized:
        return f"a quantized tensor ({value.dtype})"
    if value.device.type == "meta":
        return "a meta tensor (no data)"
    value.untyped_storage()  # raises for tensors without storage (functional, fake)
    return None


def _pointers(outputs: dict[str, Any] | None) -> dict[str, Any] | None:
    return None if outputs is None else {name: _storage_pointers(value) for name, value in outputs.items()}


def _storage_pointers(value: Any) -> tuple[int, int] | None:
    import torch

    if not isinstance(value, torch.Tensor):
        return None
    return (value.data_ptr(), value.untyped_storage().data_ptr())


def _overlap(a: Any, b: Any) -> bool:
    """Whether two tensors' storages share bytes (on the same device). A tensor whose storage cannot
    be inspected (sparse, some subclasses) is the solution's wrong output, never the worker's fault."""
    return a.device == b.device and _spans_overlap(_span(a), _span(b))


def _span(value: Any) -> tuple[str, int, int]:
    """A tensor's storage as (device, start address, bytes)."""
    storage = _inspectable_storage(value)
    return str(value.device), storage.data_ptr(), storage.nbytes()


def _spans_overlap(a: tuple[str, int, int], b: tuple[str, int, int]) -> bool:
    (device_a, start_a, size_a), (device_b, start_b, size_b) = a, b
    return device_a == device_b and size_a > 0 and size_b > 0 and start_a < start_b + size_b and start_b < start_a + size_a


def _inspectable_storage(value: Any) -> Any:
    """A tensor's untyped storage; one that has none to show (sparse, some subclasses) is the
    solution's wrong output, never the worker's fault."""
    try:
        return value.untyped_storage()
    except (RuntimeError, NotImplementedError) as exc:
        raise _WrongOutputs(f"an output is a {type(value).__name__} of layout {value.layout} whose memory cannot be inspected "
                            f"({type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}); outputs are plain dense tensors") from None


def _memory_of(results: dict[str, Any]) -> dict[str, tuple[str, int, int]]:
    """Each tensor output's storage as (device, start, bytes), read while it is still valid."""
    import torch

    return {name: _span(value) for name, value in results.items() if isinstance(value, torch.Tensor)}


def _storage_bytes(value: Any) -> Any:
    """The bytes of a tensor's whole storage, as a flat uint8 tensor over the same memory."""
    import torch

    storage = _inspectable_storage(value)
    return torch.empty(0, dtype=torch.uint8, device=value.device).set_(storage, 0, (storage.nbytes(),), (1,))


def _poison_storages(results: dict[str, Any]) -> None:
    """Every byte of the outputs' storages set to 0xFF (NaN in every floating dtype): an output
    returned again by the next call without being written still holds it."""
    import torch

    for value in results.values():
        if isinstance(value, torch.Tensor) and value.numel():
            _storage_bytes(value).fill_(POISON_BYTE)


def _reject_reused_outputs(first: dict[str, tuple[str, int, int]], second: dict[str, Any]) -> None:
    """An output in the memory of the previous call's output is allowed where this call wrote it (a
    CUDA graph replays into its static output buffers); one that still holds the poison put there
    after the previous call was returned again without being computed (results cached across calls)."""
    import torch

    for name, value in second.items():
        if not isinstance(value, torch.Tensor) or not value.numel() or name not in first or not _spans_overlap(_span(value), first[name]):
            continue
        if bool((_storage_bytes(value) == POISON_BYTE).all()):
            raise Violation("output-reused", f"output {name!r} of a call is the output of the call before, returned again without "
                                             "being written (results cached across calls)")


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


SHARE_HEADROOM = 256 * 2**20  # bytes left free beside shared inputs (outputs, other evaluations' blobs)


def room_for(folder: Path, needed: int) -> bool:
    """Whether `folder`'s file system holds `needed` more bytes with room to spare: a full tmpfs
    (/dev/shm is 64 MiB in a default container) kills the writer with SIGBUS instead of an error."""
    try:
        found = os.statvfs(folder)
    except OSError:
        return False
    free = found.f_bavail * found.f_frsize
    return needed == 0 or 2 * needed + SHARE_HEADROOM <= free


def shareable(torch: Any, value: Any) -> bool:
    """Whether an input crosses a blob unchanged: a plain dense contiguous CPU tensor that needs no
    gradient, or a bool, int or float (strides, subclasses and autograd state do not cross)."""
    if isinstance(value, (bool, int, float)):
        return True
    return (type(value) is torch.Tensor and value.device.type == "cpu" and value.layout == torch.strided and value.is_contiguous()
            and not value.requires_grad and value.storage_offset() == 0)


def _describe(value: Any, path: str, digest: bool = False) -> Any:
    import torch

    if isinstance(value, torch.Tensor):
        return write_blob(value, path, digest=digest)
    if isinstance(value, (bool, int, float)):
        return {"scalar": value}
    return {"unsupported": type(value).__name__}


def _failure(exc: BaseException) -> dict[str, Any]:
    if isinstance(exc, Violation):
        return {"ok": False, "kind": "reward_hack", "rule": exc.rule, "error": str(exc)}
    if isinstance(exc, _WrongOutputs):
        return {"ok": False, "kind": "outputs", "error": str(exc)}
    if isinstance(exc, ReferenceOutOfMemory):
        return {"ok": False, "kind": "memory", "error": str(exc)}
    if isinstance(exc, MalformedMessage):
        return {"ok": False, "kind": "protocol", "error": str(exc)}
    kind = "compile" if type(exc).__name__ == "BuildError" else "runtime"
    summary = (str(exc).strip().splitlines() or [""])[0]
    headline = f"{type(exc).__name__}: {summary}"[:500]
    # A runtime error's log is its headline, then the end of its traceback: the first line of a trace's log (what
    # a run's summary and report show of a failed candidate) is the error, never a line cut from inside the traceback.
    detail = f"{headline}\n{''.join(traceback.format_exception(exc))[-ERROR_TAIL:]}" if kind == "runtime" else str(exc)[-20000:]
    return {"ok": False, "kind": kind, "error": headline, "detail": detail}


def serve(channel: Channel, worker: Worker) -> None:
    # held here, not looked up on the worker at every step: a solution that rebinds worker.snapshot or
    # worker.role is reported by the snapshot it could not replace
    snapshot, checked = worker.snapshot, worker.role == "solution"
    send, receive = Channel.send, Channel.receive  # the class's own: instance attributes shadowing them are reported, never called
    if snapshot is not None:
        snapshot.pin("channel", channel)
    handlers = {"hello": worker.hello, "load_problem": worker.load_problem, "build": worker.build, "prepare": worker.prepare,
                "expect": worker.expect, "run": worker.run, "time": worker.time, "energy": worker.energy}
    while True:
        try:
            request = receive(channel)
        except ChannelClosed:
            return
        command, nonce = request.get("cmd"), request.get("nonce")
        if command == "exit":
            send(channel, {"ok": True, "nonce": nonce})
            return
        handler = handlers.get(command)
        if handler is None:
            send(channel, {"ok": False, "kind": "protocol", "error": f"unknown command {command!r}", "nonce": nonce})
            continue
        try:
            parsed = parse_request(str(command), request)
            worker.release(parsed.release)
            answer = {"ok": True, **to_wire(handler(parsed))}
        except Exception as exc:  # noqa: BLE001 - the solution may raise anything; report it
            answer = _failure(exc)
        return_cached_memory(worker.device)
        if checked and command in SOLUTION_STEPS:
            changes = snapshot.changes() if snapshot is not None else []
            if changes:
                answer = {"ok": False, "kind": "reward_hack", "rule": "integrity",
                          "error": "the solution changed what the harness relies on: " + "; ".join(changes)}
            elif answer.get("ok"):
                answer["precision_changes"] = worker.precision_changes()
        send(channel, {**answer, "nonce": nonce})


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--role", choices=["solution", "reference"], required=True)
    parser.add_argument("--read-fd", type=int, required=True)
    parser.add_argument("--write-fd", type=int, required=True)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--preload-compiler", action="store_true", help="import torch.compile's machinery before serving")
    args = parser.parse_args()
    channel = Channel(args.read_fd, args.write_fd)
    try:
        worker = Worker(args.role, args.device)
        if args.preload_compiler:
            import torch._dynamo  # noqa: F401 - loaded now, while the worker waits as a spare
            import torch._inductor.compile_fx  # noqa: F401
    except Exception as exc:  # noqa: BLE001 - report why the worker cannot start, as the answer to the first request
        try:
            request = channel.receive()
            channel.send({"ok": False, "kind": "runtime", "error": f"worker start failed: {type(exc).__name__}: {exc}", "nonce": request.get("nonce")})
        except ChannelClosed:
            pass
        sys.exit(1)
    if args.role == "solution":
        worker.seal()
    serve(channel, worker)


if __name__ == "__main__":
    main()
