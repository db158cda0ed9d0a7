"""Outputs as the orchestrator receives them: described by a worker, loaded here as our own tensors."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from solbench.bench.ipc import import_cuda
from solbench.bench.shm import BlobError, blob_digest, read_blob


class Unsupported:
    """An output of a type that cannot cross (the comparison reports it as a wrong output)."""

    def __init__(self, type_name: str):
        self.type_name = type_name

    def __repr__(self) -> str:
        return f"<{self.type_name}>"


def load_output(description: Any, folder: Path, device: str, trusted: bool = False, digest: bool = False) -> Any:
    """An output as a tensor on the evaluation's device (comparisons of large outputs are much
    faster there), whichever way it crossed from the worker: our own copy, unless it comes from the
    (trusted) reference worker by CUDA IPC, which keeps it unchanged until we release it. A blob must
    lie in `folder`, the one its writer writes (the session folder, or a submitted solution's own folder).
    digest: a blob must carry the sha256 of what its (trusted) writer wrote, and our copy must have it
    (BlobError otherwise: the file changed after it was written)."""
    if isinstance(description, dict) and "scalar" in description:
        return description["scalar"]
    if isinstance(description, dict) and "cuda_ipc" in description:
        tensor = import_cuda(description)
        return tensor if trusted else tensor.clone()  # our own copy: the solution's process cannot change it under us
    if isinstance(description, dict) and "unsupported" in description:
        return Unsupported(description["unsupported"])
    if not digest:
        return read_blob(description, folder).to(device, copy=True)  # our own copy: the solution worker can write its folder
    copy = read_blob(description, folder).clone()  # read once: the digest is of what we compare
    if description.get("sha256") != blob_digest(copy):
        raise BlobError(f"the blob {description.get('path')} changed after its writer described it (its sha256 differs)")
    return copy.to(device)
