"""Where the counter cannot be read, open_counter says why in one line (the CI path: no NVIDIA driver)."""

from __future__ import annotations

import pytest
import torch

from solbench.energy import counter


@pytest.mark.skipif(torch.cuda.is_available(), reason="a GPU machine has a driver: NVML starts there")
def test_without_a_driver_nvml_is_not_available():
    found, note = counter._open("cuda:0")
    assert found is None
    if counter.pynvml is None:
        assert note == "energy not measured: nvidia-ml-py is not installed (pip install 'solbench[energy]')"
    else:  # nvmlInit raises NVMLError_LibraryNotFound without the driver's library
        assert note.startswith("energy not measured: NVML is not available here (NVMLError")
    assert "\n" not in note


def test_a_cpu_evaluation_has_no_gpu_counter():
    found, note = counter.open_counter("cpu")
    assert found is None and note.startswith("energy not measured: ") and "\n" not in note
    assert counter.open_counter("cpu") == (found, note)  # cached per device


def test_nvml_is_installed_for_the_tests():
    """CI installs the `energy` extra, so the path above is NVML's own failure, not a missing package."""
    assert counter.pynvml is not None


def test_the_worker_has_pynvml_before_any_solution_code_and_the_integrity_snapshot_watches_it():
    import sys

    import solbench.bench.worker  # noqa: F401 - imports solbench.energy.counter, and with it pynvml
    from solbench.bench.integrity import WATCHED_MODULES, Snapshot

    assert "pynvml" in sys.modules and "pynvml" in WATCHED_MODULES
    snapshot = Snapshot()
    assert ("pynvml", "nvmlDeviceGetTotalEnergyConsumption") in snapshot.entries
    counter._open("cuda:0")  # NVML's own initialisation (it fails here) rebinds nothing the snapshot holds
    assert snapshot.changes() == []
