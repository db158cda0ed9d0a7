"""A hardware spec for the local CPU, calibrated once and cached, so that T_SOL (and so a score) exists
on a machine without a GPU.

The spec is measured by `solbench.sol.calibrate` at a small size scale (a few seconds) and saved in the
user spec folder (`USER_HARDWARE_DIR`) under a name derived from the CPU model, e.g.
`cpu-amd-epyc.yaml`; later runs load it. `solbench hw list` shows it like any calibrated spec.
"""

from __future__ import annotations

import platform
import re
from pathlib import Path

import yaml

from solbench.data.errors import SpecError
from solbench.sol.hardware import USER_HARDWARE_DIR, HardwareSpec, load_hardware_file

CALIBRATION_SCALE = 0.25  # 64 MiB buffers, 512x512 matmuls: bigger than most last-level caches, seconds to measure
CALIBRATION_REPEATS = 5
CALIBRATION_ROUNDS = 2  # the best of two measurements: a busy machine measures low
# T_SOL must be a lower bound, but a quick measurement at small sizes on a shared CPU finds ceilings well
# below what large calls reach (a 4096-wide matmul runs several times faster per FLOP than a 512-wide one
# measured under load): the spec's rates are the measured ones times these factors.
COMPUTE_HEADROOM = 4.0
BANDWIDTH_HEADROOM = 2.0
# What the measurement does, saved in the spec: a cached spec of an older method is measured again (kept beside as .bak).
# 2: each matmul in both layouts (a @ b, a @ b.T), the faster (fp16 a @ b on a 2-core EPYC: 0.001-0.003 TFLOP/s,
# a @ b.T 0.04-0.05: the old spec priced fp16 GEMMs at a fifth of what the references ran at).
CALIBRATION_METHOD = 2


def cpu_model() -> str:
    """The CPU's model name (from /proc/cpuinfo where there is one)."""
    try:
        for line in Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace").splitlines():
            key, _, value = line.partition(":")
            if key.strip() in ("model name", "Model", "Hardware") and value.strip():
                return value.strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown"


def cpu_spec_name(model: str | None = None) -> str:
    """The cached spec's name: 'cpu-' and the model in lower case, other characters as '-'."""
    slug = re.sub(r"[^a-z0-9]+", "-", (model or cpu_model()).lower()).strip("-")
    return f"cpu-{slug or 'unknown'}"


def cpu_spec_path(folder: Path | None = None, model: str | None = None) -> Path:
    return (folder or USER_HARDWARE_DIR) / f"{cpu_spec_name(model)}.yaml"


def cached_cpu_spec(folder: Path | None = None, *, calibrate: bool = True) -> tuple[HardwareSpec | None, str]:
    """The local CPU's spec and a line saying where it came from; calibrated and saved on first use
    (None when not cached and `calibrate` is off, or when the measurement fails: the line says why)."""
    path = cpu_spec_path(folder)
    again = ""
    if path.is_file():
        try:
            cached = load_hardware_file(path)
        except SpecError as exc:
            return None, f"T_SOL blank: the cached CPU spec is unreadable ({exc.issues[0]}); delete it to calibrate again"
        method = (cached.calibration or {}).get("method")
        if method == CALIBRATION_METHOD or not calibrate:
            return cached, f"CPU spec {path.stem} from {path}"
        backup = path.with_name(path.name + ".bak")
        try:
            path.replace(backup)
        except FileNotFoundError:  # another run moved it first and is measuring: calibrate_cpu keeps the first spec saved
            pass
        again = f" (the cached one, kept as {backup}, was measured by an older method: {method or 1}, now {CALIBRATION_METHOD})"
    if not calibrate:
        return None, f"T_SOL blank: no calibrated spec for this CPU ({path} is absent)"
    try:
        spec = calibrate_cpu(path)
    except Exception as exc:  # noqa: BLE001 - a run without T_SOL still measures; the line says why
        return None, f"T_SOL blank: calibrating this CPU failed: {type(exc).__name__}: {exc}"
    return spec, f"CPU spec {spec.name} calibrated now and saved to {path}{again}"


def calibrate_cpu(path: Path) -> HardwareSpec:
    """Measure this CPU's ceilings and save the spec at `path` (a spec another process saved first wins)."""
    from solbench.data.files import write_text_safely
    from solbench.sol.calibrate import calibrated_spec, measure

    rounds = [measure("cpu", size_scale=CALIBRATION_SCALE, repeats=CALIBRATION_REPEATS) for _ in range(CALIBRATION_ROUNDS)]
    measured = {key: max(found.get(key, 0.0) for found in rounds) for key in rounds[0]}
    widened = {key: value * (BANDWIDTH_HEADROOM if key.endswith("_tbps") else COMPUTE_HEADROOM) for key, value in measured.items()}
    spec = calibrated_spec(None, "cpu", widened)
    spec = spec.model_copy(update={"name": path.stem})
    spec.calibration = {**(spec.calibration or {}), "measured": {k: round(v, 6) for k, v in measured.items()}, "model": cpu_model(),
                        "method": CALIBRATION_METHOD,
                        "size_scale": CALIBRATION_SCALE, "headroom": {"compute": COMPUTE_HEADROOM, "bandwidth": BANDWIDTH_HEADROOM},
                        "note": "calibrated by solbench on first use on this CPU (best of two quick measurements); the spec's rates are the "
                                "measured ones times the headroom, so that T_SOL stays a lower bound; delete the file to measure again"}
    try:
        write_text_safely(path, yaml.safe_dump(spec.model_dump(mode="json"), sort_keys=False))
    except SpecError:  # saved meanwhile by a concurrent run
        return load_hardware_file(path)
    return load_hardware_file(path)


def run_hardware(hardware: str | None, device: str, folder: Path | None = None) -> tuple[str | None, HardwareSpec | None, str | None]:
    """The spec that prices T_SOL for a run on `device`: (what EvalOptions.hardware takes, the spec, a
    note). The one named (--hardware or $SOLBENCH_HARDWARE), else the GPU's datasheet entry, else on a
    CPU the cached calibrated spec (calibrated now on first use). A name that is unknown is a SpecError."""
    from solbench.sol.calibrate import spec_for_run

    if hardware or device.startswith("cuda"):
        spec = spec_for_run(hardware, device)
        return hardware or (spec.name if spec else None), spec, None
    spec, note = cached_cpu_spec(folder)
    return (str(cpu_spec_path(folder)) if spec is not None else None), spec, note
