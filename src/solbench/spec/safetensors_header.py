"""Read a safetensors file's header (names, dtypes, shapes) without loading any tensor."""

from __future__ import annotations

import json
import struct
from functools import lru_cache
from pathlib import Path

from solbench.spec.dtypes import DType

# safetensors dtype codes -> ours. fp4 has no code of its own: it is stored packed in U8.
SAFETENSORS_DTYPES = {
    "F64": DType.float64,
    "F32": DType.float32,
    "F16": DType.float16,
    "BF16": DType.bfloat16,
    "F8_E4M3": DType.float8_e4m3fn,
    "F8_E5M2": DType.float8_e5m2,
    "I64": DType.int64,
    "I32": DType.int32,
    "I16": DType.int16,
    "I8": DType.int8,
    "U8": DType.uint8,
    "BOOL": DType.bool,
}
MAX_HEADER_BYTES = 100 * 1024 * 1024


@lru_cache(maxsize=256)
def _cached_header(path: str, mtime_ns: int, size: int) -> dict[str, tuple[DType | str, tuple[int, ...]]]:
    with open(path, "rb") as handle:
        prefix = handle.read(8)
        if len(prefix) < 8:
            raise ValueError("file is too short to be safetensors")
        (length,) = struct.unpack("<Q", prefix)
        if length > min(MAX_HEADER_BYTES, size - 8):
            raise ValueError(f"header length {length} does not fit the file")
        header = json.loads(handle.read(length))
    tensors = {}
    for key, entry in header.items():
        if key == "__metadata__":
            continue
        tensors[key] = (SAFETENSORS_DTYPES.get(entry["dtype"], entry["dtype"]), tuple(entry["shape"]))
    return tensors


def read_header(path: Path) -> dict[str, tuple[DType | str, tuple[int, ...]]]:
    """Tensor key -> (dtype, shape). Raises OSError or ValueError on an unreadable file."""
    stat = path.stat()
    return _cached_header(str(path), stat.st_mtime_ns, stat.st_size)
