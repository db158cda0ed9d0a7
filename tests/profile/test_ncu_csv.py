"""Nsight Compute's raw CSV page (`--csv --page raw`), written here by hand in its layout: a header row, a
units row, one row per kernel, with ncu's and the program's own lines around it."""

from __future__ import annotations

import pytest

from solbench.profile import metrics as m
from solbench.profile.ncu_csv import NcuOutputError, parse_number, parse_raw_page

LAUNCH = ['"ID"', '"Process ID"', '"Process Name"', '"Host Name"', '"Kernel Name"', '"Context"', '"Stream"', '"Block Size"', '"Grid Size"',
          '"Device"', '"CC"']
METRIC_COLUMNS = [m.DRAM_READ, m.DRAM_WRITE, m.DURATION, m.L2_BYTES, m.DRAM_THROUGHPUT, m.TENSOR_GMMA, m.TENSOR_HMMA, m.FMA_PIPE, m.OCCUPANCY,
                  m.REGISTERS, m.GRID, m.BLOCK, m.SM_THROUGHPUT]


def row(*cells: str) -> str:
    return ",".join(f'"{cell}"' for cell in cells)


def page(units: list[str], kernels: list[list[str]]) -> str:
    header = ",".join(LAUNCH + [f'"{name}"' for name in METRIC_COLUMNS])
    lines = [header, row(*([""] * len(LAUNCH)), *units)]
    for index, values in enumerate(kernels):
        name = f"void scale_kernel<float>(const float *, float *, int) [{index}]"
        lines.append(row(str(index), "4242", "python3.12", "127.0.0.1", name, "1", "7", "(256, 1, 1)", "(4096, 1, 1)", "0", "9.0", *values))
    return "\n".join(lines)


BASE_UNITS = ["byte", "byte", "nsecond", "byte", "%", "%", "%", "%", "%", "register/thread", "", "", "%"]
TWO_KERNELS = [
    ["33,554,432", "33,554,432", "14,816", "67,200,000", "91.45", "0", "0", "12.5", "85.2", "16", "4,096", "256", "20.1"],
    ["1,024", "n/a", "2,048", "4,096", "1.2", "n/a", "0", "0.5", "10", "32", "1", "128", "0.4"],
]
AROUND = ("==WARNING== Note: Running with unmodified GPU clocks.\n==PROF== Connected to process 4242 (/usr/bin/python3.12)\n"
          'program output: "ID","a fake header printed by the program before the page"\n'
          "==PROF== Profiling \"scale_kernel\" - 0: 0%....50%....100% - 9 passes\n==PROF== Disconnected from process 4242\n")


def test_a_page_is_read_per_kernel_in_base_units():
    records = parse_raw_page(AROUND + page(BASE_UNITS, TWO_KERNELS) + "\n")
    assert [r.index for r in records] == [0, 1]
    first, second = records
    assert first.name.startswith("void scale_kernel<float>")
    assert first.value(m.DRAM_READ) == 33_554_432 and first.value(m.DRAM_WRITE) == 33_554_432
    assert first.value(m.DURATION) == pytest.approx(14_816e-9)  # seconds
    assert first.value(m.L2_BYTES) == 67_200_000 and first.value(m.GRID) == 4096 and first.value(m.REGISTERS) == 16
    assert first.value(m.DRAM_THROUGHPUT) == pytest.approx(91.45)
    assert first.columns["Block Size"] == "(256, 1, 1)" and first.columns["Stream"] == "7"
    assert second.value(m.DRAM_WRITE) is None and second.value(m.TENSOR_GMMA) is None  # n/a is kept as unknown, never 0
    assert second.value(m.TENSOR_HMMA) == 0.0


def test_scaled_units_are_converted_and_the_last_page_counts():
    units = ["Mbyte", "Kbyte", "usecond", "Gbyte", "%", "%", "%", "%", "%", "", "", "", "%"]
    kernels = [["33.55", "1,024", "14.816", "0.0672", "91", "0", "0", "1", "2", "16", "4096", "256", "3"]]
    stale = page(BASE_UNITS, TWO_KERNELS)
    records = parse_raw_page(stale + "\n==PROF== again\n" + page(units, kernels))
    assert len(records) == 1
    record = records[0]
    assert record.value(m.DRAM_READ) == pytest.approx(33.55e6) and record.value(m.DRAM_WRITE) == pytest.approx(1.024e6)
    assert record.value(m.DURATION) == pytest.approx(14.816e-6) and record.value(m.L2_BYTES) == pytest.approx(67.2e6)


def test_only_the_metrics_asked_for_are_read():
    records = parse_raw_page(page(BASE_UNITS, TWO_KERNELS), metrics=(m.DURATION,))
    assert set(records[0].metrics) == {m.DURATION}


def test_a_page_without_a_units_row_and_a_metric_not_printed():
    header = ",".join(LAUNCH + [f'"{m.DURATION}"'])
    text = header + "\n" + row("0", "1", "p", "h", "k", "1", "7", "(1, 1, 1)", "(1, 1, 1)", "0", "9.0", "1,500") + "\n"
    (record,) = parse_raw_page(text, metrics=m.METRICS)
    assert record.value(m.DURATION) == 1500.0  # no unit: as printed
    assert record.value(m.DRAM_READ) is None


def test_output_without_a_page_is_one_line_with_ncus_error():
    text = "==PROF== Connected to process 1\n==ERROR== Failed to find metric sm__nonsense.sum\n==PROF== Disconnected from process 1\n"
    with pytest.raises(NcuOutputError) as caught:
        parse_raw_page(text)
    assert "no result page" in str(caught.value) and "sm__nonsense" in str(caught.value) and "\n" not in str(caught.value)


def test_no_kernel_profiled_is_an_empty_list():
    header = ",".join(LAUNCH + [f'"{name}"' for name in METRIC_COLUMNS])
    assert parse_raw_page(header + "\n" + row(*([""] * len(LAUNCH)), *BASE_UNITS) + "\n") == []


@pytest.mark.parametrize("text, value", [("1,234", 1234.0), ("12.5", 12.5), ("3e+06", 3e6), ("0", 0.0), ("-1,000.25", -1000.25),
                                         ("n/a", None), ("", None), ("(256, 1, 1)", None), ("1,23", None)])
def test_numbers_as_ncu_prints_them(text, value):
    assert parse_number(text) == value


def test_the_ncu_command_line():
    argv = m.ncu_argv(__import__("pathlib").Path("/usr/local/cuda/bin/ncu"), __import__("pathlib").Path("/s/ncu.csv"))
    assert argv[:3] == ["/usr/local/cuda/bin/ncu", "--clock-control", "none"]
    assert argv[argv.index("--nvtx-include") + 1] == m.RANGE + "/"
    assert argv[argv.index("--metrics") + 1].split(",") == list(m.METRICS)
    assert argv[argv.index("--page") + 1] == "raw" and "--csv" in argv and argv[argv.index("--log-file") + 1] == "/s/ncu.csv"
    assert argv[argv.index("--target-processes") + 1] == "application-only"


def test_wgmma_is_asked_for_from_hopper_on():
    assert m.TENSOR_GMMA in m.metrics_for((9, 0)) and m.TENSOR_GMMA in m.metrics_for((10, 0))
    assert m.TENSOR_GMMA not in m.metrics_for((8, 0)) and m.TENSOR_HMMA in m.metrics_for((8, 0))
