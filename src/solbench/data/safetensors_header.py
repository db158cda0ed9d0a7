"""Read a safetensors file's header (names, dtypes, shapes) without loading any tensor."""

from __future__ import annotations

import json
import struct
from pathlib import Path

from solbench.data.dtypes import DType

# safetensors dtype codes -> ours. fp4 is F4 with its logical shape (safetensors' own writer), or
# U8 holding two values per byte with the last dimension halved.
SAFETENSORS_DTYPES = {
    "F64": DType.float64,
    "F32": DType.float32,
    "F16": DType.float16,
    "BF16": DType.bfloat16,
    "F8_E4M3": DType.float8_e4m3fn,
    "F8_E5M2": DType.float8_e5m2,
    "F4": DType.float4_e2m1,
    "I64": DType.int64,
    "I32": DType.int32,
    "I16": DType.int16,
    "I8": DType.int8,
    "U8": DType.uint8,
    "BOOL": DType.bool,
}
MAX_HEADER_BYTES = 100 * 1024 * 1024


def read_header(path: Path) -> dict[str, tuple[DType | str, tuple[int, ...]]]:
    """Tensor key -> (dtype, shape). Raises OSError or ValueError on an unreadable file."""
    size = path.stat().st_size
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
