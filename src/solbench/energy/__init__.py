"""Energy: measured joules per call and an energy speed of light (E_SOL).

- `counter.py`: the GPU's cumulative energy counter (NVML `nvmlDeviceGetTotalEnergyConsumption`), or
  the one-line reason it cannot be read here;
- `window.py`: measurement windows aligned to the counter's updates (idle power, a loop of steps);
- `reading.py`: joules per call from the windows (loop less blank), and the orchestrator's
  cross-check of what the worker reported;
- `figures.py`: the energy figures of a hardware spec (per-byte, per-op, static power, fit residuals);
- `bound.py`: E_SOL of a workload from its SOL analysis and those figures;
- `fit.py`: the least-squares fit of the figures to measured joules; `kernels.py` and `calibrate.py`:
  the calibration's kernels and measurements (`solbench hw calibrate --energy`, GPU only);
- `score.py`: the energy score, on the time score's formula;
- `evaluate.py`: what the evaluator's trusted side does with all of it for one workload.

Nothing here is imported by solbench unless energy is asked for (`--energy`), except the spec model.
"""
