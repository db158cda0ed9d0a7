"""Inputs synthesized in place of absent safetensors blobs (--synthesize-missing-blobs): index
pointers and indices valid for the tensors they index, deterministic per seed, fresh per trial."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from solbench.data.inputs import InputGenerationError, generate_inputs
from solbench.data.loaders import load_problems, scan

LAYOUT = Path(__file__).resolve().parents[1] / "fixtures" / "sol_execbench_layout"
PAGED = LAYOUT / "FlashInfer-Bench" / "015_paged_decode_blobs_published_separately"


@pytest.fixture(scope="module")
def paged():
    (problem,) = load_problems([PAGED], synthesize_missing_blobs=True)
    return problem


@pytest.mark.parametrize("index", [0, 1])
@pytest.mark.parametrize("trial", [0, 1, 2])
def test_page_tables_are_valid(paged, index, trial):
    workload = paged.workloads[index]
    axes = paged.axes(workload)
    values = generate_inputs(paged, workload, seed=7, trial=trial)
    indptr, indices, last = values["kv_indptr"], values["kv_indices"], values["kv_last_page_len"]
    assert indptr.dtype is indices.dtype is last.dtype is torch.int32
    assert indptr.shape == (axes["batch_size"] + 1,)
    assert indptr[0].item() == 0 and indptr[-1].item() == axes["num_kv_indices"]  # ends at the indices' length
    segments = torch.diff(indptr)
    assert (segments >= 1).all()  # every request has a page (there are at least as many indices as requests)
    assert indices.min().item() >= 0 and indices.max().item() < axes["num_pages"]  # rows of k_cache / v_cache
    assert indices.unique().numel() == indices.numel()  # distinct pages: the pool is large enough
    assert last.min().item() >= 1 and last.max().item() <= axes["page_size"]


def test_synthesized_inputs_are_deterministic_and_fresh_per_trial(paged):
    workload = paged.workloads[1]
    first = generate_inputs(paged, workload, seed=7, trial=0)
    again = generate_inputs(paged, workload, seed=7, trial=0)
    other = generate_inputs(paged, workload, seed=7, trial=1)
    for name in ("kv_indptr", "kv_indices", "kv_last_page_len"):
        assert torch.equal(first[name], again[name])
    assert not torch.equal(first["kv_indices"], other["kv_indices"])


def test_the_reference_runs_on_synthesized_inputs(paged):
    from solbench.data.reference import reference_module

    values = generate_inputs(paged, paged.workloads[0], seed=3)
    out = reference_module(paged.definition).run(*values.values())
    assert out.shape == (2, 4, 64) and torch.isfinite(out.float()).all()


def test_without_the_flag_generation_names_the_file_and_the_flag():
    (loaded,) = scan(PAGED)
    assert loaded.problem is None  # refused at load time already
    (problem,) = load_problems([PAGED], synthesize_missing_blobs=True)
    problem.synthesize_missing_blobs = False  # a problem loaded with the flag, generated without it
    with pytest.raises(InputGenerationError, match=r"kv_indptr_0.safetensors' does not exist \(--synthesize-missing-blobs"):
        generate_inputs(problem, problem.workloads[0])
