"""Outputs loaded from the workers' blobs: a reference blob is checked against the sha256 its writer sent."""

from __future__ import annotations

import pytest
import torch

from solbench.bench.shm import BlobError, Session, write_blob
from solbench.bench.transfer import load_output


@pytest.fixture
def session():
    session = Session.create()
    yield session
    session.close()


def test_a_reference_blob_rewritten_after_its_writer_described_it_is_refused(session: Session):
    expected = torch.arange(12, dtype=torch.bfloat16).reshape(3, 4)
    described = write_blob(expected, session.new_path("ref-y"), digest=True)
    assert len(described["sha256"]) == 64
    assert torch.equal(load_output(described, session.root, "cpu", trusted=True, digest=True), expected)
    with open(described["path"], "r+b") as blob:  # what a thread the solution left running does between the answer and the read
        blob.write(bytes(described["nbytes"]))
    with pytest.raises(BlobError, match="changed after its writer described it"):
        load_output(described, session.root, "cpu", trusted=True, digest=True)
    assert torch.count_nonzero(load_output(described, session.root, "cpu", trusted=True)) == 0  # unchecked, the zeros would be read


def test_a_blob_without_its_digest_is_refused_where_one_is_required(session: Session):
    described = write_blob(torch.ones(5), session.new_path("ref-y"))
    assert "sha256" not in described
    with pytest.raises(BlobError):
        load_output(described, session.root, "cpu", trusted=True, digest=True)
    empty = write_blob(torch.ones(0), session.new_path("ref-e"), digest=True)
    assert load_output(empty, session.root, "cpu", trusted=True, digest=True).numel() == 0
