"""How an evaluation runs: EvalOptions, frozen and checked once."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

DEFAULT_CACHE = Path(os.environ.get("SOLBENCH_BUILD_CACHE", Path.home() / ".cache" / "solbench" / "builds"))


@dataclass(frozen=True)
class EvalOptions:
    """How an evaluation runs; frozen and checked once, here (change one with dataclasses.replace)."""

    device: str = "auto"  # auto | cpu | cuda | cuda:N
    trials: int = 5
    seed: int | None = None  # None: a fresh random seed per run, recorded in each trace
    timeout_s: float = 300.0  # per workload: correctness trials and timing together
    compile_timeout_s: float = 600.0
    timing: bool = True
    warmup: int = 3
    min_iterations: int = 20
    max_iterations: int = 1000
    budget_s: float = 10.0
    target_rse: float = 0.01  # timing stops once the median's relative standard error is this small (after min_iterations)
    verify_timed: int = 3  # timed calls (chosen at random, unknown to the worker) whose outputs are checked, besides the last
    hidden: int = 2  # extra workloads drawn from the published axis ranges, in no file the solution can read (correctness only)
    unaligned: bool = True  # with hidden > 0: one more, off the published sizes' alignment (a shape-generality finding)
    reference_latency: bool = False
    timer: str = "auto"  # auto | cupti | events
    launch_gate: bool = True  # hold the stream until each call is enqueued (host launch gaps not timed; un-joined streams show)
    launch_series: int = 5  # with the gate: calls timed without it afterwards, whose median less the latency is launch_overhead_ms
    hardware: str | None = None  # spec for T_SOL; default: matched from the GPU's name
    clock_mhz: float | None = None  # price T_SOL at this SM clock (a locked-clock run); None: the spec's boost clock
    policy: str = "auto"
    sol_floor: bool = True  # T_SOL = max(roofline, the hardware's latency floor); False: the roofline alone (bounds published without a floor)
    input_profile: str = "auto"  # how undeclared random inputs are drawn: auto | plain | sol-execbench (solbench.data.profiles)
    cache_root: Path = field(default_factory=lambda: DEFAULT_CACHE)
    # inductor and Triton caches shared by trusted torch.compile candidates (and the run's compiles ahead):
    # a run keeps them in its baselines folder, so a later run over the same problems compiles nothing
    compile_cache: Path | None = None
    log_limit: int = 16_000
    static_analysis: bool = True  # refuse sources with reject findings (REWARD_HACK) before anything runs
    sandbox: str = "auto"  # OS sandbox of the solution worker: auto (best that works) | bwrap (required) | none
    # a submitted solution, once, under compute-sanitizer first (memcheck; racecheck where it uses shared memory) on its smallest
    # workload: a report makes its traces INCORRECT_NUMERICAL (solbench.profile.memcheck)
    memcheck: bool = False
    # energy per call after timing (solbench.energy): the counter's windows are aligned to its updates (~0.1 s apart); each
    # workload pays idle_s + 3 x window_s (setup, calls, setup again), plus up to ~0.1 s per window waiting for an update
    energy: bool = False
    energy_window_s: float = 1.0
    energy_idle_s: float = 0.3

    def __post_init__(self) -> None:
        import re

        from solbench.data.profiles import PROFILES

        def need(ok: bool, name: str, expected: str) -> None:
            if not ok:
                raise ValueError(f"EvalOptions.{name}: expected {expected}, got {getattr(self, name)!r}")

        need(bool(re.fullmatch(r"auto|cpu|cuda(?::\d+)?", self.device)), "device", "auto, cpu, cuda or cuda:N")
        for name in ("trials", "min_iterations"):
            need(getattr(self, name) >= 1, name, "at least 1")
        for name in ("warmup", "verify_timed", "hidden"):
            need(getattr(self, name) >= 0, name, "0 or more")
        need(self.max_iterations >= self.min_iterations, "max_iterations", f"at least min_iterations ({self.min_iterations})")
        for name in ("timeout_s", "compile_timeout_s", "budget_s", "target_rse", "log_limit", "energy_window_s", "energy_idle_s"):
            need(getattr(self, name) > 0, name, "a positive number")
        for name in ("energy_window_s", "energy_idle_s"):
            need(getattr(self, name) <= 60, name, "at most 60 seconds")
        need(self.clock_mhz is None or self.clock_mhz > 0, "clock_mhz", "None or a positive clock in MHz")
        need(self.policy in ("auto", "strict", "relaxed"), "policy", "auto, strict or relaxed")
        need(self.timer in ("auto", "cupti", "events"), "timer", "auto, cupti or events")
        need(self.sandbox in ("auto", "bwrap", "none"), "sandbox", "auto, bwrap or none")
        need(self.input_profile == "auto" or self.input_profile in PROFILES, "input_profile", f"auto, {', '.join(PROFILES)}")
