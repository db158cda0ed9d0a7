"""Tensors between processes through memory-mapped files (in /dev/shm where it exists).

A blob is described by plain JSON (path, dtype, shape), never by pickles: a description that came
from the untrusted worker is checked (dtype from an allow-list, path inside the session folder,
size matching the file) before anything is mapped.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# torch dtypes a blob may hold (outputs of a wrong dtype must still be describable, to be judged).
ALLOWED_DTYPES = (
    "float64", "float32", "float16", "bfloat16", "float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz", "float8_e5m2fnuz",
    "float4_e2m1fn_x2", "int64", "int32", "int16", "int8", "uint8", "uint16", "uint32", "uint64", "bool",
    "complex64", "complex128",
)


OWNER_FILE = "owner.pid"


class BlobError(ValueError):
    pass


def _remove_abandoned(base: Path) -> None:
    """Session folders whose owning process is gone (a killed run) take RAM in /dev/shm: remove them."""
    for folder in base.glob("solbench-*"):
        try:
            owner = int((folder / OWNER_FILE).read_text())
            os.kill(owner, 0)
        except ProcessLookupError:
            shutil.rmtree(folder, ignore_errors=True)
        except (OSError, ValueError):
            continue  # no owner file yet, or not ours to judge


@dataclass
class Session:
    """A folder for one evaluation's blobs; removed when closed."""

    root: Path

    @classmethod
    def create(cls) -> Session:
        base = "/dev/shm" if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK) else tempfile.gettempdir()
        _remove_abandoned(Path(base))
        root = Path(tempfile.mkdtemp(prefix="solbench-", dir=base))
        (root / OWNER_FILE).write_text(str(os.getpid()))
        return cls(root)

    def new_path(self, label: str, folder: Path | None = None) -> str:
        """A new blob's path in `folder` (the session folder itself or one of its own; created if missing)."""
        safe = "".join(c if c.isalnum() or c in "-_" else "_" for c in label)[:40]
        folder = folder or self.root
        folder.mkdir(parents=True, exist_ok=True)
        return str(folder / f"{safe}-{uuid.uuid4().hex[:12]}.bin")

    def close(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)


def write_blob(tensor: Any, path: str, digest: bool = False) -> dict[str, Any]:
    """Copy a tensor (any device) into a new file; returns its JSON description, with the sha256 of the
    bytes written when `digest` (see blob_digest)."""
    import torch

    flat = tensor.detach().contiguous()
    if flat.device.type != "cpu":
        flat = flat.cpu()
    nbytes = flat.numel() * flat.element_size()
    if nbytes:
        mapped = torch.from_file(path, shared=True, size=nbytes, dtype=torch.uint8)
        mapped.copy_(flat.reshape(-1).view(torch.uint8))
    else:  # torch.from_file creates no file for zero bytes; an empty output still crosses as an empty file
        open(path, "wb").close()
    described = {"path": path, "dtype": str(flat.dtype).removeprefix("torch."), "shape": list(flat.shape), "nbytes": nbytes}
    if digest:
        described["sha256"] = blob_digest(flat)
    return described


def blob_digest(tensor: Any) -> str:
    """The sha256 of a contiguous CPU tensor's bytes. A file in the session folder can be rewritten by any
    process that writes there (a submitted solution's worker, or a thread or child it left running) between
    its writer's answer and our read; the digest, sent over the writer's own channel, shows such a change."""
    import hashlib

    import torch

    return hashlib.sha256(tensor.reshape(-1).view(torch.uint8).numpy().data).hexdigest()


def read_blob(description: Any, folder: Path | None = None) -> Any:
    """Map a described blob as a CPU tensor (no copy). Checks the description first (its path must lie
    directly in `folder`, where given)."""
    import torch

    if not isinstance(description, dict):
        raise BlobError(f"a blob description must be an object, got {type(description).__name__}")
    dtype_name, shape, path, nbytes = (description.get(k) for k in ("dtype", "shape", "path", "nbytes"))
    if dtype_name not in ALLOWED_DTYPES:
        raise BlobError(f"blob dtype {dtype_name!r} is not allowed")
    if not isinstance(shape, list) or not all(isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in shape):
        raise BlobError(f"blob shape {shape!r} is not a list of sizes")
    if not isinstance(path, str) or (folder is not None and Path(path).resolve().parent != folder.resolve()):
        raise BlobError(f"blob path {path!r} is outside its writer's folder {folder}")
    dtype = getattr(torch, dtype_name)
    element = torch.empty((), dtype=dtype).element_size()
    count = 1
    for size in shape:
        count *= size
    expected = count * element
    if nbytes != expected or os.path.getsize(path) != expected:
        raise BlobError(f"blob {path} holds {os.path.getsize(path)} bytes, its description needs {expected}")
    if expected == 0:
        return torch.empty(shape, dtype=dtype)
    raw = torch.from_file(path, shared=False, size=expected, dtype=torch.uint8)
    return raw.view(dtype).reshape(shape)
